#include "harness/ir/kernels/reference_kernels.h"

#include <gtest/gtest.h>

#include <cmath>

#include "harness/ir/interpreter.h"

namespace sdpa {
namespace {

Tensor tensor(DType t, Shape s, std::vector<double> v) {
  Tensor x(t, std::move(s));
  x.data = std::move(v);
  return x;
}

SymShape sym(const Shape& s) {
  SymShape out;
  for (int64_t d : s) out.push_back(d);
  return out;
}

// Runs one op on inputs x0, x1, ... and returns its first output.
Tensor run(const KernelSet& k, const std::string& op, std::vector<Tensor> inputs,
           std::vector<Arg> extra, DType out, Shape out_shape,
           std::vector<std::pair<std::string, Arg>> kwargs = {}) {
  Graph g;
  std::vector<Arg> args;
  std::map<std::string, Tensor> bound;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    args.push_back(g.placeholder(name, {inputs[i].dtype, sym(inputs[i].shape)}));
    bound[name] = inputs[i];
  }
  args.insert(args.end(), extra.begin(), extra.end());
  g.outputs = {g.call(op, args, kwargs, {{out, sym(out_shape)}})};
  return interpret(g, k, bound, {}).outputs[0];
}

TEST(ReferenceKernels, EmulatedMatmulRoundsToBf16ExactDoesNot) {
  KernelSet emulated = make_reference_kernels("t", Numerics::emulated);
  Tensor a = tensor(DType::bf16, {1, 2}, {1.0, 1.0});
  Tensor b = tensor(DType::bf16, {2, 1}, {1.0, std::ldexp(1.0, -9)});
  EXPECT_EQ(run(emulated, "aten.matmul.default", {a, b}, {}, DType::bf16, {1, 1}).data[0], 1.0);
  EXPECT_EQ(run(exact_kernels(), "aten.matmul.default", {a, b}, {}, DType::bf16, {1, 1}).data[0],
            1.0 + std::ldexp(1.0, -9));
}

TEST(ReferenceKernels, ConstantPadAndSliceOfTheLastDimUndoEachOther) {
  const KernelSet k = make_reference_kernels("exact", Numerics::exact);
  Tensor x = tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor padded = run(k, "aten.constant_pad_nd.default", {x}, {SymShape{SymExpr(0), SymExpr(2)}, 0.0},
                      DType::f32, {2, 5});
  EXPECT_EQ(padded.shape, (Shape{2, 5}));
  EXPECT_EQ(padded.data, (std::vector<double>{1, 2, 3, 0, 0, 4, 5, 6, 0, 0}));
  Tensor back = run(k, "aten.slice.Tensor", {padded}, {int64_t{-1}, int64_t{0}, int64_t{3}}, DType::f32, {2, 3});
  EXPECT_EQ(back.data, x.data);
  Tensor tail = run(k, "aten.slice.Tensor", {padded}, {int64_t{1}, int64_t{2}, int64_t{9}}, DType::f32, {2, 3});
  EXPECT_EQ(tail.data, (std::vector<double>{3, 0, 0, 6, 0, 0}));  // end clamped to the size
}

TEST(ReferenceKernels, SafeSoftmaxZeroesFullyMaskedRows) {
  Tensor x = tensor(DType::f32, {2, 2}, {0.0, 0.0, -INFINITY, -INFINITY});
  Tensor safe = run(exact_kernels(), "aten._safe_softmax.default", {x}, {int64_t{-1}}, DType::f32, {2, 2});
  EXPECT_EQ(safe.data, (std::vector<double>{0.5, 0.5, 0.0, 0.0}));
  Tensor plain = run(exact_kernels(), "aten._softmax.default", {x}, {int64_t{-1}, false}, DType::f32, {2, 2});
  EXPECT_TRUE(std::isnan(plain.data[2]));
}

TEST(ReferenceKernels, RepeatInterleaveVersusRepeat) {
  Tensor x = tensor(DType::f32, {2, 1}, {1.0, 2.0});
  EXPECT_EQ(run(exact_kernels(), "aten.repeat_interleave.self_int", {x}, {int64_t{2}, int64_t{0}}, DType::f32, {4, 1}).data,
            (std::vector<double>{1, 1, 2, 2}));
  EXPECT_EQ(run(exact_kernels(), "aten.repeat.default", {x}, {SymShape{SymExpr(2), SymExpr(1)}}, DType::f32, {4, 1}).data,
            (std::vector<double>{1, 2, 1, 2}));
}

TEST(ReferenceKernels, SdpaCausalIsTopLeftAndGqaInterleaves) {
  // q [1 head, 2 rows, E=1], k/v [2 keys]: causal row 0 sees key 0 only.
  Tensor q = tensor(DType::f64, {1, 2, 1}, {1.0, 1.0});
  Tensor k = tensor(DType::f64, {1, 3, 1}, {0.0, 1.0, 2.0});
  Tensor v = tensor(DType::f64, {1, 3, 1}, {10.0, 20.0, 30.0});
  Tensor out = run(exact_kernels(), "aten.scaled_dot_product_attention.default", {q, k, v},
                   {None{}, 0.0, true}, DType::f64, {1, 2, 1});
  EXPECT_EQ(out.data[0], 10.0);
  double w0 = std::exp(0.0), w1 = std::exp(1.0);
  EXPECT_NEAR(out.data[1], (10 * w0 + 20 * w1) / (w0 + w1), 1e-12);

  // Hq 4, Hkv 2: heads 0,1 read kv head 0, heads 2,3 read kv head 1.
  Tensor q4 = tensor(DType::f64, {4, 1, 1}, {1, 1, 1, 1});
  Tensor k2 = tensor(DType::f64, {2, 1, 1}, {0, 0});
  Tensor v2 = tensor(DType::f64, {2, 1, 1}, {5, 7});
  Tensor gqa = run(exact_kernels(), "aten.scaled_dot_product_attention.default", {q4, k2, v2},
                   {None{}, 0.0, false}, DType::f64, {4, 1, 1}, {{"enable_gqa", true}});
  EXPECT_EQ(gqa.data, (std::vector<double>{5, 5, 7, 7}));
}

TEST(ReferenceKernels, SdpaFullyMaskedRowIsZero) {
  Tensor q = tensor(DType::f32, {1, 2, 1}, {1.0, 1.0});
  Tensor k = tensor(DType::f32, {1, 2, 1}, {1.0, 2.0});
  Tensor v = tensor(DType::f32, {1, 2, 1}, {3.0, 4.0});
  Tensor mask = tensor(DType::b8, {2, 2}, {1, 1, 0, 0});
  Tensor out = run(make_reference_kernels("n", Numerics::emulated), "aten.scaled_dot_product_attention.default",
                   {q, k, v, mask}, {0.0, false}, DType::f32, {1, 2, 1});
  EXPECT_EQ(out.data[1], 0.0);
  EXPECT_GT(out.data[0], 3.0);
}

}  // namespace
}  // namespace sdpa
