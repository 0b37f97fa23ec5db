#pragma once
/// Output files (corpus entries, reports) appear whole or not at all: a
/// killed run or a reader (CI, a browser refreshing the page) never sees a
/// half-written file, and two writers of one path (same-seed campaigns
/// sharing a corpus folder) never see each other's temporary file.
#include <string>

namespace sdpa {

/// Writes `content` to a temporary file of a unique name beside `path`
/// (PATH.tmp.XXXXXX), flushes it to disk (fsync), renames it to `path` and
/// syncs the folder; creates the parent folders. Temporary files of this
/// naming left in the folder by a killed writer more than an hour ago are
/// removed. Throws InputError naming the path when it cannot write.
void write_file_atomically(const std::string& path, const std::string& content);

/// Whether `name` is a temporary file name write_file_atomically makes.
bool is_atomic_write_temporary(const std::string& name);

}  // namespace sdpa
