#include "harness/io/corpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/case/case_json.h"
#include "harness/io/json_reader.h"
#include "harness/campaign/replay.h"

namespace sdpa {
namespace {

namespace fs = std::filesystem;

CorpusEntry entry() {
  CorpusEntry e;
  e.target = "aten";
  e.options = {{"guard", "upstream"}};
  e.expect = "unsound-rewrite";
  e.c.q_heads = 2;
  e.c.kv_heads = 1;
  e.c.q_len = 3;
  e.c.kv_len = 5;
  e.c.head_dim = 4;
  e.c.value_dim = 4;
  e.c.data.seed = 99;
  e.finding = {{"verdict", "unsound-rewrite"}};
  return e;
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("sdpacheck_" + name);
  fs::remove_all(d);
  return d;
}

TEST(Corpus, WritesAtomicallyWithASortableNameAndReadsBack) {
  fs::path dir = temp_dir("corpus_write");
  std::string path = write_corpus_entry(dir.string(), entry(), "unsound-rewrite|soundness||");
  std::string name = fs::path(path).filename().string();
  EXPECT_EQ(name.rfind("aten-unsound-rewrite-", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("aten-unsound-rewrite-12345678-12345678.json").size());
  for (const auto& f : fs::directory_iterator(dir / "aten")) EXPECT_NE(f.path().extension(), ".tmp");
  CorpusEntry back = read_corpus_file(path);
  EXPECT_EQ(corpus_to_json(back), corpus_to_json(entry()));
  // Same failure signature, other case: same prefix, other content hash.
  CorpusEntry other = entry();
  other.c.kv_len = 6;
  std::string path2 = write_corpus_entry(dir.string(), other, "unsound-rewrite|soundness||");
  EXPECT_EQ(fs::path(path2).filename().string().substr(0, 30), name.substr(0, 30));
  EXPECT_NE(path2, path);
}

TEST(Corpus, ErrorsNameTheFileAndField) {
  fs::path dir = temp_dir("corpus_errors");
  fs::create_directories(dir);
  auto write = [&](const std::string& file, const nlohmann::json& j) {
    std::ofstream(dir / file) << j.dump();
    return (dir / file).string();
  };
  nlohmann::json good = corpus_to_json(entry());
  nlohmann::json typo = good;
  typo["case"]["kv_head"] = 1;
  std::string p = write("typo.json", typo);
  try {
    read_corpus_file(p);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), p + ": case.kv_head: unknown field");
  }
  nlohmann::json bad_format = good;
  bad_format["format"] = "sdpacheck.case.v2";
  EXPECT_THROW(read_corpus_file(write("format.json", bad_format)), InputError);
  nlohmann::json bad_expect = good;
  bad_expect["expect"] = "passes";
  EXPECT_THROW(read_corpus_file(write("expect.json", bad_expect)), InputError);
  std::ofstream(dir / "broken.json") << "{ not json";
  try {
    read_corpus_file((dir / "broken.json").string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
}

TEST(Corpus, CollectsJsonFilesSortedAndRejectsMissingPaths) {
  fs::path dir = temp_dir("corpus_collect");
  fs::create_directories(dir / "aten");
  std::ofstream(dir / "aten" / "b.json") << "{}";
  std::ofstream(dir / "aten" / "a.json") << "{}";
  std::ofstream(dir / "aten" / "notes.txt") << "";
  auto files = collect_corpus_files({dir.string()});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_LT(files[0], files[1]);
  EXPECT_THROW(collect_corpus_files({(dir / "missing").string()}), InputError);
}

}  // namespace
}  // namespace sdpa
