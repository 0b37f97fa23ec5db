#include "backends/common/libtorch_kernels.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/aten/math_decomposition.h"
#include "backends/common/sdpa_entry.h"
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

}  // namespace
}  // namespace sdpa
