#include "oracles/dual_oracle.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "harness/case/case_validate.h"
#include "oracles/eigen_oracle.h"
#include "oracles/error_model.h"
#include "oracles/oracle_test_support.h"
#include "oracles/torch_oracle.h"

namespace sdpa::test {
namespace {

TEST(DualOracle, OraclesAgreeOnVariedCases) {
  const auto oracle = make_dual_oracle();
  double max_rel = 0;
  int runs = 0, nan_runs = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    Case c = varied_case(i);
    ASSERT_NO_THROW(validate_case(c)) << case_summary(c);
    for (const Assignment& at : c.runs()) {
      Golden g = oracle->golden(c, make_case_tensors(c, at), at);
      EXPECT_EQ(g.disagreement, "") << "case " << i << ": " << case_summary(c);
      max_rel = std::max(max_rel, g.oracle_max_rel_diff);
      nan_runs +=
          std::any_of(g.out.data.begin(), g.out.data.end(), [](double x) { return std::isnan(x); });
      ++runs;
    }
  }
  std::printf("%d runs, largest relative difference %.3g, %d with NaN\n", runs, max_rel, nan_runs);
  EXPECT_LE(max_rel, 1e-12);
}

// Both oracles agree on the masks of batched serving across the kernels'
// tile edges: left padding, per-batch padding over one and two batch dims,
// block-sparse blocks of every tile size, bool and additive with each fill.
TEST(DualOracle, OraclesAgreeOnServingMasksAcrossTileEdges) {
  const auto oracle = make_dual_oracle();
  int runs = 0, fully_masked = 0;
  for (uint64_t i = 0; i < 120; ++i) {
    Case c = make_case(2, 1, 1 + static_cast<int64_t>(i % 3) * 4, (i % 4 == 0 ? 129 : i % 4 == 1 ? 65 : 33), 4, 3);
    c.dtype = i % 5 == 0 ? DType::bf16 : i % 5 == 1 ? DType::f16 : DType::f32;
    c.batch = i % 6 < 3 ? SymShape{2} : SymShape{2, 2};
    const int64_t Lkv = c.kv_len.constant();
    MaskSpec m;
    m.dtype = i % 2 ? DType::b8 : i % 4 == 0 ? DType::f32 : c.dtype;
    m.fill = i % 3 == 0 ? MaskFill::neg_inf : i % 3 == 1 ? MaskFill::min : MaskFill::neg_1e4;
    m.shape = score_shape(c);
    m.shape[m.shape.size() - 3] = 1;  // one head for all
    switch (i % 3) {
      case 0:
        m.pattern = MaskPattern::left_padding;
        m.param = static_cast<double>((i * 37) % static_cast<uint64_t>(Lkv + 1));
        break;
      case 1:
        m.pattern = MaskPattern::per_batch_padding;
        m.param = static_cast<double>(i % 2 ? Lkv : 64);
        m.shape[m.shape.size() - 2] = 1;  // [B..., 1, 1, Lkv]
        break;
      default:
        m.pattern = MaskPattern::block_sparse;
        m.param = 0.5;
        m.block_rows = i % 4 == 2 ? 1 : 2;
        m.block_keys = i % 8 < 4 ? 32 : 64;
    }
    c.mask = m;
    c.data.seed = i;
    ASSERT_NO_THROW(validate_case(c)) << case_summary(c);
    Golden g = oracle->golden(c, make_case_tensors(c, {}), {});
    EXPECT_EQ(g.disagreement, "") << "case " << i << ": " << case_summary(c);
    EXPECT_LE(g.oracle_max_rel_diff, 1e-12) << case_summary(c);
    fully_masked += std::count(g.fully_masked.begin(), g.fully_masked.end(), 1) > 0;
    ++runs;
  }
  EXPECT_EQ(runs, 120);
  EXPECT_GT(fully_masked, 5);  // padding every key of some batch element or row
}

Golden perturbed_torch(const Case& c, const CaseTensors& t, const Assignment& at, int64_t index,
                       double delta) {
  Golden g = torch_golden(c, t, at);
  g.out.data[index] += delta;
  return g;
}

TEST(DualOracle, ReportsTheWorstElementWhenOraclesDiffer) {
  Case c = make_case(2, 2, 3, 4, 5, 6);
  CaseTensors t = make_case_tensors(c, {});
  const double scale = std::max(eigen_golden(c, t, {}).out.max_abs(), t.v.max_abs());
  DualOracle off(eigen_golden, [&](const Case& c, const CaseTensors& t, const Assignment& at) {
    return perturbed_torch(c, t, at, 13, 1e-10 * scale);
  });
  Golden g = off.golden(c, t, {});
  EXPECT_NE(g.disagreement.find("out[0, 2, 1]"), std::string::npos) << g.disagreement;
  EXPECT_NEAR(g.oracle_max_rel_diff, 1e-10, 1e-12);
  EXPECT_EQ(g.out.data, eigen_golden(c, t, {}).out.data);  // the Eigen result

  DualOracle close(eigen_golden, [&](const Case& c, const CaseTensors& t, const Assignment& at) {
    return perturbed_torch(c, t, at, 13, 1e-14 * scale);
  });
  EXPECT_EQ(close.golden(c, t, {}).disagreement, "");
}

// Logits near 1e5 (q's first element 3e5 against k's 1, scale 1/3): float64
// rounds each at about 1e-11, past 1e-12, where the Eigen oracle keeps the
// logits as double-doubles. The LibTorch oracle is allowed its float64
// error bound, and 1e-8 added to one of its outputs is still caught.
TEST(DualOracle, AllowsTheFloat64ErrorOfLargeLogits) {
  const auto oracle = make_dual_oracle();
  double max_rel = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Case c = make_case(2, 2, 8, 8, 8, 8);
    c.scale = 1.0 / 3.0;
    c.data.seed = seed;
    CaseTensors t = make_case_tensors(c, {});
    for (size_t r = 0; r < t.q.data.size(); r += 8) t.q.data[r] = 3e5;
    for (size_t r = 0; r < t.k.data.size(); r += 8) t.k.data[r] = 1.0;
    Golden g = oracle->golden(c, t, {});
    EXPECT_EQ(g.disagreement, "") << "seed " << seed;
    max_rel = std::max(max_rel, g.oracle_max_rel_diff);
    DualOracle off(eigen_golden, [&](const Case& c, const CaseTensors& t, const Assignment& at) {
      return perturbed_torch(c, t, at, 100, 1e-8);
    });
    EXPECT_NE(off.golden(c, t, {}).disagreement, "") << "seed " << seed;
  }
  EXPECT_GT(max_rel, 1e-12);
}

// Scores near 1e300 (f64 data of magnitude 1e150, or a scale of 1e308)
// carry low parts near 1e284: the softmax takes the max's own low part out
// of every exponent, or every weight underflows and the Eigen row is 0 / 0
// where LibTorch's is finite (an oracle-disagree on valid input). Scores
// past double's range (magnitude 1e154, scale 1e308) are inf in both, and
// both rows NaN.
TEST(DualOracle, AgreeWhereScoresNearTheTopOfDoublesRange) {
  const auto oracle = make_dual_oracle();
  for (uint64_t seed = 1; seed < 20; ++seed)
    for (const auto& [magnitude, scale] : std::vector<std::pair<double, std::optional<double>>>{
             {1e150, std::nullopt}, {1e154, std::nullopt}, {1.0, 1e308}}) {
      Case c = make_case(1, 1, 2, 3, 4, 4);
      c.dtype = DType::f64;
      c.data.seed = seed;
      c.data.magnitude = magnitude;
      c.scale = scale;
      const Golden g = oracle->golden(c, make_case_tensors(c, {}), {});
      EXPECT_EQ(g.disagreement, "") << "seed " << seed << " magnitude " << magnitude;
      if (magnitude == 1e150)  // |q·k| below 4·(3e150)^2: every score finite
        for (double x : g.out.data) EXPECT_FALSE(std::isnan(x)) << "seed " << seed;
    }
}

// f16's -65504 on every key: both oracles round s - 65504 to float64 (aten
// adds the mask in the score's dtype), so they agree within 1e-12.
TEST(DualOracle, AgreeOnLargeAdditiveMasks) {
  const auto oracle = make_dual_oracle();
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Case c = make_case(2, 2, 8, 8, 8, 8);
    c.mask = mask_spec(DType::f16, {8, 8}, MaskPattern::random, 0.0, MaskFill::min);
    c.data.seed = seed;
    Golden g = oracle->golden(c, make_case_tensors(c, {}), {});
    EXPECT_EQ(g.disagreement, "") << "seed " << seed;
    EXPECT_LE(g.oracle_max_rel_diff, 1e-12) << "seed " << seed;
  }
}

TEST(DualOracle, ComparesNanPositionsAndFullyMaskedFlags) {
  Golden a;
  a.out = Tensor(DType::f64, {2, 2}, 1.0);
  a.fully_masked = {0, 0};
  Golden b = a;
  b.out.data[3] = NAN;
  EXPECT_NE(compare_goldens(a, b, 1.0).disagreement.find("NaN"), std::string::npos);
  a.out.data[3] = NAN;
  EXPECT_EQ(compare_goldens(a, b, 1.0).disagreement, "");
  b.fully_masked[1] = 1;
  EXPECT_NE(compare_goldens(a, b, 1.0).disagreement.find("fully masked"), std::string::npos);
  b.fully_masked[1] = 0;
  b.out.data[0] = INFINITY;
  EXPECT_NE(compare_goldens(a, b, 1.0).disagreement, "");
}

TEST(DualOracle, NamesItselfAndDelegatesTheBound) {
  const auto oracle = make_dual_oracle();
  EXPECT_EQ(oracle->name(), "eigen+libtorch");
  Case c = make_case(2, 1, 3, 4, 5, 6);
  CaseTensors t = make_case_tensors(c, {});
  Golden g = oracle->golden(c, t, {});
  EXPECT_EQ(oracle->bound(c, t, g, DType::f16).row_bound,
            error_bound(c, t, g, DType::f16).row_bound);
}

TEST(DualOracle, TypicalSmallCaseIsFast) {
  Case c = make_case(4, 4, 16, 16, 16, 16);
  c.batch = {1};
  c.dtype = DType::f32;
  CaseTensors t = make_case_tensors(c, {});
  const auto oracle = make_dual_oracle();
  oracle->golden(c, t, {});  // warm up ATen
  auto timed = [&](auto&& f) {
    const int reps = 200;
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) f();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           reps;
  };
  double dual = timed([&] { oracle->golden(c, t, {}); });
  double eigen = timed([&] { eigen_golden(c, t, {}); });
  double torch = timed([&] { torch_golden(c, t, {}); });
  std::printf("golden(): %.0f us (eigen %.0f us, libtorch %.0f us) for %s\n", dual, eigen, torch,
              case_summary(c).c_str());
  EXPECT_LT(dual, 20000.0);
}

}  // namespace
}  // namespace sdpa::test
