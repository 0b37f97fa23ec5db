#include "backends/cortex_m/cmsis/cmsis_error.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace sdpa::cortex_m::cmsis {
namespace {

// The kernels' refusals name operands as these strings (the kernels' tests
// check them in the refusals themselves).
TEST(CmsisOperandName, WritesBaseIndexAndSuffix) {
  EXPECT_EQ(OperandName("shift").str(), "shift");
  EXPECT_EQ(OperandName("v").with_suffix("·2^shift").str(), "v·2^shift");
  EXPECT_EQ(OperandName("product", {7}).str(), "product[7]");
  EXPECT_EQ(OperandName("acc", {0, 12, -3}).str(), "acc[0,12,-3]");
  EXPECT_EQ(OperandName("acc", {2, 1}).with_suffix("·2^shift").str(), "acc[2,1]·2^shift");
  EXPECT_EQ(OperandName("input", {4, 5}, OperandName::Style::row_column).str(), "input (row 4, column 5)");
}

TEST(CmsisOperandName, RefusesMoreIndicesThanItHolds) {
  EXPECT_THROW(OperandName("acc", {1, 2, 3, 4}), std::logic_error);
  EXPECT_THROW(OperandName("input", {1}, OperandName::Style::row_column), std::logic_error);
}

}  // namespace
}  // namespace sdpa::cortex_m::cmsis
