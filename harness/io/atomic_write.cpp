#include "harness/io/atomic_write.h"

#include <filesystem>
#include <fstream>

#include "harness/io/json_reader.h"

namespace sdpa {

void write_file_atomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path tmp = target;
  tmp += ".tmp";
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) throw InputError("cannot create the folder of " + path + ": " + ec.message());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << content;
    if (!out.flush()) throw InputError("cannot write " + tmp.string());
  }
  fs::rename(tmp, target, ec);
  if (ec) throw InputError("cannot rename " + tmp.string() + " to " + path + ": " + ec.message());
}

}  // namespace sdpa
