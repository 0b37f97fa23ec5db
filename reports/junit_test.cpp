#include "reports/junit.h"

#include <gtest/gtest.h>

#include <regex>

namespace sdpa {
namespace {

WrittenFinding finding(Verdict v, Check c, const std::string& file) {
  WrittenFinding w;
  w.verdict = verdict_name(v);
  w.check = check_name(c);
  w.file = file;
  w.summary = "f32 bhsd B[2] Hq4/Hkv2 Lq3 Lkv5";
  w.finding.verdict = v;
  w.finding.check = c;
  w.finding.detail = "output[0, 1, 2, 3] = 0.5, golden 0.25";
  w.finding.error = 0.25;
  w.finding.bound = 1e-9;
  w.finding.error_ulps = 4.2e6;
  w.finding.first_node = "rewrite of %sdpa (aten.scaled_dot_product_attention.default)";
  w.finding.violated_assumptions = {"s0 == 4 (mask-shape)"};
  w.finding.failure_class = "causal-lengths";
  return w;
}

TargetRun target_run(const std::string& name) {
  TargetRun r;
  r.target = name;
  r.options = {{"mutant", "drop-scale"}};
  r.cases = 300;
  r.verdicts = {{"pass", 280}, {"unsound-rewrite", 20}};
  r.seconds = 1.2344;
  return r;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string attribute(const std::string& xml, const std::string& element, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(xml, m, std::regex("<" + element + " [^>]*" + name + "=\"([^\"]*)\""))) return "";
  return m[1];
}

TEST(Junit, OneTestcasePerCheckAndConsistentCounts) {
  TargetRun a = target_run("aten"), b = target_run("llm");
  a.findings.push_back(finding(Verdict::unsound_rewrite, Check::soundness, "corpus/aten/x.json"));
  a.findings.push_back(finding(Verdict::inaccurate_kernel, Check::accuracy, "corpus/aten/y.json"));
  b.seconds = 2.0;
  std::string xml = junit_xml(RunSettings{}, {a, b});
  EXPECT_EQ(count(xml, "<testsuite "), 2);
  EXPECT_EQ(count(xml, "<testcase "), 14);
  EXPECT_EQ(count(xml, "<failure "), 2);
  EXPECT_EQ(attribute(xml, "testsuites", "tests"), "14");
  EXPECT_EQ(attribute(xml, "testsuites", "failures"), "2");
  EXPECT_EQ(attribute(xml, "testsuites", "time"), "3.234");
  EXPECT_EQ(attribute(xml, "testsuite", "tests"), "7");
  EXPECT_EQ(attribute(xml, "testsuite", "failures"), "2");
  EXPECT_EQ(attribute(xml, "testsuite", "time"), "1.234");
  for (const char* check : {"oracle", "soundness", "accuracy", "completeness", "invariant", "robustness", "identity"})
    EXPECT_NE(xml.find("<testcase name=\"" + std::string(check) + "\" classname=\"sdpacheck.llm\"/>"),
              std::string::npos)
        << check;
}

TEST(Junit, FailureCarriesTheVerdictBlockAndReplayCommand) {
  TargetRun r = target_run("aten");
  r.findings.push_back(finding(Verdict::unsound_rewrite, Check::soundness, "corpus/aten/aten-unsound.json"));
  std::string xml = junit_xml(RunSettings{}, {r});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(xml, m, std::regex("<testcase name=\"soundness\"[^>]*>\\s*<failure ([^>]*)>([^<]*)</failure>")));
  EXPECT_EQ(m[1].str(), "message=\"unsound-rewrite\" type=\"unsound-rewrite\"");
  const std::string text = m[2];
  for (const char* line : {"verdict: unsound-rewrite\n", "check: soundness\n", "kernel set: exact\n",
                           "case: f32 bhsd B[2] Hq4/Hkv2 Lq3 Lkv5\n", "detail: output[0, 1, 2, 3] = 0.5, golden 0.25\n",
                           "error: error 2.500e-01, bound 1.000e-09", "violated assumptions: s0 == 4 (mask-shape)\n",
                           "failure class: causal-lengths\n", "replay: sdpacheck replay corpus/aten/aten-unsound.json\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  // The node's name is escaped: "%sdpa (aten...)" has no markup, '<' would.
  EXPECT_NE(text.find("first diverging node: rewrite of %sdpa (aten.scaled_dot_product_attention.default)"),
            std::string::npos);
}

TEST(Junit, SaysWhenTheCorpusWasNotWritten) {
  TargetRun r = target_run("aten");
  r.findings.push_back(finding(Verdict::crash, Check::robustness, ""));
  std::string xml = junit_xml(RunSettings{}, {r});
  EXPECT_NE(xml.find("replay: (no replay file: the corpus was not written"), std::string::npos);
  EXPECT_EQ(xml.find("sdpacheck replay \n"), std::string::npos);
}

TEST(Junit, SeveralVerdictsOfOneCheckMostSevereFirst) {
  TargetRun r = target_run("aten");
  r.findings.push_back(finding(Verdict::nan_mismatch, Check::soundness, "a.json"));
  r.findings.push_back(finding(Verdict::unsound_rewrite, Check::soundness, "b.json"));
  std::string xml = junit_xml(RunSettings{}, {r});
  EXPECT_NE(xml.find("<failure message=\"unsound-rewrite, nan-mismatch\" type=\"unsound-rewrite\">"),
            std::string::npos);
  EXPECT_EQ(count(xml, "replay: sdpacheck replay"), 2);
}

TEST(Junit, MissedRewriteIsAWarningInSystemOut) {
  TargetRun r = target_run("llm");
  r.findings.push_back(finding(Verdict::missed_rewrite, Check::completeness, "m.json"));
  std::string xml = junit_xml(RunSettings{}, {r});
  EXPECT_EQ(count(xml, "<failure"), 0);
  EXPECT_EQ(attribute(xml, "testsuites", "failures"), "0");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(xml, m, std::regex("<testcase name=\"completeness\"[^>]*>\\s*<system-out>([^<]*)</system-out>")));
  EXPECT_NE(m[1].str().find("verdict: missed-rewrite"), std::string::npos);
}

TEST(Junit, EscapesMarkupInEveryField) {
  TargetRun r = target_run("a<b");
  r.options = {{"weaken", "x\"y"}};
  WrittenFinding w = finding(Verdict::crash, Check::robustness, "f&g.json");
  w.finding.detail = "Expected <b> & \"c\" \x01";
  r.findings.push_back(w);
  std::string xml = junit_xml(RunSettings{}, {r});
  EXPECT_NE(xml.find("name=\"a&lt;b\""), std::string::npos);
  EXPECT_NE(xml.find("value=\"x&quot;y\""), std::string::npos);
  EXPECT_NE(xml.find("detail: Expected &lt;b&gt; &amp; &quot;c&quot; \\x01"), std::string::npos);
  EXPECT_NE(xml.find("sdpacheck replay f&amp;g.json"), std::string::npos);
  EXPECT_EQ(xml.find("<b>"), std::string::npos);
}

TEST(Junit, IdentityRunSkipsTheChecksThatNeedPasses) {
  RunSettings s;
  s.identity = true;
  std::string xml = junit_xml(s, {target_run("aten")});
  EXPECT_EQ(count(xml, "<skipped "), 4);
  EXPECT_EQ(attribute(xml, "testsuites", "skipped"), "4");
  EXPECT_NE(xml.find("<testcase name=\"identity\" classname=\"sdpacheck.aten\"/>"), std::string::npos);
}

}  // namespace
}  // namespace sdpa
