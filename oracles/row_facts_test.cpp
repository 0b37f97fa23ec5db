#include "oracles/row_facts.h"

#include <cmath>
#include <vector>

#include "oracles/oracle_test_support.h"

namespace sdpa::test {
namespace {

// W = max_e sum_j p_j |v_je|, each sum over the weighted keys in order:
// for a few value columns (summed in registers, lane groups of 2 and 1
// for 3) and for many (side by side), with a zero weight whose key holds an inf that must not count.
TEST(RowFacts, WIsTheLargestWeightedValueMagnitude) {
  for (int64_t Ev : {3, 12}) {
    const int64_t Lkv = 5;
    Case c = make_case(1, 1, 1, Lkv, 4, Ev);
    CaseTensors t = make_case_tensors(c, {});
    t.v.data[2 * Ev + 1] = 1e300;  // key 2, weight 0 below
    AttentionCall call(c, t);
    const std::vector<double> scores(Lkv, 0.0), p = {0.5, 0.25, 0.0, 0.125, 0.125};
    RowFacts r = row_facts(call, 0, 0, 0, scores.data(), p.data(), key_norms(call, 0, 0));
    double want = 0;
    for (int64_t e = 0; e < Ev; ++e) {
      double w = 0;
      for (int64_t j = 0; j < Lkv; ++j)
        if (p[j] != 0) w += p[j] * std::fabs(t.v.data[j * Ev + e]);
      want = std::max(want, w);
    }
    EXPECT_EQ(r.W, want) << "Ev " << Ev;
    EXPECT_GT(r.W, 0.0);
  }
}

}  // namespace
}  // namespace sdpa::test
