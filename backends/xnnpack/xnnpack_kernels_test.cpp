// The `xnnpack` kernel set: a real XNNPACK operator computes a bmm of a
// pattern graph, XNNPACK's status codes become findings, and the SDPA
// operator model refuses what the removed operator refused.
#include "backends/xnnpack/xnnpack_kernels.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "backends/common/sdpa_entry.h"
#include "backends/xnnpack/convert_to_sdpa_pass.h"
#include "backends/xnnpack/pattern_entry.h"
#include "backends/xnnpack/test_cases.h"
#include "backends/xnnpack/xnn/xnnpack_ops.h"
#include "harness/case/tensor_data.h"
#include "harness/ir/interpreter.h"

namespace sdpa::xnnpack {
namespace {

using testing::masked_call;
using testing::with_variant;

std::map<std::string, Tensor> inputs_of(const Case& c) {
  CaseTensors t = make_case_tensors(c, c.runs()[0]);
  std::map<std::string, Tensor> in{{"q", t.q}, {"k", t.k}, {"v", t.v}};
  if (t.mask) in["attn_mask"] = *t.mask;
  return in;
}

FloatTensor as_float(const Tensor& t) {
  FloatTensor f{t.shape, {}};
  for (double x : t.data) f.data.push_back(static_cast<float>(x));
  return f;
}

TEST(XnnpackKernels, ARealXnnpackOperatorComputesTheQkBmmOfAPatternGraph) {
  for (DType t : {DType::f32, DType::f16}) {
    const Case c = masked_call(8, t);
    const Graph g = pattern_entry_graph(c);
    const KernelSet k = make_xnnpack_kernels();
    Execution run = interpret(g, k, inputs_of(c), RunContext{{}, c.data.seed}, /*keep_values=*/true);
    int bmm = -1;
    for (int i = 0; i < static_cast<int>(g.nodes.size()) && bmm < 0; ++i)
      if (g.nodes[i].op == kBmm) bmm = i;
    ASSERT_GE(bmm, 0);
    const Node& n = g.nodes[bmm];
    const Tensor& a = run.values[std::get<ValueRef>(n.args[0]).node][0];
    const Tensor& b = run.values[std::get<ValueRef>(n.args[1]).node][0];
    // The same operands through the library directly, bit for bit.
    FloatTensor direct = xnnpack::bmm(as_float(a), as_float(b), t == DType::f16 ? Precision::f16 : Precision::f32);
    const Tensor& got = run.values[bmm][0];
    ASSERT_EQ(got.shape, direct.shape);
    for (size_t i = 0; i < direct.data.size(); ++i) ASSERT_EQ(got.data[i], direct.data[i]) << i;
    // And it is the product: within the GEMM's rounding of the exact sum.
    double worst = 0;
    const int64_t M = a.shape[1], K = a.shape[2], N = b.shape[2];
    for (int64_t bb = 0; bb < a.shape[0]; ++bb)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double exact = 0;
          for (int64_t e = 0; e < K; ++e) exact += a.data[(bb * M + i) * K + e] * b.data[(bb * K + e) * N + j];
          worst = std::max(worst, std::fabs(exact - got.data[(bb * M + i) * N + j]));
        }
    EXPECT_LT(worst, t == DType::f16 ? 0.05 : 1e-5) << dtype_name(t);
    PartitionCounts counts = partition_counts(g);
    std::printf("%s qk pattern graph: %d nodes on XNNPACK, %d portable\n", dtype_name(t), counts.delegated,
                counts.portable);
  }
}

TEST(XnnpackKernels, AnXnnpackStatusBecomesAKernelErrorNamingIt) {
  Graph g;
  ValueRef a = g.placeholder("a", {DType::f32, {SymExpr(1), SymExpr(2), SymExpr(0)}});
  ValueRef b = g.placeholder("b", {DType::f32, {SymExpr(1), SymExpr(0), SymExpr(3)}});
  g.outputs = {g.call(kBmm, {a, b}, {}, {{DType::f32, {SymExpr(1), SymExpr(2), SymExpr(3)}}})};
  try {
    interpret(g, make_xnnpack_kernels(), {{"a", Tensor(DType::f32, {1, 2, 0})}, {"b", Tensor(DType::f32, {1, 0, 3})}},
              RunContext{});
    FAIL() << "XNNPACK takes no zero input channels";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.kind, KernelError::Kind::recoverable);
    EXPECT_NE(std::string(e.what()).find("xnn_status_invalid_parameter"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("%bmm"), std::string::npos) << e.what();
  }
}

TEST(XnnpackKernels, TheSdpaOperatorRefusesAFourDimKeyWithOneHead) {
  Case c = masked_call(8);
  c.kv_heads = 1;  // MQA: the visitor hands XNNPACK a 4-D key with 1 head != 2
  const Graph g = ConvertToSDPAPass().run(pattern_entry_graph(c), c.shape_env()).graph;
  ASSERT_EQ(g.count(kSdpaOp), 1);
  try {
    interpret(g, make_xnnpack_kernels(), inputs_of(c), RunContext{{}, c.data.seed});
    FAIL();
  } catch (const KernelError& e) {
    EXPECT_EQ(e.kind, KernelError::Kind::recoverable);
    EXPECT_NE(std::string(e.what()).find("xnn_status_invalid_parameter"), std::string::npos) << e.what();
  }
}

// SDPAConfig supported FP32 only (semantics §3.3): an f16 SDPA is not
// delegated, and no portable kernel runs it.
TEST(XnnpackKernels, AnF16ConvertedSdpaIsNotRunOnTheOperator) {
  Case c = masked_call(16, DType::f16);
  c.q_len = 4;
  c.mask->shape = {SymExpr(4), SymExpr(4)};
  const Graph g = ConvertToSDPAPass().run(pattern_entry_graph(c), c.shape_env()).graph;
  ASSERT_EQ(g.count(kSdpaOp), 1);
  EXPECT_FALSE(runs_on_xnnpack(kSdpaOp, DType::f16));
  EXPECT_EQ(partition_counts(g).delegated, 0);
  try {
    interpret(g, make_xnnpack_kernels(), inputs_of(c), RunContext{{}, c.data.seed});
    FAIL() << "the f16 node ran";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.kind, KernelError::Kind::unsupported);
    EXPECT_NE(std::string(e.what()).find("SDPAConfig supports FP32 only"), std::string::npos) << e.what();
  }
  // The same call in f32 runs on the operator model.
  Case f32 = c;
  f32.dtype = f32.mask->dtype = DType::f32;
  const Graph h = ConvertToSDPAPass().run(pattern_entry_graph(f32), f32.shape_env()).graph;
  EXPECT_EQ(interpret(h, make_xnnpack_kernels(), inputs_of(f32), RunContext{{}, f32.data.seed}).outputs.size(), 1u);
}

TEST(XnnpackKernels, DelegatedAndPortableNodesPerVariant) {
  for (const auto& v : pattern_variants()) {
    const Graph g = pattern_entry_graph(with_variant(masked_call(), v.name));
    PartitionCounts counts = partition_counts(g);
    EXPECT_EQ(counts.delegated, 3) << v.name << ": two bmm and the softmax";
    std::printf("%-13s entry: %d on XNNPACK, %d portable\n", v.name.c_str(), counts.delegated, counts.portable);
  }
  const Case c = masked_call();
  PartitionCounts converted = partition_counts(ConvertToSDPAPass().run(pattern_entry_graph(c), c.shape_env()).graph);
  EXPECT_EQ(converted.delegated, 1);
  EXPECT_EQ(converted.portable, 0);
}

}  // namespace
}  // namespace sdpa::xnnpack
