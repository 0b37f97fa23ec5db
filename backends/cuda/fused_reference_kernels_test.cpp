// The exact reference kernels of the fused variants against hand-computed
// outputs: flash aligns causal bottom-right, efficient and cuDNN top-left;
// each returns the logsumexp of its rows.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/fused_entry.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cuda {
namespace {

SymShape sym(const Shape& s) {
  SymShape out;
  for (int64_t d : s) out.push_back(d);
  return out;
}

// q [1, 1, 2, 4] all zero: every kept key scores 0, so a row's output is the
// mean of its kept v rows and its logsumexp log(kept count). k [1, 1, 4, 4]
// zero, v row j = (j, j, j, j).
struct Inputs {
  Tensor q{DType::f32, {1, 1, 2, 4}, 0.0}, k{DType::f32, {1, 1, 4, 4}, 0.0}, v{DType::f32, {1, 1, 4, 4}, 0.0};
  Inputs() {
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t e = 0; e < 4; ++e) v.data[j * 4 + e] = static_cast<double>(j);
  }
};

std::vector<Tensor> run_fused(const std::string& op, std::vector<Arg> tail, SymShape lse_shape) {
  Inputs in;
  Graph g;
  std::vector<Arg> args{g.placeholder("q", {DType::f32, sym(in.q.shape)}),
                        g.placeholder("k", {DType::f32, sym(in.k.shape)}),
                        g.placeholder("v", {DType::f32, sym(in.v.shape)})};
  args.insert(args.end(), tail.begin(), tail.end());
  ValueRef out = g.call(op, args, {}, {{DType::f32, sym({1, 1, 2, 4})}, {DType::f32, lse_shape}});
  g.outputs = {out, ValueRef{out.node, 1}};
  return interpret(g, exact_kernels(), {{"q", in.q}, {"k", in.k}, {"v", in.v}}, {}).outputs;
}

void expect_row(const std::vector<Tensor>& out, int64_t row, double mean, int kept) {
  for (int64_t e = 0; e < 4; ++e) EXPECT_NEAR(out[0].data[row * 4 + e], mean, 1e-15) << "row " << row;
  EXPECT_NEAR(out[1].data[row], std::log(static_cast<double>(kept)), 1e-15) << "row " << row;
}

TEST(FusedReferenceKernels, FlashCausalIsBottomRight) {
  // Row 0 keeps keys {0, 1, 2} (j <= 0 + 4 - 2), row 1 all four.
  auto out = run_fused(kFlashOp, {0.0, true, false}, sym({1, 1, 2}));
  expect_row(out, 0, 1.0, 3);
  expect_row(out, 1, 1.5, 4);
}

TEST(FusedReferenceKernels, EfficientCausalIsTopLeft) {
  // Row 0 keeps key {0}, row 1 keys {0, 1}.
  auto out = run_fused(kEfficientOp, {None{}, true, 0.0, true}, sym({1, 1, 2}));
  expect_row(out, 0, 0.0, 1);
  expect_row(out, 1, 0.5, 2);
}

TEST(FusedReferenceKernels, CudnnCausalIsTopLeftWithLseOfShapeLqBy1) {
  auto out = run_fused(kCudnnOp, {None{}, true, 0.0, true, false}, sym({1, 1, 2, 1}));
  expect_row(out, 0, 0.0, 1);
  expect_row(out, 1, 0.5, 2);
}

TEST(FusedReferenceKernels, EfficientWithoutLogSumExpLeavesItEmpty) {
  auto out = run_fused(kEfficientOp, {None{}, false, 0.0, false}, sym({1, 1, 0}));
  EXPECT_EQ(out[1].numel(), 0);
  expect_row({out[0], Tensor(DType::f32, {2}, std::log(4.0))}, 0, 1.5, 4);
}

TEST(FusedReferenceKernels, EfficientAddsItsBiasAndCausalTogether) {
  // Bias -inf on key 0 of row 1; causal top-left: row 1 keeps only key 1.
  Inputs in;
  Tensor bias(DType::f32, {1, 1, 2, 4}, 0.0);
  bias.data[4] = -INFINITY;
  Graph g;
  ValueRef q = g.placeholder("q", {DType::f32, sym(in.q.shape)}), k = g.placeholder("k", {DType::f32, sym(in.k.shape)}),
           v = g.placeholder("v", {DType::f32, sym(in.v.shape)}), b = g.placeholder("b", {DType::f32, sym(bias.shape)});
  ValueRef out = g.call(kEfficientOp, {q, k, v, b, true, 0.0, true}, {},
                        {{DType::f32, sym({1, 1, 2, 4})}, {DType::f32, sym({1, 1, 2})}});
  g.outputs = {out, ValueRef{out.node, 1}};
  auto r = interpret(g, exact_kernels(), {{"q", in.q}, {"k", in.k}, {"v", in.v}, {"b", bias}}, {}).outputs;
  expect_row(r, 0, 0.0, 1);
  expect_row(r, 1, 1.0, 1);
}

TEST(FusedReferenceKernels, EfficientRefusesDifferentHeadCounts) {
  Graph g;
  ValueRef q = g.placeholder("q", {DType::f32, sym({1, 2, 1, 1})}), k = g.placeholder("k", {DType::f32, sym({1, 1, 1, 1})}),
           v = g.placeholder("v", {DType::f32, sym({1, 1, 1, 1})});
  g.outputs = {g.call(kEfficientOp, {q, k, v, None{}, false, 0.0, false}, {},
                      {{DType::f32, sym({1, 2, 1, 1})}, {DType::f32, sym({1, 2, 0})}})};
  Tensor x(DType::f32, {1, 1, 1, 1}, 1.0), y(DType::f32, {1, 2, 1, 1}, 1.0);
  EXPECT_THROW(interpret(g, exact_kernels(), {{"q", y}, {"k", x}, {"v", x}}, {}), KernelError);
}

}  // namespace
}  // namespace sdpa::cuda
