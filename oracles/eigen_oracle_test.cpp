#include "oracles/eigen_oracle.h"

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

}  // namespace
}  // namespace sdpa::test
