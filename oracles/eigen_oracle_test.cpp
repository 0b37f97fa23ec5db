#include "oracles/eigen_oracle.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "oracles/oracle_test_support.h"

namespace sdpa::test {
namespace {

INSTANTIATE_TEST_SUITE_P(Eigen, OracleSemantics,
                         ::testing::Values(NamedOracle{"eigen", eigen_golden}));

TEST(EigenOracle, RejectsTensorsOfAnotherSize) {
  Case c = make_case(2, 2, 3, 4, 5, 6);
  Case longer = c;
  longer.kv_len = 5;
  EXPECT_THROW(eigen_golden(c, make_case_tensors(longer, {}), {}), std::invalid_argument);
}

TEST(EigenOracle, RejectsHeadsAtenRejects) {
  Case c = make_case(4, 2, 3, 4, 5, 6);  // Hq != Hkv needs enable_gqa
  EXPECT_THROW(eigen_golden(c, make_case_tensors(c, {}), {}), std::invalid_argument);
}

TEST(EigenOracle, EvaluatesSymbolicSizesAtTheGivenRun) {
  Case c = make_case(1, 1, 2, 1, 3, 3);
  c.kv_len = SymExpr::symbol("s0");
  c.symbols["s0"] = SymbolInfo{4, 1, 8};
  Assignment at{{"s0", 6}};
  Golden g = eigen_golden(c, make_case_tensors(c, at), at);
  EXPECT_EQ(g.out.shape, (Shape{1, 2, 3}));
  EXPECT_THROW(eigen_golden(c, make_case_tensors(c, {{"s0", 5}}), at), std::invalid_argument);
}

// Each row's largest score is q_i . k_j * scale over the keys it keeps.
TEST(EigenOracle, RecordsEachRowsLargestKeptScore) {
  Case c = make_case(1, 1, 3, 4, 2, 2);
  c.is_causal = true;
  c.scale = 0.5;
  CaseTensors t = make_case_tensors(c, {});
  Golden g = eigen_golden(c, t, {});
  ASSERT_EQ(g.row_max_score.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    double want = -1e300;
    for (int64_t j = 0; j <= i; ++j)  // top-left causal keeps j <= i
      want = std::max(want, 0.5 * (t.q.data[i * 2] * t.k.data[j * 2] + t.q.data[i * 2 + 1] * t.k.data[j * 2 + 1]));
    EXPECT_NEAR(g.row_max_score[i], want, 1e-12 * std::fabs(want) + 1e-300) << i;
  }
}

// Two keys whose logits are about 1e5 and differ by about 0.1: rounded to
// double, each logit loses up to 7e-12 and their difference (all that
// softmax reads) with it, so the weights move by up to about 1e-11. The
// oracle keeps each logit as a double-double. q, k and v are f32 values;
// the expected output is computed in long double from the exact difference.
TEST(EigenOracle, LargeLogitsKeepTheirDifferences) {
  Case c = make_case(1, 1, 1, 2, 1, 1);
  c.scale = 1.0 / 3.0;
  long double worst = 0;
  for (int n = 0; n < 40; ++n) {
    CaseTensors t = make_case_tensors(c, {});
    const double a = 3e5 + 4096.0 * n;  // f32 values: 19 significant bits at most
    const double step = std::ldexp(1.0, -20);
    t.q.data = {a};
    t.k.data = {1.0, 1.0 + step};
    t.v.data = {0.0, 1.0};
    const Golden g = eigen_golden(c, t, {});
    // out = w2 / (w1 + w2) = 1 / (1 + e^-(s2 - s1)), s2 - s1 = a 2^-20 scale.
    const long double diff = static_cast<long double>(a) * static_cast<long double>(step) *
                             static_cast<long double>(c.effective_scale());
    const long double want = 1.0L / (1.0L + std::exp(-diff));
    worst = std::max(worst, std::fabs(static_cast<long double>(g.out.data[0]) - want) / want);
  }
  EXPECT_LT(worst, 1e-15L);
}

}  // namespace
}  // namespace sdpa::test
