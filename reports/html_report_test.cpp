#include "reports/html_report.h"

#include <gtest/gtest.h>

#include <regex>

namespace sdpa {
namespace {

struct Campaign {
  std::vector<TargetRun> runs;
  CampaignStats stats{[](const Case&) { return std::vector<std::string>{"Lq=1"}; }};
};

Campaign campaign() {
  Campaign k;
  TargetRun r;
  r.target = "aten";
  r.cases = 2;
  r.verdicts = {{"pass", 1}, {"unsound-rewrite", 1}};
  WrittenFinding w;
  w.verdict = "unsound-rewrite";
  w.check = "soundness";
  w.file = "corpus/aten/x.json";
  w.summary = "f32 bhsd Hq1/Hkv1 Lq1 Lkv1";
  w.finding.detail = "output[0] = 1 <differs>";
  w.finding.bound_inputs = {{"u", 5.96e-08}};
  w.graph_before = "%q = placeholder[]  # <f32[1, 1, 1, 1]>";
  w.graph_after = "%mul = aten.mul.Tensor(%q, 0.5)";
  r.findings.push_back(w);
  k.runs.push_back(r);
  Case c;
  CaseResult pass, unsound;
  pass.accuracy = {{"libtorch", DType::f32, 0.02}};
  pass.decisions.resize(1);
  pass.decisions[0].deciding_rule = "accept";
  unsound.verdict = Verdict::unsound_rewrite;
  k.stats.add("aten", c, pass);
  k.stats.add("aten", c, unsound);
  return k;
}

TEST(HtmlReport, HasEverySectionAndTheStatusScript) {
  Campaign k = campaign();
  std::string page = html_report(RunSettings{}, k.runs, k.stats);
  for (const char* id : {"summary", "verdicts", "error-ratios", "error-lsb", "guard-decisions", "coverage", "findings"})
    EXPECT_NE(page.find("<section id=\"" + std::string(id) + "\">"), std::string::npos) << id;
  EXPECT_NE(page.find("window.onerror"), std::string::npos);
  EXPECT_LT(page.find("window.onerror"), page.find("<h1>"));
  EXPECT_NE(page.find("document.body.dataset.renderStatus = missing.length ?"), std::string::npos);
  EXPECT_EQ(page.rfind("</script>"), page.find("</body>") - 10);  // the status script is the last thing
}

TEST(HtmlReport, PlotsTheErrorInOutputLsbOfAnInt8KernelSet) {
  Campaign k = campaign();
  std::string page = html_report(RunSettings{}, k.runs, k.stats);
  EXPECT_NE(page.find("No kernel set with an int8 output."), std::string::npos);
  CaseResult int8;
  int8.accuracy = {{"cmsis-nn", DType::f32, 0.1, 0.1, 1.5}};
  k.stats.add("aten", Case{}, int8);
  page = html_report(RunSettings{}, k.runs, k.stats);
  const size_t at = page.find("<section id=\"error-lsb\">");
  ASSERT_NE(at, std::string::npos);
  const std::string section = page.substr(at, page.find("</section>", at) - at);
  EXPECT_NE(section.find("f32 \xC2\xB7 cmsis-nn (1)"), std::string::npos) << section;
  EXPECT_NE(section.find("<svg"), std::string::npos);
}

TEST(HtmlReport, SelfContained) {
  Campaign k = campaign();
  std::string page = html_report(RunSettings{}, k.runs, k.stats);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find(" src="), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  // The only URL is the SVG namespace, which is a name and never fetched.
  std::string rest = std::regex_replace(page, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
  EXPECT_EQ(rest.find("http"), std::string::npos);
}

TEST(HtmlReport, FindingWithItsGraphsEscaped) {
  Campaign k = campaign();
  std::string page = html_report(RunSettings{}, k.runs, k.stats);
  EXPECT_NE(page.find("output[0] = 1 &lt;differs&gt;"), std::string::npos);
  EXPECT_NE(page.find("<pre>%q = placeholder[]  # &lt;f32[1, 1, 1, 1]&gt;</pre>"), std::string::npos);
  EXPECT_NE(page.find("<pre>%mul = aten.mul.Tensor(%q, 0.5)</pre>"), std::string::npos);
  EXPECT_NE(page.find("sdpacheck replay corpus/aten/x.json"), std::string::npos);
  EXPECT_NE(page.find("&quot;u&quot;: 5.96e-08"), std::string::npos);
  EXPECT_EQ(page.find("<differs>"), std::string::npos);
}

TEST(HtmlReport, PlotsTheCollectedCounts) {
  Campaign k = campaign();
  std::string page = html_report(RunSettings{}, k.runs, k.stats);
  EXPECT_NE(page.find("f32 \xC2\xB7 libtorch (1)"), std::string::npos);  // one ratio histogram
  EXPECT_NE(page.find("<title>unsound-rewrite: 1</title>"), std::string::npos);  // its verdict bar
  EXPECT_NE(page.find("<title>Lq 1, Lkv 1: 2</title>"), std::string::npos);       // the length heatmap cell
  EXPECT_NE(page.find("<td>Lq=1</td><td class=\"n\">1</td>"), std::string::npos);  // the guard table row
}

TEST(HtmlReport, CoverageShowsTheMasksThatEmptyWholeTilesByPatternAndEdge) {
  Campaign k;
  k.runs.push_back(TargetRun{});
  k.runs.back().target = "llm";
  CampaignStats stats([](const Case&) {
    return std::vector<std::string>{"mask:block-sparse", "empty-tile:64", "empty-tile:block-sparse:1025",
                                    "empty-tile:left-padding:513"};
  });
  stats.add("llm", Case{}, CaseResult{});
  stats.add("llm", Case{}, CaseResult{});
  const std::string page = html_report(RunSettings{}, k.runs, stats);
  const size_t at = page.find("<section id=\"coverage\">");
  ASSERT_NE(at, std::string::npos);
  const std::string section = page.substr(at, page.find("</section>", at) - at);
  EXPECT_NE(section.find("<title>mask:block-sparse: 2</title>"), std::string::npos) << section;
  EXPECT_NE(section.find("<title>mask:left-padding: 0</title>"), std::string::npos) << section;  // a gap shows
  EXPECT_NE(section.find("<th class=\"rule\">Lkv 513</th><th class=\"rule\">Lkv 1025</th>"), std::string::npos)
      << section;
  EXPECT_NE(section.find("<tr><td>block-sparse</td><td class=\"n\"></td><td class=\"n\">2</td></tr>"),
            std::string::npos) << section;
  EXPECT_NE(section.find("<tr><td>left-padding</td><td class=\"n\">2</td><td class=\"n\"></td></tr>"),
            std::string::npos) << section;
}

}  // namespace
}  // namespace sdpa
