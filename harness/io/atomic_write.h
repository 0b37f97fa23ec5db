#pragma once
/// Output files (corpus entries, reports) appear whole or not at all: a
/// killed run or a reader (CI, a browser refreshing the page) never sees a
/// half-written file.
#include <string>

namespace sdpa {

/// Writes `content` to path.tmp, then renames it to `path`; creates the
/// parent folders. Throws InputError naming the path when it cannot.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace sdpa
