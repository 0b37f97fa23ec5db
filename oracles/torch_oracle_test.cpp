#include "oracles/torch_oracle.h"

#include <stdexcept>

#include "oracles/oracle_test_support.h"

namespace sdpa::test {
namespace {

INSTANTIATE_TEST_SUITE_P(LibTorch, OracleSemantics,
                         ::testing::Values(NamedOracle{"torch", torch_golden}));

TEST(TorchOracle, RejectsTensorsOfAnotherSize) {
  Case c = make_case(2, 2, 3, 4, 5, 6);
  Case longer = c;
  longer.kv_len = 5;
  EXPECT_THROW(torch_golden(c, make_case_tensors(longer, {}), {}), std::invalid_argument);
}

TEST(TorchOracle, RejectsHeadsAtenRejects) {
  Case c = make_case(4, 2, 3, 4, 5, 6);  // Hq != Hkv needs enable_gqa
  EXPECT_THROW(torch_golden(c, make_case_tensors(c, {}), {}), std::invalid_argument);
}

TEST(TorchOracle, LeavesItsInputsUntouched) {
  Case c = make_case(2, 2, 3, 4, 5, 6);
  c.mask = mask_spec(DType::f32, {3, 4}, MaskPattern::random, 0.5);
  c.dropout_p = 0.3;
  const CaseTensors t = make_case_tensors(c, {});
  CaseTensors copy = t;
  torch_golden(c, copy, {});
  EXPECT_EQ(copy.q.data, t.q.data);
  EXPECT_EQ(copy.k.data, t.k.data);
  EXPECT_EQ(copy.v.data, t.v.data);
  EXPECT_EQ(copy.mask->data, t.mask->data);
}

}  // namespace
}  // namespace sdpa::test
