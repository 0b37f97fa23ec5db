// The toy int8 target: its quantized numerics give a finite bound derived
// from the quantization steps; the right kernel passes generated cases and
// a kernel with a wrong requantization shift is an inaccurate kernel.
#include <gtest/gtest.h>

#include <cmath>

#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "harness/check/check.h"
#include "harness/check/toys/toy_int8/int8_sdpa_kernel.h"
#include "harness/check/toys/toy_int8/toy_int8_target.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::toy_int8 {
namespace {

struct Fixture {
  std::unique_ptr<TargetFactory> factory = make_factory();
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  CaseGeneratorFactory generators = [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); };

  std::unique_ptr<Target> target(const std::string& mutant = "none") const {
    return factory->make(resolve_options(*factory, {{"mutant", mutant}}));
  }
  TargetRun campaign(const Target& t, int64_t cases, double* worst_ratio = nullptr) const {
    CampaignOptions o;
    o.seed = 20261130;
    o.cases = cases;
    o.on_case = [worst_ratio](const Case&, const CaseResult& r) {
      for (const auto& s : r.accuracy)
        if (worst_ratio) *worst_ratio = std::max(*worst_ratio, s.ratio);
    };
    return run_target_campaign(t, *reference, generators, o);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

Case small_case() {
  Case c;
  c.dtype = DType::f32;
  c.q_heads = c.kv_heads = 2;
  c.q_len = SymExpr(3);
  c.kv_len = SymExpr(5);
  c.head_dim = c.value_dim = 8;
  c.data.seed = 42;
  return c;
}

TEST(ToyInt8, FixedMultiplierRoundsLikeTheRealProduct) {
  for (double real : {0.3, 1.0 / 255, 123.456, -0.7, 3e-7}) {
    FixedMultiplier m = fixed_multiplier(real);
    for (int64_t x : {int64_t{1}, int64_t{-17}, int64_t{1000}, int64_t{-123456}, int64_t{1} << 30}) {
      const double want = std::round(static_cast<double>(x) * real);
      EXPECT_LE(std::fabs(static_cast<double>(requantize(x, m)) - want),
                1 + std::fabs(static_cast<double>(x) * real) * std::ldexp(1.0, -30))
          << real << " * " << x;
    }
  }
  EXPECT_EQ(requantize(12345, fixed_multiplier(0)), 0);
}

// The bound is finite, derived from the steps: coarser steps, larger bound.
TEST(ToyInt8, QuantizedBoundIsFiniteAndGrowsWithTheSteps) {
  Case c = small_case();
  CaseTensors t = make_case_tensors(c, {});
  Golden g = fixture().reference->golden(c, t, {});
  QuantizedNumerics qn;
  qn.score_step = 1.0 / 1024;
  qn.prob_step = 1.0 / 255;
  qn.multiplier_rel = std::ldexp(1.0, -30);
  ErrorBound fine = fixture().reference->bound(c, t, g, KernelNumerics::quantized(qn));
  qn.input_qmax = qn.output_qmax = 15;  // int4-like steps
  qn.prob_step = 1.0 / 15;
  ErrorBound coarse = fixture().reference->bound(c, t, g, KernelNumerics::quantized(qn));
  for (size_t r = 0; r < fine.row_bound.size(); ++r) {
    EXPECT_TRUE(std::isfinite(fine.row_bound[r]));
    EXPECT_GT(fine.row_bound[r], 0);
    EXPECT_LT(fine.row_bound[r], coarse.row_bound[r]);
  }
  EXPECT_LT(fine.max_bound(), t.v.max_abs());  // tighter than "any weighted average of v"
  EXPECT_EQ(fine.inputs()["numerics"], "quantized");
  EXPECT_DOUBLE_EQ(fine.inputs()["s_v"].get<double>(), t.v.max_abs() / 127);
}

TEST(ToyInt8, RightKernelPassesAndTheBoundHasPower) {
  double worst = 0;
  TargetRun r = fixture().campaign(*fixture().target(), 300, &worst);
  EXPECT_EQ(r.verdicts["pass"], 300) << run_summary_text({r});
  EXPECT_LE(worst, 1.0);
  EXPECT_GT(worst, 0.05);  // a correct kernel uses a fair part of its bound
  std::printf("toy_int8: 300 cases, largest error / bound %.3f\n", worst);
}

class WrongShift : public ::testing::TestWithParam<std::string> {};

TEST_P(WrongShift, IsAnInaccurateKernel) {
  TargetRun r = fixture().campaign(*fixture().target(GetParam()), 300);
  ASSERT_FALSE(r.findings.empty()) << run_summary_text({r});
  const WrittenFinding& w = r.findings[0];
  EXPECT_EQ(w.verdict, "inaccurate-kernel") << run_summary_text({r});
  EXPECT_EQ(w.finding.kernel_set, "int8");
  EXPECT_GT(w.finding.error, w.finding.bound);
  EXPECT_EQ(w.finding.bound_inputs["numerics"], "quantized");
  // The shrunk case passes on the right kernel: the shift is what fails.
  EXPECT_EQ(run_case(*fixture().target(), *fixture().reference, w.shrunk).verdict, Verdict::pass)
      << case_summary(w.shrunk);
}

INSTANTIATE_TEST_SUITE_P(Mutants, WrongShift, ::testing::Values("output-shift", "score-shift"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

// Passes off, the graph holds no int8 SDPA: the set declares no numerics,
// and accuracy is a counted `unsupported`, never an infinite bound.
TEST(ToyInt8, NoNumericsIsUnsupportedNotAnInfiniteBound) {
  CheckOptions identity;
  identity.passes = false;
  CaseResult r = run_case(*fixture().target(), *fixture().reference, small_case(), identity);
  EXPECT_EQ(r.verdict, Verdict::unsupported);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_NE(r.findings[0].detail.find("declares no numerics"), std::string::npos) << r.findings[0].detail;
  EXPECT_TRUE(r.accuracy.empty());
}

}  // namespace
}  // namespace sdpa::toy_int8
