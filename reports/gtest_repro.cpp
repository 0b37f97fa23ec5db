#include "reports/gtest_repro.h"

#include <cctype>
#include <sstream>

namespace sdpa {
namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// `text` fit for one `//` comment line: a control character (a newline in
// a file name would end the comment and leave the rest as code) written as
// its C escape; every other byte as it is.
std::string comment_text(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) {
    if (ch == '\n') out += "\\n";
    else if (ch == '\r') out += "\\r";
    else if (ch == '\t') out += "\\t";
    else if (ch < 0x20 || ch == 0x7f) out += "\\x" + std::string(1, "0123456789abcdef"[ch >> 4]) + "0123456789abcdef"[ch & 15];
    else out += static_cast<char>(ch);
  }
  return out;
}

}  // namespace

std::string gtest_name_for(const std::string& source) {
  std::string stem = base_name(source);
  const size_t ext = stem.rfind(".json");
  if (ext != std::string::npos) stem.erase(ext);
  std::string name;
  bool word_start = true;
  for (unsigned char ch : stem) {
    if (!std::isalnum(ch)) {
      word_start = true;
      continue;
    }
    name += word_start ? static_cast<char>(std::toupper(ch)) : static_cast<char>(ch);
    word_start = false;
  }
  // A C++ identifier cannot start with a digit (nor be empty).
  return name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) ? "Case" + name : name;
}

std::string gtest_repro_source(const CorpusEntry& e, const std::string& source) {
  const std::string file = base_name(source);
  std::ostringstream o;
  o << "// Regression test drafted by `sdpacheck repro " << comment_text(source) << " --gtest` (sdpacheck " << kVersion
    << ").\n"
    << "// Case: " << case_summary(e.c) << "\n"
    << "// Target " << e.target << ", expected verdict " << e.expect << ".\n"
    << "#include <gtest/gtest.h>\n\n"
    << "#include <nlohmann/json.hpp>\n\n"
    << "#include \"backends/all_targets.h\"\n"
    << "#include \"harness/io/corpus.h\"\n"
    << "#include \"harness/campaign/replay.h\"\n"
    << "#include \"oracles/dual_oracle.h\"\n\n"
    << "namespace {\n\n"
    << "// The corpus entry " << comment_text(file) << ". (JSON has no ')' outside strings and\n"
    << "// escapes every '\"' inside them: the raw string's end cannot occur in it.)\n"
    << "constexpr const char* kEntry = R\"sdpacheck_entry(\n"
    << corpus_to_json(e).dump(2) << "\n)sdpacheck_entry\";\n\n"
    << "}  // namespace\n\n"
    << "TEST(CorpusRegression, " << gtest_name_for(source) << ") {\n"
    << "  const sdpa::CorpusEntry entry =\n"
    << "      sdpa::corpus_from_json(nlohmann::json::parse(kEntry), " << nlohmann::json(file).dump()
    << ");\n"
    << "  sdpa::TargetRegistry registry;\n"
    << "  sdpa::register_all_targets(registry);\n"
    << "  const auto reference = sdpa::make_dual_oracle();\n"
    << "  const sdpa::ReplayOutcome outcome = sdpa::replay_entry(entry, registry, *reference);\n"
    << "  EXPECT_EQ(outcome.observed, entry.expect);\n"
    << "}\n";
  return o.str();
}

}  // namespace sdpa
