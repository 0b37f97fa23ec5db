// The llm pass ported to Python on torch.fx (examples/adapters/llm_guards.py)
// and run through the adapter protocol (`pass=adapter:...`): on the same
// seed a campaign finds what the C++ model finds, decision by decision and
// finding by finding, under both guard policies; a Python guard with one
// rule weakened (its --weaken flag) is caught and shrunk through the
// adapter, as the model with that rule weakened is. Either side wrong
// makes the two differ: the comparison checks the port and the model.
#include <unistd.h>

#include <gtest/gtest.h>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "generators/case_gen.h"
#include "harness/adapter/adapter_protocol.h"
#include "harness/campaign/campaign.h"
#include "harness/case/case_json.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::llm {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

using Fixture = TargetFixture;

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

// Debian's python3-torch: the port needs torch.fx.
bool have_torch_fx() {
  return access(kPython, X_OK) == 0 &&
         std::system((std::string(kPython) + " -c 'import torch.fx' >/dev/null 2>&1").c_str()) == 0;
}

std::string port(const std::string& flags = "") {
  const char* src = std::getenv("SDPACHECK_SOURCE_DIR");
  return std::string("adapter:") + kPython + " " + (src ? src : ".") + "/examples/adapters/llm_guards.py" +
         (flags.empty() ? "" : " " + flags);
}

struct Observed {
  TargetRun run;
  std::vector<std::string> decisions;  // every generated case's decisions, in order
};

Observed campaign(const Options& options, int64_t cases, bool isolate) {
  auto target = fixture().registry.make("llm", options);
  CampaignOptions o;
  o.seed = 20261208;
  o.cases = cases;
  o.max_shrink_steps = 60;
  o.isolate = isolate;
  o.jobs = isolate ? 2 : 1;
  o.limits = {60, 0};
  Observed out;
  o.on_case = [&](const Case&, const CaseResult& r) {
    std::string d;
    for (const auto& x : r.decisions)
      d += decision_to_json(x).dump() + (x.forced ? " forced" : "") + " " + x.pass + (x.sound_alone ? " sound" : "") + "\n";
    out.decisions.push_back(d);
  };
  CaseGeneratorFactory generators = [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); };
  out.run = run_target_campaign(*target, *fixture().reference, generators, o);
  return out;
}

void expect_same(const Observed& model, const Observed& port) {
  const TargetRun &a = model.run, &b = port.run;
  EXPECT_EQ(a.cases, b.cases);
  EXPECT_EQ(a.verdicts, b.verdicts);
  EXPECT_EQ(a.guard_rules, b.guard_rules);
  EXPECT_EQ(a.missed_rules, b.missed_rules);
  EXPECT_EQ(a.duplicates, b.duplicates);
  ASSERT_EQ(model.decisions.size(), port.decisions.size());
  for (size_t i = 0; i < model.decisions.size(); ++i) ASSERT_EQ(model.decisions[i], port.decisions[i]) << "case " << i;
  ASSERT_EQ(a.findings.size(), b.findings.size()) << run_summary_text({a}) << run_summary_text({b});
  for (size_t i = 0; i < a.findings.size(); ++i) {
    SCOPED_TRACE(a.findings[i].signature);
    EXPECT_EQ(a.findings[i].signature, b.findings[i].signature);
    EXPECT_EQ(a.findings[i].iteration, b.findings[i].iteration);
    EXPECT_EQ(a.findings[i].shrink_steps, b.findings[i].shrink_steps);
    EXPECT_EQ(case_to_json(a.findings[i].shrunk), case_to_json(b.findings[i].shrunk));
    EXPECT_EQ(finding_to_json(a.findings[i].finding), finding_to_json(b.findings[i].finding));
    EXPECT_EQ(a.findings[i].graph_after, b.findings[i].graph_after);
  }
}

class LlmAdapter : public testing::TestWithParam<std::string> {};

TEST_P(LlmAdapter, ThePythonPortFindsWhatTheModelFinds) {
  if (!have_torch_fx()) GTEST_SKIP() << kPython << " has no torch.fx (Debian: python3-torch)";
  const std::string guard = GetParam();
  Observed model = campaign({{"guard", guard}}, 250, false);
  Observed python = campaign({{"guard", guard}, {"pass", port()}}, 250, guard == "contract");
  expect_same(model, python);
  EXPECT_GT(model.run.verdicts["pass"], 0);
  EXPECT_GT(model.run.verdicts["rejected"] + model.run.verdicts["missed-rewrite"], 0);
  if (guard == "upstream") {
    EXPECT_GE(model.run.findings.size(), 3u) << run_summary_text({model.run});
  }
}

INSTANTIATE_TEST_SUITE_P(Guards, LlmAdapter, testing::Values("upstream", "contract"));

// call_form=keyword: the node passes attn_mask, dropout_p and is_causal by
// keyword. The port reads them as the model does: by position only in the
// upstream pass (which drops them), bound as aten binds them in the contract.
TEST(LlmAdapterKeywordForm, ThePortReadsKeywordArgumentsAsTheModelDoes) {
  if (!have_torch_fx()) GTEST_SKIP() << kPython << " has no torch.fx (Debian: python3-torch)";
  for (const char* guard : {"upstream", "contract"}) {
    SCOPED_TRACE(guard);
    Observed model = campaign({{"guard", guard}, {"call_form", "keyword"}}, 200, false);
    Observed python = campaign({{"guard", guard}, {"call_form", "keyword"}, {"pass", port()}}, 200, false);
    expect_same(model, python);
    EXPECT_EQ(model.run.verdicts["unsound-rewrite"] > 0, std::string(guard) == "upstream");
  }
}

// The Python contract guard without its causal-lengths rule rewrites causal
// calls with Lq > Lkv: custom_sdpa aborts on them. Caught, filed under the
// rule, shrunk, and the same as the model with that rule weakened.
TEST(LlmAdapterWeakened, APythonGuardWithoutARuleIsCaughtAndShrunk) {
  if (!have_torch_fx()) GTEST_SKIP() << kPython << " has no torch.fx (Debian: python3-torch)";
  Observed model = campaign({{"guard", "contract"}, {"weaken", "causal-lengths"}}, 300, false);
  Observed python = campaign({{"guard", "contract"}, {"pass", port("--weaken causal-lengths")}}, 300, false);
  const WrittenFinding* w = nullptr;
  for (const auto& f : python.run.findings)
    if (!w && is_failure(*parse_verdict(f.verdict)) && f.finding.failure_class.find("causal-lengths") != std::string::npos)
      w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({python.run});
  EXPECT_GT(w->shrink_steps, 0);
  ConcreteSizes s = concrete_sizes(w->shrunk, w->shrunk.runs()[0]);
  EXPECT_GT(s.Lq, s.Lkv) << case_summary(w->shrunk);
  EXPECT_LE(std::max({s.Hq, s.Lq, s.Lkv, s.E, s.Ev}), 4) << case_summary(w->shrunk);
  // The model with the rule weakened (which marks it "(rule weakened)" in
  // the rule's detail, as the port does) finds exactly the same.
  expect_same(model, python);
}

}  // namespace
}  // namespace sdpa::llm
