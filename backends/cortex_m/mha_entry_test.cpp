// The mha entry form (nn.MultiheadAttention, need_weights=False): its exact
// run is out_proj(SDPA(in_proj(x))) computed by hand here (independently of
// the harness's composite, mha_composite.h), the passes on it, and the §1.6
// regression: a retraced folded linear's int32 output meeting the int8
// softmax output at the second attention bmm is a type error naming the node.
#include "backends/cortex_m/mha_entry.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/cortex_m/cmsis_kernels.h"
#include "backends/cortex_m/decompose_sdpa_pass.h"
#include "backends/cortex_m/matmul_to_bmm_pass.h"
#include "backends/cortex_m/quantize_lower_pass.h"
#include "harness/ir/graph_verify.h"
#include "harness/ir/interpreter.h"

namespace sdpa::cortex_m {
namespace {

Case mha_case() {
  Case c;
  c.batch = {SymExpr(2)};
  c.q_heads = c.kv_heads = 2;
  c.q_len = 3;
  c.kv_len = 4;
  c.head_dim = c.value_dim = 4;
  c.data.seed = 7;
  return c;
}

// x [rows, D] · wᵀ + b, in double.
std::vector<double> project(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t d = w.shape[0], rows = x.numel() / d;
  std::vector<double> out(rows * d);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < d; ++o) {
      double acc = b.data[o];
      for (int64_t i = 0; i < d; ++i) acc += x.data[r * d + i] * w.data[o * d + i];
      out[r * d + o] = acc;
    }
  return out;
}

// nn.MultiheadAttention's forward written out: the golden of the mha form.
std::vector<double> mha_golden(const Case& c) {
  auto in = mha_inputs(c);
  auto p = [&](const char* n) { return mha_parameter(c, n); };
  const std::vector<double> q = project(in["query"], p("w_q"), p("b_q"));
  const std::vector<double> k = project(in["key"], p("w_k"), p("b_k"));
  const std::vector<double> v = project(in["value"], p("w_v"), p("b_v"));
  const int64_t B = c.batch[0].constant(), H = c.q_heads, E = c.head_dim, D = H * E;
  const int64_t Lq = c.q_len.constant(), Lk = c.kv_len.constant();
  const double scale = 1 / std::sqrt(static_cast<double>(E));
  Tensor merged(DType::f32, {B, Lq, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        std::vector<double> s(Lk);
        double mx = -INFINITY, total = 0;
        for (int64_t j = 0; j < Lk; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += q[(b * Lq + i) * D + h * E + e] * k[(b * Lk + j) * D + h * E + e];
          s[j] = dot * scale;
          mx = std::fmax(mx, s[j]);
        }
        for (double& x : s) total += (x = std::exp(x - mx));
        for (int64_t e = 0; e < E; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < Lk; ++j) acc += s[j] / total * v[(b * Lk + j) * D + h * E + e];
          merged.data[(b * Lq + i) * D + h * E + e] = acc;
        }
      }
  return project(merged, p("w_o"), p("b_o"));
}

double max_abs_diff(const Tensor& t, const std::vector<double>& want) {
  EXPECT_EQ(t.data.size(), want.size());
  double m = 0;
  for (size_t i = 0; i < want.size() && i < t.data.size(); ++i) m = std::fmax(m, std::fabs(t.data[i] - want[i]));
  return m;
}

double max_abs(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::fmax(m, std::fabs(v));
  return m;
}

int count(const Graph& g, const std::string& op) { return g.count(op); }

Graph float_pipeline(const Graph& entry, const ShapeEnv& env, std::vector<Decision>* decisions = nullptr) {
  Pass::Result d = DecomposeSdpaPass(Policy::decompose, std::nullopt).run(entry, env);
  if (decisions) *decisions = d.decisions;
  return MatmulToBmmPass().run(d.graph, env).graph;
}

// The float graph carrying its example inputs, as the cortex-m entry does for the quantizer.
Graph with_examples(Graph g, const Case& c) {
  for (const auto& [name, t] : mha_inputs(c)) g.constants[std::string(kExamplePrefix) + name] = t;
  return g;
}

TEST(MhaEntry, RefusesWhatTheModuleCannotExpress) {
  EXPECT_FALSE(mha_refuses(mha_case()));
  Case c = mha_case();
  c.kv_heads = 1;
  EXPECT_TRUE(mha_refuses(c));
  c = mha_case();
  c.value_dim = 8;
  EXPECT_TRUE(mha_refuses(c));
  c = mha_case();
  c.scale = 0.5;
  EXPECT_TRUE(mha_refuses(c));
  c = mha_case();
  c.is_causal = true;
  EXPECT_TRUE(mha_refuses(c));
  EXPECT_THROW(mha_entry_graph(c), std::invalid_argument);
}

TEST(MhaEntry, ExactRunIsOutProjOfSdpaOfInProj) {
  const Case c = mha_case();
  const Graph g = mha_entry_graph(c);
  EXPECT_TRUE(verify_graph(g).empty());
  EXPECT_EQ(count(g, kLinearOp), 4);
  EXPECT_EQ(count(g, "aten.scaled_dot_product_attention.default"), 1);
  const std::vector<double> want = mha_golden(c);
  Execution e = interpret(g, exact_cortex_m_kernels(), mha_inputs(c), RunContext{});
  EXPECT_LT(max_abs_diff(e.outputs.at(0), want), 1e-12 * max_abs(want));
  // Distinct streams: the four projections differ.
  EXPECT_NE(mha_parameter(c, "w_q").data, mha_parameter(c, "w_k").data);
  EXPECT_NE(mha_parameter(c, "b_v").data, mha_parameter(c, "b_o").data);
}

TEST(MhaPasses, DecomposeAcceptsTheInnerSdpaAndTheFloatGraphKeepsItsMeaning) {
  const Case c = mha_case();
  std::vector<Decision> decisions;
  const Graph g = float_pipeline(mha_entry_graph(c), c.shape_env(), &decisions);
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_TRUE(decisions[0].rewrite);
  EXPECT_EQ(count(g, "aten.scaled_dot_product_attention.default"), 0);
  EXPECT_EQ(count(g, "aten.bmm.default"), 2);
  EXPECT_EQ(count(g, kLinearOp), 4);
  EXPECT_TRUE(verify_graph(g).empty());
  const std::vector<double> want = mha_golden(c);
  EXPECT_LT(max_abs_diff(interpret(g, exact_cortex_m_kernels(), mha_inputs(c), RunContext{}).outputs.at(0), want),
            1e-12 * max_abs(want));
  // The portable fp32 kernels: within fp32 rounding of the golden.
  EXPECT_LT(max_abs_diff(interpret(g, cmsis_nn_kernels(), mha_inputs(c), RunContext{}).outputs.at(0), want),
            1e-5 * max_abs(want));
}

TEST(MhaQuantized, TheAttentionBmmsAreQuantizedAndTheLinearsStayFloat) {
  const Case c = mha_case();
  const Graph f = with_examples(float_pipeline(mha_entry_graph(c), c.shape_env()), c);
  const Graph l = QuantizeLowerPass(QuantizerConfig{}).run(f, c.shape_env()).graph;
  EXPECT_EQ(count(l, kBmmOp), 2);
  EXPECT_EQ(count(l, kSoftmaxOp), 1);
  EXPECT_EQ(count(l, kMulOp), 1);
  EXPECT_EQ(count(l, kLinearOp), 4);
  for (const Node& n : l.nodes)
    if (n.op == kLinearOp) {
      EXPECT_EQ(n.outputs[0].dtype, DType::f32) << n.name;
    }
  EXPECT_TRUE(verify_graph(l).empty());
  EXPECT_TRUE(retrace_type_errors(l).empty());
  const std::vector<double> want = mha_golden(c);
  const double err = max_abs_diff(interpret(l, cmsis_nn_kernels(), mha_inputs(c), RunContext{}).outputs.at(0), want);
  std::printf("mha int8 attention: max error %.4g of max |out| %.4g\n", err, max_abs(want));
  EXPECT_LT(err, 0.1 * max_abs(want));
  EXPECT_GT(err, 0.0);  // int8 attention is not exact
}

Graph folded_linears(const Case& c, LinearMeta meta) {
  const Graph f = with_examples(float_pipeline(mha_entry_graph(c), c.shape_env()), c);
  QuantizerConfig cfg;
  cfg.linear = meta;
  return QuantizeLowerPass(cfg).run(f, c.shape_env()).graph;
}

// §1.6 (#21943): FoldAndAnnotateQParamsPass's retrace gives the folded linear an
// int32 output; through the shared-qspec view and transpose it reaches both
// attention bmms. q·kᵀ reads int32 on both sides (aten accepts that); P·v reads
// the int8 softmax output and the int32 v projection: the second bmm fails.
TEST(MhaRetrace, Int32FoldedLinearMeetsInt8AtTheSecondBmm) {
  const Case c = mha_case();
  const Graph l = folded_linears(c, LinearMeta::retraced_int32);
  const std::vector<std::string> errors = retrace_type_errors(l);
  ASSERT_EQ(errors.size(), 1u) << (errors.empty() ? "" : errors[0]);
  std::printf("%s\n", errors[0].c_str());
  EXPECT_EQ(errors[0].find("type error at %bmm_1 (cortex_m.quantized_batch_matmul.default)"), 0u) << errors[0];
  EXPECT_NE(errors[0].find("expected scalar type torch.int8 but found torch.int32"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("rhs int32 from %in_proj_v (aten.linear.default)"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("lhs int8 from %_softmax (cortex_m.softmax.default)"), std::string::npos) << errors[0];
  // Running it is a typed kernel error naming a node, never a crash.
  try {
    interpret(l, cmsis_nn_kernels(), mha_inputs(c), RunContext{});
    ADD_FAILURE() << "the lowered graph ran";
  } catch (const KernelError& e) {
    std::printf("running it: %s\n", e.what());
    EXPECT_EQ(std::string(e.what()).rfind("%", 0), 0u) << e.what();
  }
}

TEST(MhaRetrace, AnInt8OutputMetaLeavesNoTypeError) {
  const Case c = mha_case();
  const Graph l = folded_linears(c, LinearMeta::int8_meta);
  EXPECT_TRUE(retrace_type_errors(l).empty()) << retrace_type_errors(l)[0];
  EXPECT_EQ(count(l, kBmmOp), 2);
  int int8_linears = 0;
  for (const Node& n : l.nodes)
    if (n.op == kQuantizedLinearOp && n.outputs[0].dtype == DType::i8) ++int8_linears;
  EXPECT_EQ(int8_linears, 4);
  EXPECT_EQ(count(l, kLinearOp), 0);
  // The lowered graph runs on arm_fully_connected_s8 and the int8 attention:
  // within 10% of max |out| like the fp32-linear form, and the exact set
  // (real weights, unrounded codes) gives back the golden.
  const std::vector<double> want = mha_golden(c);
  const double err = max_abs_diff(interpret(l, cmsis_nn_kernels(), mha_inputs(c), RunContext{}).outputs.at(0), want);
  std::printf("mha int8 linears and attention: max error %.4g of max |out| %.4g\n", err, max_abs(want));
  EXPECT_LT(err, 0.1 * max_abs(want));
  EXPECT_LT(max_abs_diff(interpret(l, exact_cortex_m_kernels(), mha_inputs(c), RunContext{}).outputs.at(0), want),
            1e-9 * max_abs(want));
}

}  // namespace
}  // namespace sdpa::cortex_m
