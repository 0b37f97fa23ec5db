// The aten target with its kernels computed by examples/adapters/torch_kernels.py
// (the ATen ops of Debian's python3-torch 1.13 through the kernel adapter
// protocol): the rewritten graphs give, bit for bit, what sdpacheck's own
// `libtorch` set (the same ATen ops called from C++) gives; a campaign, as
// `sdpacheck fuzz` runs it, passes within the bound of the numerics the
// adapter declares for f32 and f64; and each deliberately wrong Python
// kernel of the example is caught in the accuracy check and shrunk.
#include <unistd.h>

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "backends/aten/aten_target.h"
#include "backends/common/libtorch_kernels.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "harness/case/case_json.h"
#include "harness/case/tensor_data.h"
#include "harness/io/json_reader.h"
#include "harness/ir/interpreter.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::aten {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

bool have_torch() {
  return access(kPython, X_OK) == 0 && std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") == 0;
}

std::string torch_kernels(const std::string& args = "") {
  const char* src = std::getenv("SDPACHECK_SOURCE_DIR");
  return std::string("adapter:") + kPython + " " + (src ? src : ".") + "/examples/adapters/torch_kernels.py" +
         (args.empty() ? "" : " " + args);
}

struct Fixture {
  std::unique_ptr<TargetFactory> factory = make_factory();
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  CaseGeneratorFactory generators = [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); };

  std::unique_ptr<Target> target(const std::string& kernels) const {
    return factory->make(resolve_options(*factory, {{"kernels", kernels}}));
  }
};

CampaignOptions options(int64_t cases) {
  CampaignOptions o;
  o.seed = 20261210;
  o.cases = cases;
  return o;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype || a.shape != b.shape) return false;
  for (size_t i = 0; i < a.data.size(); ++i)
    if (std::memcmp(&a.data[i], &b.data[i], sizeof(double)) != 0 && !(std::isnan(a.data[i]) && std::isnan(b.data[i])))
      return false;
  return true;
}

TEST(AtenKernelAdapter, TorchInPythonComputesWhatLibTorchComputesBitForBit) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed";
  Fixture f;
  auto t = f.target(torch_kernels());
  const KernelSet& adapter = *t->kernel_sets().at(0).kernels;
  ASSERT_EQ(adapter.name(), "adapter");
  CampaignOptions o = options(60);
  o.check.keep_graphs = true;
  int64_t compared = 0;
  o.on_case = [&](const Case& c, const CaseResult& r) {
    if (!r.rewritten_graph) return;
    for (const Assignment& at : c.runs()) {
      const auto inputs = t->inputs(c, make_case_tensors(c, at));
      const RunContext ctx{at, c.data.seed};
      Execution ours = interpret(*r.rewritten_graph, libtorch_kernels(), inputs, ctx);
      Execution theirs = interpret(*r.rewritten_graph, adapter, inputs, ctx);
      ASSERT_EQ(ours.outputs.size(), theirs.outputs.size());
      EXPECT_TRUE(same_bits(ours.outputs[0], theirs.outputs[0])) << case_to_json(c).dump();
      ++compared;
    }
  };
  TargetRun run = run_target_campaign(*t, *f.reference, f.generators, o);
  EXPECT_EQ(run.cases, 60);
  EXPECT_GT(compared, 60);
}

TEST(AtenKernelAdapter, ACampaignThroughTorchPassesWithinItsDeclaredNumerics) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed";
  Fixture f;
  auto t = f.target(torch_kernels());
  EXPECT_EQ(t->case_space().dtypes, (std::vector<DType>{DType::f32, DType::f64}));  // what the adapter claims
  CampaignOptions o = options(300);
  o.isolate = true;  // as sdpacheck fuzz runs it
  std::map<DType, int64_t> judged;
  double worst = 0;
  o.on_case = [&](const Case&, const CaseResult& r) {
    for (const auto& a : r.accuracy) {
      EXPECT_EQ(a.kernel_set, "adapter");
      ++judged[a.dtype];
      worst = std::max(worst, a.ratio);
    }
  };
  TargetRun r = run_target_campaign(*t, *f.reference, f.generators, o);
  EXPECT_EQ(r.cases, 300);
  int64_t failures = 0;
  for (const auto& [v, n] : r.verdicts) failures += is_failure(*parse_verdict(v)) ? n : 0;
  EXPECT_EQ(failures, 0) << run_summary_text({r});
  EXPECT_GT(r.verdicts["pass"], 250) << run_summary_text({r});
  EXPECT_GT(judged[DType::f32], 100);
  EXPECT_GT(judged[DType::f64], 20);
  EXPECT_LE(worst, 1.0);
}

struct KernelMutant {
  std::string mutant, op;  // the option of the example, the op it breaks
};

class AtenKernelAdapterMutant : public testing::TestWithParam<KernelMutant> {};

TEST_P(AtenKernelAdapterMutant, IsCaughtInTheAccuracyCheckAndShrunk) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed";
  Fixture f;
  auto t = f.target(torch_kernels("--mutant " + GetParam().mutant));
  CampaignOptions o = options(200);
  o.stop_after = 1;
  TargetRun r = run_target_campaign(*t, *f.reference, f.generators, o);
  ASSERT_EQ(r.findings.size(), 1u) << run_summary_text({r});
  const WrittenFinding& w = r.findings[0];
  EXPECT_TRUE(w.verdict == "inaccurate-kernel" || w.verdict == "nan-mismatch") << w.verdict;
  EXPECT_EQ(w.finding.check, Check::accuracy);
  EXPECT_EQ(w.finding.kernel_set, "adapter");
  EXPECT_NE(w.finding.first_node.find(GetParam().op), std::string::npos) << w.finding.first_node;
  EXPECT_GT(w.shrink_steps, 0);
  const Case& c = w.shrunk;
  EXPECT_LE(c.batch.size(), 1u) << case_to_json(c).dump();
  for (const auto& at : c.runs()) {
    const ConcreteSizes s = concrete_sizes(c, at);
    EXPECT_LE(std::max({s.Lq, s.Lkv, s.E, s.Ev}), 2) << case_to_json(c).dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Mutants, AtenKernelAdapterMutant,
                         testing::Values(KernelMutant{"softmax-no-max", "aten._safe_softmax.default"},
                                         KernelMutant{"matmul-bf16-output", "aten.matmul.default"}),
                         [](const testing::TestParamInfo<KernelMutant>& p) {
                           std::string n = p.param.mutant;
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

TEST(AtenKernelAdapter, TheKernelsOptionNamesItsValues) {
  Fixture f;
  try {
    f.target("numpy");
    ADD_FAILURE() << "kernels=numpy was taken";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "option 'kernels' of target aten: expected all, libtorch, portable or adapter:COMMAND, got 'numpy'");
  }
}

}  // namespace
}  // namespace sdpa::aten
