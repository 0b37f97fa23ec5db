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

std::string parse_error(const std::string& text) {
  try {
    parse_json_text(text, "f.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonBounds, DeepNestingIsRefusedBeforeTheParserRuns) {
  std::string deep(200000, '[');
  EXPECT_EQ(parse_error(deep + std::string(200000, ']')),
            "f.json: line 1, byte 64: lists and objects nested deeper than 64 levels");
  std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_EQ(parse_error(at_limit), "");
  // Brackets inside strings (escaped quotes included) are not nesting.
  EXPECT_EQ(parse_error("{\"a\": \"\\\"" + std::string(1000, '[') + "\"}"), "");
}

TEST(JsonBounds, LongStringsAreRefused) {
  std::string text = "{\n\"a\": \"" + std::string(kMaxJsonStringBytes + 1, 'x') + "\"}";
  EXPECT_EQ(parse_error(text), "f.json: line 2, byte 7: a string of 65537 bytes, the limit is 65536");
  EXPECT_EQ(parse_error("{\"a\": \"" + std::string(kMaxJsonStringBytes, 'x') + "\"}"), "");
}

TEST(JsonBounds, DuplicateKeysNameTheKeyPath) {
  EXPECT_EQ(parse_error(R"({"case": {"dtype": "f32", "dtype": "f64"}})"), "f.json: case.dtype: duplicate key");
  EXPECT_EQ(parse_error(R"({"r": [{"s0": 1}, [2], {"s0": 2, "s0": 3}]})"), "f.json: r[2].s0: duplicate key");
  // The same key in sibling objects is no duplicate; an escape is decoded first.
  EXPECT_EQ(parse_error(R"({"a": {"k": 1}, "b": {"k": 2}})"), "");
  EXPECT_EQ(parse_error(R"({"dtype": 1, "\u0064type": 2})"), "f.json: dtype: duplicate key");
}

TEST(JsonBounds, NumberOverflowAndSyntaxErrorsNameTheField) {
  EXPECT_EQ(parse_error(R"({"case": {"dropout_p": 1e400}})"),
            "f.json: case.dropout_p: number overflow parsing '1e400'");
  std::string e = parse_error("{\n  \"case\": {\"q_len\": }}");
  EXPECT_NE(e.find("f.json: not valid JSON (line 2, byte 22, in case.q_len)"), std::string::npos) << e;
}

TEST(JsonBounds, IntegersOutsideInt64AreErrors) {
  auto int64_error = [](const std::string& literal) {
    try {
      json_int64(nlohmann::json::parse(literal), "case.head_dim");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(int64_error("18446744073709551608"),
            "case.head_dim: expected an integer in [-2^63, 2^63), got 18446744073709551608");
  EXPECT_NE(int64_error("100000000000000000000").find("expected an integer in [-2^63, 2^63)"), std::string::npos);
  EXPECT_EQ(int64_error("2.5"), "case.head_dim: expected an integer, got a number");
  EXPECT_EQ(int64_error("9223372036854775807"), "");
  EXPECT_EQ(int64_error("-9223372036854775808"), "");
}

TEST(JsonBounds, FilesOverTheSizeLimitAreRefused) {
  fs::path dir = temp_dir("json_large");
  fs::create_directories(dir);
  fs::path big = dir / "big.json";
  {
    std::ofstream out(big);
    out << "[\"" << std::string(kMaxJsonFileBytes, ' ') << "\"]";
  }
  try {
    read_json_file(big.string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), big.string() + ": larger than the limit of 16 MiB for a JSON file");
  }
  fs::remove_all(dir);
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
