#include "harness/io/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTmpMarker = ".tmp.";
constexpr size_t kSuffixLen = 6;  // mkstemp's XXXXXX

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const std::string& content, const std::string& tmp) {
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError("cannot write " + tmp + ": " + errno_text());
    done += static_cast<size_t>(n);
  }
}

// The rename is durable only once the folder's entry is on disk too.
void sync_folder(const fs::path& folder) {
  int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: the file itself is synced
  ::fsync(fd);
  ::close(fd);
}

// Temporaries a killed writer left behind; an hour is far beyond any write,
// so a live writer's file is never taken.
void remove_stale_temporaries(const fs::path& folder) {
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(folder.empty() ? fs::path(".") : folder, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!is_atomic_write_temporary(it->path().filename().string())) continue;
    std::error_code age_ec;
    auto written = fs::last_write_time(it->path(), age_ec);
    if (!age_ec && now - written > std::chrono::hours(1)) fs::remove(it->path(), age_ec);
  }
}

}  // namespace

bool is_atomic_write_temporary(const std::string& name) {
  const size_t at = name.rfind(kTmpMarker);
  return at != std::string::npos && at > 0 && name.size() == at + std::strlen(kTmpMarker) + kSuffixLen;
}

void write_file_atomically(const std::string& path, const std::string& content) {
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) throw InputError("cannot create the folder of " + path + ": " + ec.message());
  std::string pattern = path + kTmpMarker + "XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) throw InputError("cannot create a temporary file beside " + path + ": " + errno_text());
  const std::string tmp(name.data());
  try {
    write_all(fd, content, tmp);
    if (::fsync(fd) != 0) throw InputError("cannot flush " + tmp + " to disk: " + errno_text());
    if (::fchmod(fd, 0644) != 0) throw InputError("cannot set the mode of " + tmp + ": " + errno_text());
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw InputError("cannot rename " + tmp + " to " + path + ": " + why);
  }
  sync_folder(target.parent_path());
  remove_stale_temporaries(target.parent_path());
}

}  // namespace sdpa
