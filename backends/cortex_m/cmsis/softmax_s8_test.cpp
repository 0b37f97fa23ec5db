#include "backends/cortex_m/cmsis/softmax_s8.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cortex_m/cmsis/cmsis_test_util.h"
#include "backends/cortex_m/cmsis/lowering_params.h"

namespace sdpa::cortex_m::cmsis {
namespace {

using testing::refusal;
using testing::round_clamp;

std::vector<int8_t> softmax_row(const std::vector<int8_t>& row, double s_in) {
  return arm_softmax_s8(row, 1, static_cast<int64_t>(row.size()), softmax_params(s_in));
}

std::vector<int8_t> uniform_row(int64_t n, double s_in = 0.1) { return softmax_row(std::vector<int8_t>(n, 7), s_in); }

// The fake-quantized float reference: clamp(round_half_even(256·softmax(S_in·(x - max))) - 128).
std::vector<int> reference(const std::vector<int8_t>& row, double s_in) {
  const int max = *std::max_element(row.begin(), row.end());
  long double sum = 0;
  for (int8_t x : row) sum += std::exp(static_cast<long double>(s_in) * (x - max));
  std::vector<int> out;
  for (int8_t x : row)
    out.push_back(round_clamp(256 * std::exp(static_cast<long double>(s_in) * (x - max)) / sum - 128));
  return out;
}

TEST(CmsisSoftmaxS8, GoldenRow) {
  // semantics §2.2 / §5 item 7: S_in = 0.1, params (1717986918, 23, -248).
  EXPECT_EQ(softmax_row({10, 0, -10, -128}, 0.1), (std::vector<int8_t>{42, -65, -105, -128}));
}

TEST(CmsisSoftmaxS8, GoldenUniformRows) {
  EXPECT_EQ(uniform_row(1), std::vector<int8_t>{127});  // p = 1 saturates
  EXPECT_EQ(uniform_row(2), std::vector<int8_t>(2, 0));
  EXPECT_EQ(uniform_row(3), std::vector<int8_t>(3, -43));
  EXPECT_EQ(uniform_row(4), std::vector<int8_t>(4, -64));
  EXPECT_EQ(uniform_row(256), std::vector<int8_t>(256, -127));
  EXPECT_EQ(uniform_row(511), std::vector<int8_t>(511, -127));  // still defined: the sum is below 2^28
}

TEST(CmsisSoftmaxS8, RowsAreIndependent) {
  // The golden row, then a uniform row of 4.
  const std::vector<int8_t> out = arm_softmax_s8({10, 0, -10, -128, 3, 3, 3, 3}, 2, 4, softmax_params(0.1));
  EXPECT_EQ(out, (std::vector<int8_t>{42, -65, -105, -128, -64, -64, -64, -64}));
}

TEST(CmsisSoftmaxS8, InputZeroPointIsIgnored) {
  // semantics §5 item 8: only differences from the row max matter.
  EXPECT_EQ(softmax_row({10, 0, -10}, 0.1), softmax_row({20, 10, 0}, 0.1));
  EXPECT_EQ(softmax_row({10, 0, -10}, 0.05), softmax_row({-100, -110, -120}, 0.05));
}

TEST(CmsisSoftmaxS8, ElementsBelowDiffMinOutputMinus128) {
  // S_in = 0.5: diff_min = -31; d = -31 is kept (exp(-15.5)·256 rounds to 0), d = -32 is dropped.
  EXPECT_EQ(softmax_row({0, -31}, 0.5), (std::vector<int8_t>{127, -128}));
  EXPECT_EQ(softmax_row({0, -32}, 0.5), (std::vector<int8_t>{127, -128}));
  // A smaller diff_min keeps d = -32 in the sum, where it adds nothing visible either.
  SoftmaxParams wide = softmax_params(0.5);
  wide.diff_min = -40;
  EXPECT_EQ(arm_softmax_s8({0, -32}, 1, 2, wide), (std::vector<int8_t>{127, -128}));
  // diff_min = 0 keeps only the maxima: they share p = 1 as if alone.
  SoftmaxParams only_max = softmax_params(0.1);
  only_max.diff_min = 0;
  EXPECT_EQ(arm_softmax_s8({5, 5, 4}, 1, 3, only_max), (std::vector<int8_t>{0, 0, -128}));
}

TEST(CmsisSoftmaxS8, ShiftThirtyOneIsDefinedBecauseOnlyTheMaxIsKept) {
  // S_in = 16: (2^30, 31, 0); 1 << 31 is INT32_MIN but is only multiplied by d = 0.
  EXPECT_EQ(softmax_row({5, 5, 3}, 16), (std::vector<int8_t>{0, 0, -128}));
  EXPECT_EQ(softmax_row({-128, 127}, 40), (std::vector<int8_t>{-128, 127}));
}

TEST(CmsisSoftmaxS8, UniformRowOf512IsUndefined) {
  // semantics §5 item 9: the row sum reaches 2^28, so bits_over_unit = 32.
  const CmsisFault f = refusal([] { uniform_row(512); });
  EXPECT_EQ(f.kernel, "arm_softmax_s8");
  EXPECT_EQ(f.operand, "bits_over_unit (row 0)");
  std::vector<int8_t> rows(2 * 512, 1);
  rows[3] = 100;  // row 0 is dominated by one element: fine; row 1 is uniform
  EXPECT_EQ(refusal([&] { arm_softmax_s8(rows, 2, 512, softmax_params(0.1)); }).operand, "bits_over_unit (row 1)");
}

// Helium's vector lanes take the DIV_POW2 by 32 as 0: a uniform row of 512
// is all -128 (256/512 = 0.5 LSB above it); with a kept element in the
// row's scalar tail (514 = 128·4 + 2) the C shift is still undefined.
TEST(CmsisSoftmaxS8, HeliumVectorLanesDefineTheShiftBy32) {
  const std::vector<int8_t> row(512, 7);
  EXPECT_EQ(arm_softmax_s8(row, 1, 512, softmax_params(0.1), Isa::helium), std::vector<int8_t>(512, -128));
  const std::vector<int8_t> tail(514, 7);
  EXPECT_EQ(refusal([&] { arm_softmax_s8(tail, 1, 514, softmax_params(0.1), Isa::helium); }).operand,
            "bits_over_unit (row 0)");
  const std::vector<int8_t> row516(516, 7);  // 129 vectors of 4: no tail
  EXPECT_EQ(arm_softmax_s8(row516, 1, 516, softmax_params(0.1), Isa::helium), std::vector<int8_t>(516, -128));
  // d·2^shift past int32 wraps in a vector lane (defined) and is undefined in the tail.
  SoftmaxParams wide = softmax_params(0.2);
  ASSERT_EQ(wide.shift, 24);
  wide.diff_min = -255;
  const std::vector<int8_t> lanes{127, -128, 0, 0};
  EXPECT_NO_THROW(arm_softmax_s8(lanes, 1, 4, wide, Isa::helium));
  EXPECT_EQ(refusal([&] { arm_softmax_s8(lanes, 1, 4, wide); }).operand, "input (row 0, column 1)");
  const std::vector<int8_t> in_tail{127, 0, 0, 0, -128};
  EXPECT_EQ(refusal([&] { arm_softmax_s8(in_tail, 1, 5, wide, Isa::helium); }).operand, "input (row 0, column 4)");
  EXPECT_TRUE(arm_softmax_s8({}, 3, 0, softmax_params(0.1), Isa::helium).empty());
  // Below the edge both paths agree.
  const std::vector<int8_t> short_row(100, 7);
  EXPECT_EQ(arm_softmax_s8(short_row, 1, 100, softmax_params(0.1), Isa::helium),
            arm_softmax_s8(short_row, 1, 100, softmax_params(0.1)));
}

TEST(CmsisSoftmaxS8, UniformRowOf4096OverflowsTheSum) {
  const CmsisFault f = refusal([] { uniform_row(4096); });
  EXPECT_EQ(f.kernel, "arm_softmax_s8");
  EXPECT_EQ(f.operand, "sum (row 0)");
}

// diff_min above 0 drops every element, the max included: the row sum is 0,
// which upstream guards (sum > 0 ? sum << headroom : 0; __CLZ(0) is 32), so
// the row is all -128.
TEST(CmsisSoftmaxS8, ARowThatKeepsNoElementIsAllMinus128) {
  SoftmaxParams p = softmax_params(0.1);
  p.diff_min = 1;
  EXPECT_EQ(arm_softmax_s8({1, 2, 5, 5}, 2, 2, p), (std::vector<int8_t>{-128, -128, -128, -128}));
}

TEST(CmsisSoftmaxS8, RefusesUndefinedParameters) {
  SoftmaxParams p = softmax_params(0.1);
  p.shift = 32;
  EXPECT_EQ(refusal([&] { arm_softmax_s8({1, 2}, 1, 2, p); }).operand, "shift");
  p.shift = -1;
  EXPECT_EQ(refusal([&] { arm_softmax_s8({1, 2}, 1, 2, p); }).operand, "shift");
  // A diff_min wider than the lowering's lets d·2^shift overflow: shift 24 keeps d >= -124, not -255.
  p = softmax_params(0.2);
  ASSERT_EQ(p.shift, 24);
  p.diff_min = -255;
  EXPECT_EQ(refusal([&] { arm_softmax_s8({127, -128}, 1, 2, p); }).operand, "input (row 0, column 1)");
  p.diff_min = int64_t{1} << 40;
  EXPECT_EQ(refusal([&] { arm_softmax_s8({1, 2}, 1, 2, p); }).operand, "diff_min");
  EXPECT_EQ(refusal([&] { arm_softmax_s8({}, 3, 0, softmax_params(0.1)); }).operand, "row_size");
  EXPECT_THROW(arm_softmax_s8({1, 2, 3}, 2, 2, softmax_params(0.1)), std::invalid_argument);
}

// NUMERICS.md: softmax within 2 LSB of its fake-quantized float reference
// (semantics §2.2 measured 0 on 3000 rows with S_in in [0.003, 2], n <= 80).
RC_GTEST_PROP(CmsisSoftmaxS8, WithinTwoLsbOfFloatReference, ()) {
  const double s_in = *rc::gen::inRange(3, 2001) / 1000.0;
  const int n = *rc::gen::inRange(1, 81);
  const auto row = *rc::gen::container<std::vector<int8_t>>(n, rc::gen::arbitrary<int8_t>());
  const std::vector<int8_t> got = softmax_row(row, s_in);
  const std::vector<int> want = reference(row, s_in);
  for (size_t i = 0; i < row.size(); ++i) RC_ASSERT(std::abs(got[i] - want[i]) <= 2);
}

}  // namespace
}  // namespace sdpa::cortex_m::cmsis
