// explain and replay on the real corpus: explain's headline states the
// finding each file records (verdict, kernel set, diverging node), and
// replay reports a file whose recorded finding the run does not show.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "harness/campaign/explain.h"
#include "harness/campaign/replay.h"
#include "harness/io/json_reader.h"
#include "oracles/dual_oracle.h"

namespace sdpa {
namespace {

using Fixture = TargetFixture;

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

std::string source_dir() {
  const char* dir = std::getenv("SDPACHECK_SOURCE_DIR");
  return dir ? dir : SDPACHECK_SOURCE_DIR_DEFAULT;
}

// The value after `prefix` on the first line that starts with it, up to
// `end` (or the line's end); none when no line starts with it.
std::optional<std::string> line_value(const std::string& text, const std::string& prefix,
                                      const std::string& end = "") {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::string v = line.substr(prefix.size());
    return end.empty() ? v : v.substr(0, v.find(end));
  }
  return std::nullopt;
}

// What the headline says, read back from explain's text.
struct Headline {
  std::string verdict;                    // "verdict: V (expect E)"
  std::optional<std::string> kernel_set;  // "finding: ... on kernel set K, run ..." ("" for the exact kernels)
  std::optional<std::string> node;        // "diverging node: N"
};

Headline read_headline(const std::string& text) {
  Headline h;
  h.verdict = line_value(text, "verdict: ", " ").value_or("");
  if (auto f = line_value(text, "finding: ")) {
    auto at = f->find(" on kernel set ");
    if (at != std::string::npos) h.kernel_set = f->substr(at + 15, f->find(", run ", at) - at - 15);
    else if (f->find(" on the exact kernels, run ") != std::string::npos) h.kernel_set = "";
  }
  h.node = line_value(text, "diverging node: ");
  return h;
}

std::vector<std::string> corpus_files() {
  return collect_corpus_files({source_dir() + "/corpus"});
}

TEST(ExplainCorpus, HeadlineStatesTheRecordedFindingOfEveryCorpusFile) {
  auto files = corpus_files();
  ASSERT_GT(files.size(), 30u);
  for (const auto& file : files) {
    CorpusEntry e = read_corpus_file(file);
    const std::string text = explain_entry(e, fixture().registry, *fixture().reference);
    Headline h = read_headline(text);
    const nlohmann::json& f = e.finding;
    SCOPED_TRACE(file + "\n" + text.substr(0, text.find("\n== The call")));
    EXPECT_EQ(h.verdict, e.expect);
    if (f.contains("verdict")) {
      EXPECT_EQ(h.verdict, f["verdict"].get<std::string>());
    }
    if (f.contains("check")) {  // a finding: its kernel set, "" for the exact run
      ASSERT_TRUE(h.kernel_set.has_value());
      EXPECT_EQ(*h.kernel_set, f.value("kernel_set", ""));
    }
    if (f.contains("first_node")) {
      ASSERT_TRUE(h.node.has_value());
      EXPECT_EQ(*h.node, f["first_node"].get<std::string>());
    }
  }
}

// The example: the finding is the portable kernels'; node by node
// runs those kernels and names their first diverging node, and the
// non-finite output is counted, not skipped.
TEST(ExplainCorpus, NanMismatchOnPortableExplainsThePortableKernels) {
  CorpusEntry e = read_corpus_file(source_dir() + "/corpus/aten/aten-nan-mismatch-e7500ee4-dbb38850.json");
  const std::string text = explain_entry(e, fixture().registry, *fixture().reference);
  EXPECT_EQ(read_headline(text).kernel_set, std::optional<std::string>("portable")) << text;
  EXPECT_NE(text.find("== Node by node: exact against portable"), std::string::npos) << text;
  EXPECT_EQ(line_value(text, "first diverging node on portable: "),
            std::optional<std::string>("%_safe_softmax (aten._safe_softmax.default)")) << text;
  EXPECT_EQ(text.find("agree node by node"), std::string::npos) << text;
  EXPECT_NE(text.find("kernels portable: max |error| inf"), std::string::npos) << text;
}

TEST(ReplayCorpus, AFindingOnAnotherKernelSetIsChanged) {
  CorpusEntry e = read_corpus_file(source_dir() + "/corpus/aten/aten-nan-mismatch-e7500ee4-dbb38850.json");
  EXPECT_EQ(replay_entry(e, fixture().registry, *fixture().reference).status, ReplayStatus::as_expected);
  e.finding["kernel_set"] = "libtorch";
  ReplayOutcome o = replay_entry(e, fixture().registry, *fixture().reference);
  EXPECT_EQ(o.status, ReplayStatus::changed);
  ASSERT_EQ(o.finding_changes.size(), 1u);
  EXPECT_EQ(o.finding_changes[0], "kernel_set: recorded 'libtorch', observed 'portable'");
  e.finding.erase("kernel_set");  // a recorded check without a kernel set: the exact run
  EXPECT_EQ(replay_entry(e, fixture().registry, *fixture().reference).status, ReplayStatus::changed);
  e.finding["kernel_set"] = "portable";
  e.finding["first_node"] = "%mul (aten.mul.Tensor)";
  EXPECT_EQ(replay_entry(e, fixture().registry, *fixture().reference).status, ReplayStatus::changed);
  e.finding["first_node"] = "%_safe_softmax (aten._safe_softmax.default)";
  e.finding["check"] = "soundness";
  EXPECT_EQ(replay_entry(e, fixture().registry, *fixture().reference).status, ReplayStatus::changed);
}

// Fields a file does not record are not compared: a hand-written entry
// with only a verdict replays ok.
TEST(ReplayCorpus, OnlyRecordedFieldsAreCompared) {
  CaseResult r;
  r.verdict = Verdict::unsound_rewrite;
  Finding f;
  f.verdict = Verdict::unsound_rewrite;
  f.check = Check::soundness;
  f.first_node = "%custom_sdpa (llama.custom_sdpa.default)";
  r.findings.push_back(f);
  EXPECT_TRUE(finding_changes({{"verdict", "unsound-rewrite"}}, r).empty());
  EXPECT_TRUE(finding_changes({{"verdict", "unsound-rewrite"}, {"check", "soundness"}}, r).empty());
  EXPECT_EQ(finding_changes({{"verdict", "unsound-rewrite"}, {"check", "accuracy"}}, r).size(), 1u);
  EXPECT_EQ(finding_changes({{"verdict", "crash"}}, r).size(), 1u);
  EXPECT_EQ(finding_changes({{"check", "soundness"}, {"kernel_set", "custom_ops"}}, r).size(), 1u);
}

}  // namespace
}  // namespace sdpa
