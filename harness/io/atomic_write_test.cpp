// write_file_atomically: concurrent writers of one path never collide, a
// reader sees one whole content, and stale temporaries are removed.
#include "harness/io/atomic_write.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("sdpacheck_atomic_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Two writers of one path, as two same-seed campaigns sharing a corpus
// folder: every write succeeds and the file is always one whole content.
TEST(AtomicWrite, ConcurrentWritersOfOnePathNeverCollide) {
  fs::path dir = fresh_dir("concurrent");
  const std::string path = (dir / "entry.json").string();
  const std::string a(100000, 'a'), b(50000, 'b');
  auto writer = [&](const std::string& content, int& errors) {
    for (int i = 0; i < 200; ++i) try {
        write_file_atomically(path, content);
      } catch (const InputError&) {
        ++errors;
      }
  };
  int errors_a = 0, errors_b = 0;
  std::thread ta(writer, std::cref(a), std::ref(errors_a)), tb(writer, std::cref(b), std::ref(errors_b));
  for (int i = 0; i < 200; ++i) {
    const std::string now = read(path);
    if (!now.empty()) EXPECT_TRUE(now == a || now == b) << "a torn file of " << now.size() << " bytes";
  }
  ta.join();
  tb.join();
  EXPECT_EQ(errors_a + errors_b, 0);
  int files = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_FALSE(is_atomic_write_temporary(f.path().filename().string())) << f.path();
  }
  EXPECT_EQ(files, 1);
}

TEST(AtomicWrite, RemovesOnlyStaleTemporaries) {
  fs::path dir = fresh_dir("stale");
  const fs::path stale = dir / "old.json.tmp.Ab12Cd", fresh = dir / "new.json.tmp.Ef34Gh",
                 other = dir / "notes.tmp.txt";
  for (const auto& p : {stale, fresh, other}) std::ofstream(p) << "x";
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(2));
  fs::last_write_time(other, fs::file_time_type::clock::now() - std::chrono::hours(2));
  write_file_atomically((dir / "run.json").string(), "{}");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));  // a live writer's file
  EXPECT_TRUE(fs::exists(other));  // not a name this writer makes
  EXPECT_EQ(read(dir / "run.json"), "{}");
}

TEST(AtomicWrite, ErrorNamesThePath) {
  fs::path dir = fresh_dir("error");
  fs::create_directories(dir / "taken");  // a folder where the file should go
  try {
    write_file_atomically((dir / "taken").string(), "x");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "taken").string()), std::string::npos) << e.what();
  }
  for (const auto& f : fs::directory_iterator(dir))
    EXPECT_FALSE(is_atomic_write_temporary(f.path().filename().string())) << f.path();
}

}  // namespace
}  // namespace sdpa
