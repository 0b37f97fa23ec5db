// The flash toy's attention ops computed by a kernel adapter
// (flash_kernel_adapter.py, the standard library only) through the real
// campaign: the same verdicts and findings as the toy's own kernels, with
// the accuracy bound of the numerics it declares applied to every case; it
// starts once where the target is made (its declaration) and once per
// worker; each fault it injects (exit, signal, hang, malformed lines, an
// output unlike the node's, another declaration at a later start) is a
// finding with the adapter's words, shrunk to the Lq 5 it fires at, and the
// campaign runs and counts every case; its refusals are the verdicts of the
// KernelError kinds they name.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "harness/adapter/kernel_adapter_option.h"
#include "harness/campaign/campaign.h"
#include "harness/case/case_json.h"
#include "harness/check/toys/toy_flash/adapter_test_util.h"
#include "harness/io/json_reader.h"

namespace sdpa::toy_flash {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kFlashOp = "aten._scaled_dot_product_flash_attention.default";

using test::fixture;
using test::generators;
using test::lines_of;

std::string adapter(const std::string& fault, const std::string& starts_file = "") {
  return test::adapter_command("flash_kernel_adapter.py", fault, starts_file);
}

std::string scratch(const std::string& name) { return test::scratch("toy_flash_kernel_adapter", name); }

CampaignOptions campaign_options(int64_t cases, bool isolate) {
  CampaignOptions o;
  o.seed = 20261209;
  o.cases = cases;
  o.max_shrink_steps = 60;
  o.isolate = isolate;
  o.limits = {20, 0};  // the adapter's own timeout fires first
  return o;
}

TargetRun campaign(const Options& options, int64_t cases, bool isolate) {
  auto target = fixture().registry.make("toy-flash", options);
  return run_target_campaign(*target, *fixture().reference, generators(), campaign_options(cases, isolate));
}

int64_t largest_lq(const Case& c) {
  int64_t lq = 0;
  for (const auto& at : c.runs()) lq = std::max(lq, concrete_sizes(c, at).Lq);
  return lq;
}

bool have_python() { return access(kPython, X_OK) == 0; }

TEST(ToyFlashKernelAdapter, FindsWhatTheToysKernelsFindWithTheDeclaredBound) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  for (const std::string guard : {"unguarded", "guarded"}) {
    SCOPED_TRACE(guard);
    TargetRun model = campaign({{"guard", guard}}, 80, false);
    auto target = fixture().registry.make("toy-flash", {{"guard", guard}, {"kernels", adapter("none")}});
    int64_t judged = 0;
    CampaignOptions o = campaign_options(80, false);
    o.on_case = [&](const Case&, const CaseResult& r) {
      for (const auto& a : r.accuracy) {
        EXPECT_EQ(a.kernel_set, "adapter");
        EXPECT_LE(a.ratio, 1.0);
        ++judged;
      }
    };
    TargetRun in_process = run_target_campaign(*target, *fixture().reference, generators(), o);
    TargetRun isolated = campaign({{"guard", guard}, {"kernels", adapter("none")}}, 80, true);
    for (const TargetRun* r : {&in_process, &isolated}) {
      EXPECT_EQ(r->verdicts, model.verdicts);
      ASSERT_EQ(r->findings.size(), model.findings.size());
      for (size_t i = 0; i < model.findings.size(); ++i)
        EXPECT_EQ(r->findings[i].signature, model.findings[i].signature);
    }
    EXPECT_GT(judged, 40);  // the adapter's outputs were held to the bound
    EXPECT_GT(model.verdicts["pass"], 0);
  }
}

// The command starts the adapter once, to read its declaration; each
// worker starts its own on its first kernel call and keeps it.
TEST(ToyFlashKernelAdapter, StartsOnceWhereTheTargetIsMadeAndOncePerWorker) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  const std::string dir = scratch("starts");
  const std::string starts = dir + "/starts";
  auto target = fixture().registry.make("toy-flash", {{"kernels", adapter("none", starts)}});
  EXPECT_EQ(lines_of(starts), 1);
  TargetRun r = run_target_campaign(*target, *fixture().reference, generators(), campaign_options(60, true));
  EXPECT_EQ(r.cases, 60);
  EXPECT_EQ(r.findings.size(), 0u);
  EXPECT_EQ(lines_of(starts), 2);
  const KernelSetInfo info = target->kernel_sets().at(0);
  EXPECT_EQ(info.kernels->name(), "adapter");
  EXPECT_EQ(info.dtypes, (std::vector<DType>{DType::f32}));
  EXPECT_NE(info.description.find("(flash_kernel_adapter.py): 2 of "), std::string::npos) << info.description;
  fs::remove_all(dir);
}

struct FaultCase {
  std::string fault, verdict, words;
  bool restarts;  // the fault stops the adapter
};

class ToyFlashKernelAdapterFault : public testing::TestWithParam<FaultCase> {};

TEST_P(ToyFlashKernelAdapterFault, IsAFindingShrunkToItsThresholdAndTheCampaignGoesOn) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  const FaultCase& f = GetParam();
  const std::string dir = scratch(f.fault);
  const std::string starts = dir + "/starts";
  const int64_t cases = 24;
  // A call of the Python attention on a large case takes tenths of a second
  // on a loaded machine: only the hang is given a short timeout.
  const std::string timeout = f.fault == "hang" ? "1" : "10";
  TargetRun r = campaign({{"kernels", adapter(f.fault, starts)}, {"adapter_timeout", timeout}}, cases, true);
  EXPECT_EQ(r.cases, cases);  // every case ran and is counted
  EXPECT_GT(r.verdicts[f.verdict], 0);
  EXPECT_GT(r.verdicts["pass"] + r.verdicts["rejected"], 0) << "no case below Lq 5 ran";
  EXPECT_EQ(r.worker_deaths, 0);  // the adapter failed, not the worker
  const WrittenFinding* w = nullptr;
  for (const auto& x : r.findings)
    if (x.verdict == f.verdict) w = &x;
  std::string found;
  for (const auto& x : r.findings) found += x.verdict + ": " + x.finding.detail + "\n";
  ASSERT_NE(w, nullptr) << found;
  EXPECT_NE(w->finding.detail.find(f.words), std::string::npos) << w->finding.detail;
  EXPECT_EQ(w->finding.kernel_set, "adapter");
  EXPECT_GT(w->shrink_steps, 0);
  EXPECT_EQ(largest_lq(w->shrunk), 5) << case_to_json(w->shrunk).dump();  // shrunk to where it fires
  // The declaration read where the target was made, the campaign's worker,
  // the shrinking one: more only when a fault stopped the adapter.
  if (f.restarts) {
    EXPECT_GT(lines_of(starts), 3) << "the adapter was not started again after its fault";
  } else {
    EXPECT_LE(lines_of(starts), 3);
  }
  fs::remove_all(dir);
}

const char* kAt = "kernel set adapter: %";

INSTANTIATE_TEST_SUITE_P(
    Faults, ToyFlashKernelAdapterFault,
    testing::Values(
        FaultCase{"exit", "crash", "exited with status 3; its stderr ends: flash_kernel_adapter: exiting on a call", true},
        FaultCase{"segfault", "crash", "killed by SIGSEGV (Segmentation fault)", true},
        FaultCase{"hang", "timeout", "gave no answer within 1 s and was killed", true},
        FaultCase{"garbage", "unexpected-error", "answered a malformed reply: reply: not valid JSON", true},
        FaultCase{"wrong-id", "unexpected-error", "reply.id: the reply to request", true},
        FaultCase{"wrong-shape", "unexpected-error", "answered output 0 f32[", true},
        FaultCase{"wrong-dtype", "unexpected-error", "answered output 0 f64[", true},
        FaultCase{"inexact", "unexpected-error", "data[0] = 0.1 for %", true},
        FaultCase{"recoverable", "invalid-rewrite", "the flash kernel refuses Lq >= 5", false},
        FaultCase{"fatal", "crash", "the flash kernel aborts on Lq >= 5", false},
        FaultCase{"raise", "unexpected-error", "the kernel adapter raised: ValueError: the flash kernel fails", false}),
    [](const testing::TestParamInfo<FaultCase>& p) {
      std::string n = p.param.fault;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// The dtypes and numerics the target declares come from the adapter's
// first hello: a later start that declares others is a finding.
TEST(ToyFlashKernelAdapter, ADeclarationChangedAtALaterStartIsAFinding) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  const std::string dir = scratch("redeclare");
  auto target = fixture().registry.make("toy-flash", {{"kernels", adapter("redeclare", dir + "/starts")}});
  CampaignOptions o = campaign_options(24, true);
  o.max_shrink_steps = 5;  // every start after the fault fails: shrinking is not what is tested
  TargetRun r = run_target_campaign(*target, *fixture().reference, generators(), o);
  EXPECT_EQ(r.cases, 24);
  EXPECT_GT(r.verdicts["crash"], 0);  // the exit that makes it start again
  const WrittenFinding* w = nullptr;
  for (const auto& x : r.findings)
    if (x.verdict == "unexpected-error") w = &x;
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->finding.detail.find("at its start: declares other ops, dtypes or numerics than at its first start, "
                                   "which the target claims"),
            std::string::npos)
      << w->finding.detail;
  fs::remove_all(dir);
}

// A fault is reported as the adapter's, on the node it was computing.
TEST(ToyFlashKernelAdapter, AFaultNamesTheSetTheNodeAndTheAdapter) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  TargetRun r = campaign({{"kernels", adapter("exit")}}, 20, true);
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings[0].finding;
  EXPECT_EQ(f.check, Check::robustness);
  EXPECT_EQ(f.detail.rfind(kAt, 0), 0u) << f.detail;
  EXPECT_NE(f.detail.find("flash_kernel_adapter.py --fault exit` exited with status 3"), std::string::npos)
      << f.detail;
}

// adapter_ops names the ops the adapter computes; the toy's own kernels compute the others.
TEST(ToyFlashKernelAdapter, ANamedSubsetOfOpsRunsInTheAdapter) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  TargetRun r = campaign({{"kernels", adapter("exit")}, {"adapter_ops", kFlashOp}}, 30, true);
  EXPECT_GT(r.verdicts["crash"], 0);
  for (const auto& w : r.findings)
    EXPECT_NE(w.finding.detail.find(std::string("(") + kFlashOp + ")"), std::string::npos) << w.finding.detail;
  auto target = fixture().registry.make("toy-flash", {{"kernels", adapter("none")}, {"adapter_ops", kFlashOp}});
  EXPECT_NE(target->kernel_sets().at(0).description.find(": 1 of "), std::string::npos);
}

TEST(ToyFlashKernelAdapter, BadOptionValuesAndAFailedHelloNameTheOption) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  auto error = [](const Options& o) {
    try {
      fixture().registry.make("toy-flash", o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({{"kernels", "python3 x.py"}}),
            "option 'kernels' of target toy-flash: expected model or adapter:COMMAND, got 'python3 x.py'");
  EXPECT_EQ(error({{"kernels", "adapter:no-such-program-here"}}),
            "option 'kernels' of target toy-flash: cannot run 'no-such-program-here': no executable file of that "
            "name on PATH");
  EXPECT_NE(error({{"kernels", adapter("none")}, {"adapter_ops", "aten.mul.Scalar"}})
                .find("option 'adapter_ops' of target toy-flash: the kernel adapter does not declare aten.mul.Scalar "
                      "(it declares aten._scaled_dot_product_flash_attention.default, "
                      "aten.scaled_dot_product_attention.default)"),
            std::string::npos);
  EXPECT_NE(error({{"kernels", adapter("version")}})
                .find("option 'kernels' of target toy-flash: the kernel adapter `"),
            std::string::npos);
  EXPECT_NE(error({{"kernels", adapter("version")}})
                .find("` at its start: speaks protocol version 2; this sdpacheck speaks version 1"),
            std::string::npos)
      << error({{"kernels", adapter("version")}});
  // A pass adapter is not a kernel adapter: it says so on its stderr and exits.
  const char* src = std::getenv("SDPACHECK_SOURCE_DIR");
  const std::string pass = std::string("adapter:") + kPython + " " + (src ? src : ".") +
                           "/harness/check/toys/toy_flash/flash_adapter.py";
  EXPECT_NE(error({{"kernels", pass}}).find("this adapter is a pass (serve); sdpacheck asked for a 'kernel' adapter"),
            std::string::npos)
      << error({{"kernels", pass}});
}

}  // namespace
}  // namespace sdpa::toy_flash
