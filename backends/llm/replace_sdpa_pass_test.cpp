#include "backends/llm/replace_sdpa_pass.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/llm/custom_sdpa_kernel.h"
#include "backends/llm/llm_kernels.h"
#include "harness/case/tensor_data.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"

namespace sdpa::llm {
namespace {

Case base() {
  Case c;
  c.batch = {SymExpr(1)};
  c.q_heads = 4;
  c.kv_heads = 2;
  c.enable_gqa = true;
  c.q_len = 3;
  c.kv_len = 3;
  c.head_dim = 8;
  c.value_dim = 8;
  return c;
}

Pass::Result run(const Case& c, PassConfig cfg, bool force = false) {
  RewriteControl control;
  control.force_all = force;
  return ReplaceSdpaWithCustomSdpaPass(cfg).run(sdpa_entry_graph(c), c.shape_env(), control);
}

PassConfig upstream() { return {GuardPolicy::upstream, false, std::nullopt}; }
PassConfig contract() { return {GuardPolicy::contract, false, std::nullopt}; }

TEST(UpstreamPass, RewritesToCustomSdpaWithStartPosZero) {
  Case c = base();
  c.mask = MaskSpec{DType::b8, {SymExpr(1), SymExpr(1), SymExpr(3), SymExpr(3)}, MaskPattern::causal};
  Pass::Result r = run(c, upstream());
  ASSERT_TRUE(r.decisions[0].rewrite);
  EXPECT_TRUE(verify_graph(r.graph).empty());
  std::string text = print_graph(r.graph);
  EXPECT_NE(text.find("aten.squeeze.dims](args = (%attn_mask, [0, 1])"), std::string::npos) << text;
  EXPECT_NE(text.find("aten.where.Scalar](args = (%squeeze, 0.0, -inf)"), std::string::npos) << text;
  EXPECT_NE(text.find("llama.custom_sdpa.default](args = (%q_bshd_contiguous, %k_bshd_contiguous, "
                      "%v_bshd_contiguous, 0, %where, 0.0, False, None)"),
            std::string::npos)
      << text;
  EXPECT_EQ(r.graph.count("aten.transpose.int"), 4);
}

// _extract_args reads attn_mask positionally only (semantics §2.1 item 1):
// a graph that passes it by keyword is rewritten without it, and the
// rewrite changes what the graph computes, which the exact runs show (the
// reference kernels bind the keyword as aten does).
TEST(UpstreamPass, AKeywordMaskIsDroppedAndTheExactRunsDiffer) {
  Case c = base();
  c.mask = MaskSpec{DType::b8, {SymExpr(3), SymExpr(3)}, MaskPattern::causal};
  Graph entry = sdpa_entry_graph(c, CallForm::keyword);
  RewriteControl control;
  Pass::Result r = ReplaceSdpaWithCustomSdpaPass(upstream()).run(entry, c.shape_env(), control);
  ASSERT_TRUE(r.decisions[0].rewrite);
  const std::string text = print_graph(r.graph);
  EXPECT_NE(text.find("%v_bshd_contiguous, 0, None, 0.0, False, None)"), std::string::npos) << text;
  CaseTensors t = make_case_tensors(c, {});
  const std::map<std::string, Tensor> in = {{"q", t.q}, {"k", t.k}, {"v", t.v}, {"attn_mask", *t.mask}};
  const KernelSet exact = exact_custom_ops();
  const Tensor before = interpret(entry, exact, in, {}).outputs[0];
  const Tensor after = interpret(r.graph, exact, in, {}).outputs[0];
  ASSERT_EQ(before.shape, after.shape);
  double largest = 0;
  for (int64_t i = 0; i < before.numel(); ++i) largest = std::max(largest, std::fabs(before.data[i] - after.data[i]));
  EXPECT_GT(largest, 1e-3);  // the causal mask's keys count again
}

// The keyword entry form (option call_form=keyword): q, k and v by
// position, the mask, dropout_p and is_causal by keyword where given. The
// upstream reader sees none of them; the bound reader, which the contract
// uses, sees them all, and the contract's rewrite keeps the mask.
TEST(ContractPass, BindsTheKeywordFormAsAtenDoes) {
  Case c = base();
  c.mask = MaskSpec{DType::f32, {SymExpr(3), SymExpr(3)}, MaskPattern::causal};
  c.dropout_p = 0.25;
  const Graph entry = sdpa_entry_graph(c, CallForm::keyword);
  const Node* sdpa = nullptr;
  for (const Node& n : entry.nodes)
    if (n.op == kSdpaOp) sdpa = &n;
  ASSERT_NE(sdpa, nullptr);
  EXPECT_EQ(sdpa->args.size(), 3u);
  const SdpaCall positional = read_sdpa_call(*sdpa), bound = read_sdpa_call_bound(*sdpa);
  EXPECT_FALSE(positional.mask);
  EXPECT_EQ(positional.dropout_p, 0.0);
  ASSERT_TRUE(bound.mask);
  EXPECT_EQ(bound.dropout_p, 0.25);
  EXPECT_TRUE(bound.enable_gqa);
  c.mask.reset();
  c.dropout_p = 0.0;
  c.is_causal = true;
  EXPECT_TRUE(read_sdpa_call_bound(sdpa_entry_graph(c, CallForm::keyword).nodes.back()).is_causal);
  EXPECT_FALSE(read_sdpa_call(sdpa_entry_graph(c, CallForm::keyword).nodes.back()).is_causal);
  // Given both ways, as aten's binding does, the bound reader raises.
  Node twice = sdpa_entry_graph(c).nodes.back();
  twice.kwargs.emplace_back("is_causal", true);
  EXPECT_THROW(read_sdpa_call_bound(twice), std::invalid_argument);
  // The contract's rewrite of a masked keyword call passes the mask on.
  c.is_causal = false;
  c.mask = MaskSpec{DType::f32, {SymExpr(3), SymExpr(3)}, MaskPattern::causal};
  RewriteControl control;
  Pass::Result r = ReplaceSdpaWithCustomSdpaPass(contract()).run(sdpa_entry_graph(c, CallForm::keyword),
                                                                 c.shape_env(), control);
  ASSERT_TRUE(r.decisions.at(0).rewrite) << r.decisions.at(0).deciding_rule;
  const std::string text = print_graph(r.graph);
  EXPECT_NE(text.find("%v_bshd_contiguous, 0, %attn_mask, 0.0, False, None)"), std::string::npos) << text;
}

TEST(UpstreamPass, HasNoGuardOnLengthsOrDropout) {
  Case c = base();
  c.kv_len = 7;
  c.dropout_p = 0.5;
  Pass::Result r = run(c, upstream());
  EXPECT_TRUE(r.decisions[0].rewrite);
  EXPECT_EQ(r.graph.count(kCustomSdpaOp), 1);
}

// Dtype and head sizes are not the pass's rules: the Meta kernel's asserts
// raise while the pass builds the call.
TEST(UpstreamPass, TheMetaKernelAssertsQueryDtypeAndKeyValueSizes) {
  auto message = [](const Case& c) {
    try {
      run(c, upstream());
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no raise");
  };
  Case f64 = base();
  f64.dtype = DType::f64;
  EXPECT_EQ(message(f64), "AssertionError in custom_sdpa meta (_validate_params): Expected query to be float32, "
                          "bfloat16, or float16 but got torch.float64");
  Case ev = base();
  ev.value_dim = ev.head_dim + 1;
  EXPECT_NE(message(ev).find("Key cache and value cache must have same size but got torch.Size("), std::string::npos) << message(ev);
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    Case ok = base();
    ok.dtype = t;
    EXPECT_EQ(message(ok), "no raise") << dtype_name(t);
  }
}

// Before 411a01e1b9 (option executorch=2026-07-07) the Meta kernel asserts
// a float32 query (§2.1 consequence h): export of a half-precision model fails
// in the pass, and the contract keeps such a call where main rewrites it.
TEST(UpstreamPass, BeforeJuly2026TheMetaKernelFailsThePassOnHalfQueries) {
  PassConfig old = upstream();
  old.revision = et_revisions().at(1).second;
  ASSERT_EQ(et_revisions().at(1).first, "2026-07-07");
  for (DType t : {DType::bf16, DType::f16}) {
    Case c = base();
    c.dtype = t;
    try {
      run(c, old);
      ADD_FAILURE() << dtype_name(t) << ": the pass did not raise";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("AssertionError in custom_sdpa meta (_validate_params): Expected "
                                                   "query to be float32 but got torch.") +
                                           (t == DType::bf16 ? "bfloat16" : "float16"));
    }
    EXPECT_TRUE(run(c, upstream()).decisions.at(0).rewrite) << dtype_name(t);
    PassConfig old_contract = contract();
    old_contract.revision = old.revision;
    EXPECT_EQ(run(c, old_contract).decisions.at(0).deciding_rule, "dtype") << dtype_name(t);
    EXPECT_EQ(run(c, contract()).decisions.at(0).deciding_rule, "accept") << dtype_name(t);
  }
  EXPECT_TRUE(run(base(), old).decisions.at(0).rewrite);  // f32 as before
}

TEST(UpstreamPass, TransposesComeBeforeTheRankCheck) {
  Case c = base();
  c.batch.clear();  // rank 3
  Pass::Result r = run(c, upstream());
  EXPECT_FALSE(r.decisions[0].rewrite);
  EXPECT_EQ(r.decisions[0].deciding_rule, "rank");
  EXPECT_EQ(r.graph.count(kSdpaOp), 1);
  EXPECT_EQ(r.graph.count("aten.transpose.int"), 3);  // left dead
}

// A Case has a batch and three dims, so a rank-2 call is built by hand:
// aten takes q, k, v [L, E], but the pass's first transpose(1, 2) raises
// before the rank check could fall back.
// The SDPA call of a graph whose q, k and v have `shape`.
Graph sdpa_of_shape(const SymShape& shape) {
  Graph g;
  ValueRef q = g.placeholder("q", {DType::f32, shape});
  ValueRef k = g.placeholder("k", {DType::f32, shape});
  ValueRef v = g.placeholder("v", {DType::f32, shape});
  g.outputs = {g.call(kSdpaOp, {q, k, v, None{}, 0.0, false}, {}, {{DType::f32, shape}}, "scaled_dot_product_attention")};
  return g;
}

std::string upstream_raise(Graph g) {
  try {
    ReplaceSdpaWithCustomSdpaPass(upstream()).run(g, ShapeEnv(), RewriteControl());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no raise";
}

TEST(UpstreamPass, RankTwoInputsRaiseInTheFirstTranspose) {
  Graph g = sdpa_of_shape({SymExpr(3), SymExpr(4)});
  ASSERT_TRUE(verify_graph(g).empty());
  EXPECT_EQ(upstream_raise(g), "IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  // Rank 1: transpose's dim 1 is already out of range.
  EXPECT_EQ(upstream_raise(sdpa_of_shape({SymExpr(4)})),
            "IndexError: Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  // The contract checks the rank first and keeps the call.
  Pass::Result kept = ReplaceSdpaWithCustomSdpaPass(contract()).run(g, ShapeEnv(), RewriteControl());
  EXPECT_FALSE(kept.decisions[0].rewrite);
  EXPECT_EQ(kept.decisions[0].deciding_rule, "rank");
}

TEST(UpstreamPass, MetaKernelAssertsFailThePass) {
  Case c = base();
  c.dtype = DType::bf16;
  c.mask = MaskSpec{DType::bf16, {SymExpr(3), SymExpr(3)}, MaskPattern::keep_all};
  EXPECT_THROW(run(c, upstream()), std::runtime_error);
  c.mask = MaskSpec{DType::b8, {SymExpr(3)}, MaskPattern::keep_all};  // rank 1
  EXPECT_THROW(run(c, upstream()), std::runtime_error);
}

TEST(UpstreamPass, SqueezeDecidedOnTheHintIsRecorded) {
  Case c = base();
  c.batch = {SymExpr::symbol("b")};
  c.symbols["b"] = {1, 1, 4};
  c.runtime = {{{"b", 1}}, {{"b", 2}}};
  c.mask = MaskSpec{DType::b8, {SymExpr::symbol("b"), SymExpr(1), SymExpr(3), SymExpr(3)}, MaskPattern::keep_all};
  Pass::Result r = run(c, upstream());
  ASSERT_TRUE(r.decisions[0].rewrite);
  ASSERT_EQ(r.decisions[0].assumptions.size(), 1u);
  EXPECT_EQ(r.decisions[0].assumptions[0].fact.str(), "b == 1");
  c.symbols["b"].hint.reset();  // unbacked: export cannot guard on it
  EXPECT_THROW(run(c, upstream()), std::runtime_error);
}

TEST(ContractPass, KeepsWhatCustomSdpaComputesDifferently) {
  auto rule = [](const Case& c) { return run(c, contract()).decisions[0].deciding_rule; };
  Case c = base();
  EXPECT_EQ(rule(c), "accept");
  c.kv_len = 5;
  EXPECT_EQ(rule(c), "unmasked-lengths");
  c.is_causal = true;
  EXPECT_EQ(rule(c), "accept");  // top-left with Lq <= Lkv
  c.scale = 0.0;
  EXPECT_EQ(rule(c), "causal-scale");
  c = base();
  c.dropout_p = 0.1;
  EXPECT_EQ(rule(c), "dropout");
  c = base();
  c.value_dim = 4;
  EXPECT_EQ(rule(c), "head-dims");
  c = base();
  c.mask = MaskSpec{DType::f32, {SymExpr(1), SymExpr(3)}, MaskPattern::keep_all};
  EXPECT_EQ(rule(c), "mask-shape");
  c.mask->shape = {SymExpr(3), SymExpr(3)};
  c.mask->dtype = DType::f16;
  c.dtype = DType::f16;
  EXPECT_EQ(rule(c), "accept");
  EXPECT_EQ(run(c, contract()).graph.count("aten._to_copy.default"), 1);  // f16 mask cast to f32
}

TEST(ContractPass, DecidesOnFactsForEverySizeNotOnHints) {
  Case c = base();
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s1");
  c.symbols["s0"] = {4, 1, 8};
  c.symbols["s1"] = {4, 1, 8};
  c.runtime = {{{"s0", 4}, {"s1", 4}}};
  Decision d = run(c, contract()).decisions[0];
  EXPECT_FALSE(d.rewrite);  // equal on the hint only
  EXPECT_EQ(d.deciding_rule, "unmasked-lengths");
  PassConfig weak = contract();
  weak.weakened = ContractRule::static_facts;
  d = run(c, weak).decisions[0];
  EXPECT_TRUE(d.rewrite);
  ASSERT_EQ(d.assumptions.size(), 1u);
  EXPECT_EQ(d.assumptions[0].fact.str(), "s0 == s1");
  c.kv_len = SymExpr::symbol("s0");  // one symbol: known equal
  c.symbols.erase("s1");
  c.runtime = {{{"s0", 4}}};
  EXPECT_TRUE(run(c, contract()).decisions[0].rewrite);
}

TEST(ContractPass, AssumeCausalMaskAppliesBeforeTheGuard) {
  Case c = base();
  c.q_len = 3;
  c.kv_len = 5;
  c.mask = MaskSpec{DType::b8, {SymExpr(3), SymExpr(5)}, MaskPattern::causal};
  PassConfig cfg = contract();
  cfg.assume_causal_mask = true;
  Pass::Result r = run(c, cfg);
  EXPECT_TRUE(r.decisions[0].rewrite);
  std::string text = print_graph(r.graph);
  EXPECT_NE(text.find("0, None, 0.0, True, None)"), std::string::npos) << text;
}

TEST(ContractPass, WeakenedRuleStillReportsItself) {
  Case c = base();
  c.dropout_p = 0.3;
  PassConfig cfg = contract();
  cfg.weakened = ContractRule::dropout;
  Decision d = run(c, cfg).decisions[0];
  EXPECT_TRUE(d.rewrite);
  bool seen = false;
  for (const auto& r : d.rules) seen = seen || (r.rule == "dropout" && r.detail.find("weakened") != std::string::npos);
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace sdpa::llm
