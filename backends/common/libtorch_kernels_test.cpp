#include "backends/common/libtorch_kernels.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/aten/math_decomposition.h"
#include "backends/common/sdpa_entry.h"
#include "harness/ir/dtype.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa {
namespace {

using aten::MathDecompositionPass;
using aten::Mutant;

Case masked_case(DType t) {
  Case c;
  c.dtype = t;
  c.q_heads = 2;
  c.kv_heads = 2;
  c.q_len = 3;
  c.kv_len = 4;
  c.head_dim = 8;
  c.value_dim = 8;
  c.mask = MaskSpec{DType::b8, {SymExpr(3), SymExpr(4)}, MaskPattern::full_row, 0.7, MaskFill::neg_inf};
  c.data.seed = 5;
  return c;
}

std::map<std::string, Tensor> inputs(const Case& c) {
  CaseTensors t = make_case_tensors(c, {});
  return {{"q", t.q}, {"k", t.k}, {"v", t.v}, {"attn_mask", *t.mask}};
}

TEST(LibtorchKernels, DecompositionAgreesWithExactInF64) {
  Case c = masked_case(DType::f64);
  Graph d = MathDecompositionPass(Mutant::none).run(sdpa_entry_graph(c), c.shape_env()).graph;
  Tensor torch = interpret(d, libtorch_kernels(), inputs(c), {}).outputs[0];
  Tensor exact = interpret(d, exact_kernels(), inputs(c), {}).outputs[0];
  for (int64_t i = 0; i < exact.numel(); ++i) EXPECT_NEAR(torch.data[i], exact.data[i], 1e-13);
}

TEST(LibtorchKernels, FusedOpGivesNanForAFullyMaskedRow) {
  // The declared divergence of the aten target is real LibTorch 1.13 behaviour.
  Case c = masked_case(DType::f32);
  Tensor out = interpret(sdpa_entry_graph(c), libtorch_kernels(), inputs(c), {}).outputs[0];
  Tensor mask = *make_case_tensors(c, {}).mask;
  int nan_rows = 0;
  for (int64_t row = 0; row < 3; ++row) {
    bool masked = mask.data[row * 4] == 0 && mask.data[row * 4 + 1] == 0 && mask.data[row * 4 + 2] == 0 && mask.data[row * 4 + 3] == 0;
    EXPECT_EQ(std::isnan(out.data[row * 8]), masked);
    nan_rows += masked;
  }
  EXPECT_EQ(nan_rows, 1);
}

// attn_mask, dropout_p and is_causal passed by keyword mean what they mean
// by position, on LibTorch's fused op and on the composition (an explicit
// scale); both ways at once is refused.
TEST(LibtorchKernels, SdpaTakesMaskDropoutAndCausalByKeyword) {
  for (bool scaled : {false, true}) {
    Case c = masked_case(DType::f32);
    if (scaled) c.scale = 0.25;
    const Graph positional = sdpa_entry_graph(c);
    Graph keyword = positional;
    int sdpa = -1;
    for (size_t i = 0; i < keyword.nodes.size(); ++i)
      if (keyword.nodes[i].op == "aten.scaled_dot_product_attention.default") sdpa = static_cast<int>(i);
    ASSERT_GE(sdpa, 0);
    Node& n = keyword.nodes[sdpa];
    ASSERT_GE(n.args.size(), 4u);
    const std::vector<std::string> names = {"attn_mask", "dropout_p", "is_causal"};
    for (size_t a = 3; a < n.args.size(); ++a) n.kwargs.emplace_back(names.at(a - 3), n.args[a]);
    n.args.resize(3);
    const Tensor by_position = interpret(positional, libtorch_kernels(), inputs(c), {}).outputs[0];
    const Tensor by_keyword = interpret(keyword, libtorch_kernels(), inputs(c), {}).outputs[0];
    ASSERT_EQ(by_position.data.size(), by_keyword.data.size());
    for (size_t i = 0; i < by_position.data.size(); ++i)  // NaN rows included (the fused op's fully masked row)
      EXPECT_TRUE(by_position.data[i] == by_keyword.data[i] ||
                  (std::isnan(by_position.data[i]) && std::isnan(by_keyword.data[i])))
          << "scaled " << scaled << " at " << i;
    Graph both = positional;
    both.nodes[sdpa].kwargs.emplace_back("attn_mask", both.nodes[sdpa].args[3]);
    try {
      interpret(both, libtorch_kernels(), inputs(c), {});
      ADD_FAILURE() << "a mask given by position and by keyword was taken";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("got multiple values for argument 'attn_mask'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(LibtorchKernels, HalfIsUnsupportedNotComputedAnotherWay) {
  Case c = masked_case(DType::f16);
  Graph d = MathDecompositionPass(Mutant::none).run(sdpa_entry_graph(c), c.shape_env()).graph;
  // The decomposition upcasts to f32, which LibTorch computes; the fused op in f16 it does not.
  EXPECT_NO_THROW(interpret(d, libtorch_kernels(), inputs(c), {}));
  try {
    interpret(sdpa_entry_graph(c), libtorch_kernels(), inputs(c), {});
    FAIL() << "LibTorch 1.13 computed an f16 bmm on CPU";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.kind, KernelError::Kind::unsupported);
  }
}


// f64 inputs are read in place (no copy into ATen): the graph leaves them
// as they were, and its result is the same as from copies of them.
TEST(LibtorchKernels, F64InputsAreReadInPlaceAndLeftAsTheyWere) {
  Case c = masked_case(DType::f64);
  Graph d = MathDecompositionPass(Mutant::none).run(sdpa_entry_graph(c), c.shape_env()).graph;
  const std::map<std::string, Tensor> in = inputs(c);
  const std::map<std::string, Tensor> copy = in;
  Tensor a = interpret(d, libtorch_kernels(), in, {}).outputs[0];
  Tensor b = interpret(d, libtorch_kernels(), copy, {}).outputs[0];
  EXPECT_EQ(a.data, b.data);
  for (const auto& [name, t] : in) EXPECT_EQ(t.data, inputs(c).at(name).data) << name;
  EXPECT_EQ(a.dtype, DType::f64);
}

// Every harness dtype crosses into ATen and back unchanged, through an op
// whose result is a view (transpose): the element conversions and the
// layout of a strided result.
TEST(LibtorchKernels, EveryDtypeCrossesIntoAtenAndBackExactlyThroughAView) {
  // Values each dtype holds exactly: -0 and a fraction for the float types, the largest finite f16.
  const std::map<DType, std::vector<double>> held = {
      {DType::f64, {-3, 0.5, 1e300, 65504, -0.0, 0.1}}, {DType::f32, {-3, 0.5, 0x1p100, 65504, -0.0, 0x1.fffffep-1}},
      {DType::f16, {-3, 0.5, 0x1p-24, 65504, -0.0, 0x1.ffcp-1}}, {DType::bf16, {-3, 0.5, 0x1p100, 65280, -0.0, 0x1.fep-1}},
      {DType::i8, {-3, 0, 127, -128, 5, 2}}, {DType::i32, {-3, 0, 1 << 30, -7, 5, 2}},
      {DType::i64, {-3, 0, 0x1p52, -7, 5, 2}}, {DType::b8, {1, 0, 1, 1, 0, 0}}};
  for (const auto& [t, values] : held) {
    Tensor x(t, {2, 3});
    x.data = values;
    Graph g;
    ValueRef in = g.placeholder("x", {t, {SymExpr(2), SymExpr(3)}});
    g.outputs = {g.call("aten.transpose.int", {in, int64_t{0}, int64_t{1}}, {}, {{t, {SymExpr(3), SymExpr(2)}}})};
    const Tensor out = interpret(g, libtorch_kernels(), {{"x", x}}, {}).outputs[0];
    ASSERT_EQ(out.shape, (Shape{3, 2})) << dtype_name(t);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_EQ(out.data[j * 2 + i], x.data[i * 3 + j]) << dtype_name(t) << " [" << i << ", " << j << "]";
        EXPECT_EQ(std::signbit(out.data[j * 2 + i]), std::signbit(x.data[i * 3 + j])) << dtype_name(t);
      }
  }
}

// A result that is a view of rank 4 (permute: every stride moved; expand:
// stride-0 dims, the first and an inner one) comes back in row-major order,
// the reference kernels' elements bit for bit.
TEST(LibtorchKernels, ViewsOfAnyRankComeBackInRowMajorOrder) {
  Tensor x(DType::f32, {2, 3, 2, 2});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = i + 1.0;
  Tensor small(DType::f64, {1, 3, 1, 2});
  for (size_t i = 0; i < small.data.size(); ++i) small.data[i] = 10.0 * (i + 1);
  const auto shape_of = [](const Shape& s) {
    SymShape out;
    for (int64_t d : s) out.push_back(SymExpr(d));
    return out;
  };
  struct View {
    const Tensor* in;
    std::string op;
    std::vector<int64_t> arg;
    Shape out;
  };
  const std::vector<View> views = {{&x, "aten.permute.default", {2, 0, 3, 1}, {2, 2, 2, 3}},
                                   {&x, "aten.permute.default", {3, 2, 1, 0}, {2, 2, 3, 2}},
                                   {&small, "aten.expand.default", {2, 3, 4, 2}, {2, 3, 4, 2}}};
  for (const View& v : views) {
    SymShape arg;
    for (int64_t d : v.arg) arg.push_back(SymExpr(d));
    Graph g;
    ValueRef in = g.placeholder("x", {v.in->dtype, shape_of(v.in->shape)});
    g.outputs = {g.call(v.op, {in, arg}, {}, {{v.in->dtype, shape_of(v.out)}})};
    const Tensor got = interpret(g, libtorch_kernels(), {{"x", *v.in}}, {}).outputs[0];
    const Tensor want = interpret(g, exact_kernels(), {{"x", *v.in}}, {}).outputs[0];
    EXPECT_EQ(got.shape, v.out) << v.op;
    EXPECT_EQ(got.data, want.data) << v.op;
  }
}

// A value the dtype cannot hold is rounded by ATen's own conversion op, to
// the nearest value of the dtype (ties to even), as the harness rounds it.
TEST(LibtorchKernels, ToCopyRoundsAsTheHarnessRounds) {
  Tensor x(DType::f32, {4});
  x.data = {1.0 / 3, 1 + 0x1p-8, 1 + 0x1p-8 + 0x1p-20, 70000};  // a tie in bf16, the same just above, f16 overflow
  for (DType t : {DType::bf16, DType::f16}) {
    Graph g;
    ValueRef in = g.placeholder("x", {DType::f32, {SymExpr(4)}});
    g.outputs = {g.call("aten._to_copy.default", {in}, {{"dtype", t}}, {{t, {SymExpr(4)}}})};
    for (double& v : x.data) v = static_cast<float>(v);
    const Tensor out = interpret(g, libtorch_kernels(), {{"x", x}}, {}).outputs[0];
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out.data[i], round_to(t, x.data[i])) << dtype_name(t) << " " << i;
  }
}

// _safe_softmax: 0 on exactly the rows whose every element is -inf in the
// input's dtype, along a dim that is not the last too; any other row is
// ATen's softmax (NaN stays NaN). -3.5e38 is -inf once converted to f32 or bf16.
TEST(LibtorchKernels, SafeSoftmaxZeroesExactlyTheRowsThatAreAllMinusInf) {
  const double inf = INFINITY;
  Tensor x(DType::f32, {3, 2});  // along dim 0: columns; along dim -1: rows
  x.data = {-inf, -inf,  //
            -inf, 0.5,   //
            -3.5e38, -inf};
  for (DType t : {DType::f32, DType::bf16, DType::f64}) {
    Tensor in = x;
    in.dtype = t;
    for (int64_t dim : {int64_t{-1}, int64_t{0}}) {
      Graph g;
      ValueRef v = g.placeholder("x", {t, {SymExpr(3), SymExpr(2)}});
      g.outputs = {g.call("aten._safe_softmax.default", {v, dim}, {}, {{t, {SymExpr(3), SymExpr(2)}}})};
      const Tensor out = interpret(g, libtorch_kernels(), {{"x", in}}, {}).outputs[0];
      const std::string at = std::string(dtype_name(t)) + " dim " + std::to_string(dim);
      if (dim == -1) {
        EXPECT_EQ(out.data[0], 0.0) << at;
        EXPECT_EQ(out.data[1], 0.0) << at;
        EXPECT_EQ(out.data[2], 0.0) << at;
        EXPECT_EQ(out.data[3], 1.0) << at;
        // -3.5e38 is finite in f64: a softmax row of (1, 0); -inf in f32 and bf16.
        EXPECT_EQ(out.data[4], t == DType::f64 ? 1.0 : 0.0) << at;
        EXPECT_EQ(out.data[5], 0.0) << at;
      } else {
        // Column 0 is all -inf but in f64; column 1 holds 0.5.
        for (int64_t r = 0; r < 3; ++r) EXPECT_EQ(out.data[r * 2 + 1], r == 1 ? 1.0 : 0.0) << at << " row " << r;
        EXPECT_EQ(out.data[4], t == DType::f64 ? 1.0 : 0.0) << at;
        EXPECT_EQ(out.data[0] + out.data[2], 0.0) << at;
      }
    }
  }
  Tensor nan(DType::f32, {1, 2});
  nan.data = {-inf, NAN};
  Graph g;
  ValueRef v = g.placeholder("x", {DType::f32, {SymExpr(1), SymExpr(2)}});
  g.outputs = {g.call("aten._safe_softmax.default", {v, int64_t{-1}}, {}, {{DType::f32, {SymExpr(1), SymExpr(2)}}})};
  const Tensor out = interpret(g, libtorch_kernels(), {{"x", nan}}, {}).outputs[0];
  EXPECT_TRUE(std::isnan(out.data[1]));
}

Tensor safe_softmax_of(const Tensor& x, int64_t dim) {
  Graph g;
  SymShape shape;
  for (int64_t d : x.shape) shape.push_back(SymExpr(d));
  ValueRef v = g.placeholder("x", {x.dtype, shape});
  g.outputs = {g.call("aten._safe_softmax.default", {v, dim}, {}, {{x.dtype, shape}})};
  return interpret(g, libtorch_kernels(), {{"x", x}}, {}).outputs[0];
}

// A 0-d tensor is one row of one element; along the middle dim of a rank-3
// tensor the rows are strided with dims before and after it; an empty dim
// gives an empty result.
TEST(LibtorchKernels, SafeSoftmaxTakesAnyRankAndDim) {
  const double inf = INFINITY;
  Tensor scalar(DType::f32, {});
  for (int64_t dim : {int64_t{0}, int64_t{-1}}) {
    scalar.data = {-inf};
    EXPECT_EQ(safe_softmax_of(scalar, dim).data, std::vector<double>{0.0}) << dim;
    scalar.data = {2.0};
    EXPECT_EQ(safe_softmax_of(scalar, dim).data, std::vector<double>{1.0}) << dim;
  }
  // x[a][b][c] = -inf but for x[0][1][1] = 0 and x[1][0][0] = 0: along dim 1
  // the rows (a, c) = (0, 1) and (1, 0) hold a 0; the other two are all -inf.
  Tensor x(DType::f64, {2, 2, 2}, -inf);
  x.data[0 * 4 + 1 * 2 + 1] = 0;
  x.data[1 * 4 + 0 * 2 + 0] = 0;
  const Tensor out = safe_softmax_of(x, 1);
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 2; ++c)
        EXPECT_EQ(out.data[a * 4 + b * 2 + c], x.data[a * 4 + b * 2 + c] == 0 ? 1.0 : 0.0) << a << b << c;
  EXPECT_EQ(safe_softmax_of(Tensor(DType::f32, {2, 0, 3}), 1).numel(), 0);
}

Tensor repeat_interleave_on(const KernelSet& k, const Tensor& x, int64_t repeats, int64_t dim) {
  SymShape in, out;
  for (int64_t d : x.shape) in.push_back(SymExpr(d));
  out = in;
  const auto wrapped = static_cast<size_t>(dim < 0 ? dim + x.dim() : dim);
  out[wrapped] = SymExpr(x.shape[wrapped] * repeats);
  Graph g;
  ValueRef v = g.placeholder("x", {x.dtype, in});
  g.outputs = {g.call("aten.repeat_interleave.self_int", {v, repeats, dim}, {}, {{x.dtype, out}})};
  return interpret(g, k, {{"x", x}}, {}).outputs[0];
}

// Each slice along dim repeated in place (x[0], x[0], x[1], x[1], not
// x[0], x[1], x[0], x[1]), along every dim, negative ones included, for
// counts 0 to 3 and in each dtype: the elements of the reference kernel,
// bit for bit. A negative count is ATen's own error.
TEST(LibtorchKernels, RepeatInterleaveRepeatsEachSliceInPlace) {
  for (DType t : {DType::f32, DType::bf16, DType::f64, DType::b8, DType::i64}) {
    Tensor x(t, {2, 3, 2});
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = t == DType::b8 ? static_cast<double>(i % 3 == 0) : i + 1.0;
    for (int64_t dim = -3; dim < 3; ++dim)
      for (int64_t repeats = 0; repeats <= 3; ++repeats) {
        const Tensor got = repeat_interleave_on(libtorch_kernels(), x, repeats, dim);
        const Tensor want = repeat_interleave_on(exact_kernels(), x, repeats, dim);
        const std::string at = std::string(dtype_name(t)) + " dim " + std::to_string(dim) + " repeats " +
                               std::to_string(repeats);
        EXPECT_EQ(got.shape, want.shape) << at;
        EXPECT_EQ(got.data, want.data) << at;
      }
  }
  // Along dim 1 of [1, 2, 1] = (1, 2), twice: 1, 1, 2, 2.
  Tensor pair(DType::f32, {1, 2, 1});
  pair.data = {1, 2};
  EXPECT_EQ(repeat_interleave_on(libtorch_kernels(), pair, 2, 1).data, (std::vector<double>{1, 1, 2, 2}));
  try {
    repeat_interleave_on(libtorch_kernels(), pair, -1, 1);
    ADD_FAILURE() << "a negative count ran";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.kind, KernelError::Kind::unsupported);
    EXPECT_NE(std::string(e.what()).find("LibTorch: "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sdpa
