// The flash toy's pass run by an adapter (flash_adapter.py, the standard
// library only) through the real campaign: it finds what the C++ pass
// finds; it starts once per worker and never in the command; each fault
// it injects (exit, signal, hang, malformed lines, wrong graphs, wrong
// decisions, a control not honoured, another protocol version) is a
// finding with the adapter's words, shrunk to the Lq 5 it fires at, and
// the campaign runs and counts every case.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "harness/adapter/adapter_pass.h"
#include "harness/campaign/campaign.h"
#include "harness/campaign/replay.h"
#include "harness/case/case_json.h"
#include "harness/check/toys/toy_flash/adapter_test_util.h"
#include "harness/io/json_reader.h"

namespace sdpa::toy_flash {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";

using test::fixture;
using test::generators;
using test::lines_of;

std::string adapter(const std::string& fault, const std::string& starts_file = "") {
  return test::adapter_command("flash_adapter.py", fault, starts_file);
}

std::string scratch(const std::string& name) { return test::scratch("toy_flash_adapter", name); }

TargetRun campaign(const Options& options, int64_t cases, bool isolate, int jobs = 1) {
  auto target = fixture().registry.make("toy-flash", options);
  CampaignOptions o;
  o.seed = 20261207;
  o.cases = cases;
  o.max_shrink_steps = 60;
  o.isolate = isolate;
  o.jobs = jobs;
  o.limits = {20, 0};  // the adapter's own timeout fires first
  return run_target_campaign(*target, *fixture().reference, generators(), o);
}

void expect_same_run(const TargetRun& a, const TargetRun& b) {
  EXPECT_EQ(a.cases, b.cases);
  EXPECT_EQ(a.verdicts, b.verdicts);
  EXPECT_EQ(a.guard_rules, b.guard_rules);
  EXPECT_EQ(a.missed_rules, b.missed_rules);
  EXPECT_EQ(a.duplicates, b.duplicates);
  ASSERT_EQ(a.findings.size(), b.findings.size());
  for (size_t i = 0; i < a.findings.size(); ++i) {
    EXPECT_EQ(a.findings[i].signature, b.findings[i].signature);
    EXPECT_EQ(a.findings[i].iteration, b.findings[i].iteration);
    EXPECT_EQ(a.findings[i].shrink_steps, b.findings[i].shrink_steps);
    EXPECT_EQ(case_to_json(a.findings[i].shrunk), case_to_json(b.findings[i].shrunk));
    EXPECT_EQ(finding_to_json(a.findings[i].finding), finding_to_json(b.findings[i].finding));
    EXPECT_EQ(a.findings[i].graph_after, b.findings[i].graph_after);
  }
}

// Lq as the adapter sees it: on the export hints.
int64_t lq_on_hints(const Case& c) {
  Assignment a;
  for (const auto& s : c.q_len.symbols()) a[s] = c.symbols.at(s).hint.value_or(0);
  return c.q_len.eval(a);
}

bool have_python() { return access(kPython, X_OK) == 0; }

TEST(ToyFlashAdapter, FindsWhatTheModeledPassFinds) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  for (const std::string guard : {"unguarded", "guarded"}) {
    SCOPED_TRACE(guard);
    TargetRun model = campaign({{"guard", guard}}, 120, false);
    TargetRun in_process = campaign({{"guard", guard}, {"pass", adapter("none")}}, 120, false);
    TargetRun isolated = campaign({{"guard", guard}, {"pass", adapter("none")}}, 120, true, 2);
    expect_same_run(model, in_process);
    expect_same_run(model, isolated);
    EXPECT_GT(model.verdicts[guard == "unguarded" ? "unsound-rewrite" : "rejected"], 0);
  }
}

// Each worker starts its adapter on its first case and keeps it; the
// command, which forks the workers, starts none.
TEST(ToyFlashAdapter, StartsOncePerWorkerAndNeverInTheCommand) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  const std::string dir = scratch("starts");
  const std::string starts = dir + "/starts";
  auto target = fixture().registry.make("toy-flash", {{"guard", "guarded"}, {"pass", adapter("none", starts)}});
  CampaignOptions o;
  o.seed = 20261207;
  o.cases = 80;
  o.isolate = true;
  TargetRun r = run_target_campaign(*target, *fixture().reference, generators(), o);
  EXPECT_EQ(r.cases, 80);
  EXPECT_EQ(r.findings.size(), 0u);  // nothing to shrink: one worker ran every case
  EXPECT_EQ(lines_of(starts), 1);
  const auto* pass = dynamic_cast<const AdapterPass*>(target->passes().at(0));
  ASSERT_NE(pass, nullptr);
  EXPECT_EQ(pass->starts(), 0);
  fs::remove_all(dir);
}

// A corpus file is data (a CI artifact, a bug report): one whose options
// name an adapter is refused, naming the option, and its program starts
// only where the command allows it (--allow-adapters).
TEST(ToyFlashAdapter, ACorpusFileStartsTheAdapterItNamesOnlyWhereAllowed) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  const std::string dir = scratch("corpus_file");
  const std::string starts = dir + "/starts";
  TargetRun found = campaign({{"guard", "unguarded"}}, 60, false);
  ASSERT_FALSE(found.findings.empty());
  CorpusEntry e;
  e.target = "toy-flash";
  e.options = {{"guard", "unguarded"}, {"pass", adapter("none", starts)}};
  e.expect = found.findings[0].verdict;
  e.c = found.findings[0].shrunk;
  const std::string file = write_corpus_entry(dir, e, "adapter-file");
  std::string refused;
  try {
    read_replay_entry(file, fixture().registry);
  } catch (const InputError& err) {
    refused = err.what();
  }
  EXPECT_EQ(refused.rfind(file + ": options.pass: 'adapter:/usr/bin/python3 ", 0), 0u) << refused;
  EXPECT_NE(refused.find("pass --allow-adapters"), std::string::npos) << refused;
  auto quiet = [](const std::string&, const ReplayOutcome*, const std::string&) {};
  ReplayTally t = replay_files({file}, fixture().registry, *fixture().reference, {}, false, quiet);
  EXPECT_EQ(t.invalid, 1);
  EXPECT_FALSE(fs::exists(starts)) << "a refused file started its adapter";
  t = replay_files({file}, fixture().registry, *fixture().reference, {SizeLimits{}, true}, false, quiet);
  EXPECT_EQ(t.invalid, 0);
  EXPECT_EQ(t.as_expected, 1);
  EXPECT_EQ(lines_of(starts), 1);
  fs::remove_all(dir);
}

struct FaultCase {
  std::string fault, verdict, words;
  bool restarts;  // the fault stops the adapter
};

class ToyFlashAdapterFault : public testing::TestWithParam<FaultCase> {};

TEST_P(ToyFlashAdapterFault, IsAFindingShrunkToItsThresholdAndTheCampaignGoesOn) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  const FaultCase& f = GetParam();
  const std::string dir = scratch(f.fault);
  const std::string starts = dir + "/starts";
  const int64_t cases = f.fault == "hang" ? 16 : 30;
  TargetRun r = campaign({{"guard", "guarded"}, {"pass", adapter(f.fault, starts)}, {"adapter_timeout", "0.3"}},
                         cases, true);
  EXPECT_EQ(r.cases, cases);  // every case ran and is counted
  EXPECT_GT(r.verdicts[f.verdict], 0);
  EXPECT_GT(r.verdicts["pass"] + r.verdicts["rejected"] + r.verdicts["missed-rewrite"], 0) << "no case below Lq 5 ran";
  EXPECT_EQ(r.worker_deaths, 0);  // the adapter failed, not the worker
  const WrittenFinding* w = nullptr;
  for (const auto& x : r.findings)
    if (x.verdict == f.verdict) w = &x;
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->finding.detail.find("pass replace-flash-with-sdpa"), std::string::npos) << w->finding.detail;
  EXPECT_NE(w->finding.detail.find(f.words), std::string::npos) << w->finding.detail;
  EXPECT_GT(w->shrink_steps, 0);
  const Case& c = w->shrunk;
  EXPECT_EQ(lq_on_hints(c), 5) << case_to_json(c).dump();  // shrunk to where it fires
  if (f.restarts) {
    EXPECT_GT(lines_of(starts), 2) << "the adapter was not started again after its fault";
  } else {
    EXPECT_LE(lines_of(starts), 2);  // the campaign's worker and the shrinking one
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, ToyFlashAdapterFault,
    testing::Values(
        FaultCase{"exit", "crash", "exited with status 3; its stderr ends: flash_adapter: exiting on a call with Lq >= 5", true},
        FaultCase{"segfault", "crash", "killed by SIGSEGV (Segmentation fault)", true},
        FaultCase{"hang", "timeout", "gave no answer within 0.3 s and was killed", true},
        FaultCase{"garbage", "unexpected-error", "answered a malformed reply: reply: not valid JSON", true},
        FaultCase{"wrong-id", "unexpected-error", "reply.id: the reply to request", true},
        FaultCase{"wrong-graph", "invalid-rewrite", "the graph returned does not verify: graph has no outputs", true},
        FaultCase{"dangling-ref", "invalid-rewrite", "the graph returned does not read: reply.graph.nodes[3].args[0].ref", true},
        FaultCase{"unknown-node", "invalid-rewrite", "%nowhere is not a node of the graph sent", true},
        FaultCase{"ignore-control", "invalid-rewrite", "is unchanged in the graph returned, though the control forced it", true},
        FaultCase{"raise", "unexpected-error", "raised: ValueError: the flash pass refuses Lq >= 5", false}),
    [](const testing::TestParamInfo<FaultCase>& p) {
      std::string n = p.param.fault;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// An adapter of another protocol version fails at its start, every time:
// every case is that finding, and the campaign still runs them all.
TEST(ToyFlashAdapter, AnotherProtocolVersionIsAFindingOnEveryCase) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  TargetRun r = campaign({{"pass", adapter("version")}}, 10, true);
  EXPECT_EQ(r.cases, 10);
  EXPECT_EQ(r.verdicts["unexpected-error"], 10);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_NE(r.findings[0].finding.detail.find("at its start: speaks protocol version 2; this sdpacheck speaks version 1"),
            std::string::npos)
      << r.findings[0].finding.detail;
}

TEST(ToyFlashAdapter, BadOptionValuesNameTheOption) {
  auto error = [](const Options& o) {
    try {
      fixture().registry.make("toy-flash", o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({{"pass", "python3 x.py"}}),
            "option 'pass' of target toy-flash: expected model or adapter:COMMAND, got 'python3 x.py'");
  EXPECT_EQ(error({{"pass", "adapter: "}}), "option 'pass' of target toy-flash: adapter: needs a command (adapter:COMMAND)");
  EXPECT_EQ(error({{"pass", "adapter:no-such-program-here x.py"}}),
            "option 'pass' of target toy-flash: cannot run 'no-such-program-here': no executable file of that name on PATH");
  EXPECT_EQ(error({{"pass", "adapter:/bin/cat"}, {"adapter_timeout", "0"}}),
            "option 'adapter_timeout' of target toy-flash: expected seconds in (0, 86400], got '0'");
}

}  // namespace
}  // namespace sdpa::toy_flash
