// The sdpa-custom entry form and replace_sdpa_with_custom_op: the entry
// graph means the call the case describes (causal at start_pos), and
// SDPACustom computes it at cache positions on both sides of the 512-key
// block edge, decode and chunked prefill; the contract keeps what it must.
#include "backends/llm/sdpa_custom_pass.h"

#include <gtest/gtest.h>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "backends/llm/custom_sdpa_kernel.h"
#include "backends/llm/llm_kernels.h"
#include "backends/llm/sdpa_custom_entry.h"
#include "harness/check/check.h"
#include "harness/io/json_reader.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"
#include "harness/ir/interpreter.h"
#include "oracles/dual_oracle.h"

namespace sdpa::llm {
namespace {

struct Fixture : TargetFixture {
  CaseResult run(const Case& c, Options o, bool passes = true) const {
    o["entry"] = "sdpa-custom";
    CheckOptions opt;
    opt.passes = passes;
    return run_case(*registry.make("llm", o), *reference, c, opt);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

// A KV-cache step: q [1, 4, Lq, 8], the cache [1, 2, Lkv, 8] (GQA), causal
// at start_pos = sp, run at each of `positions` (the first is the hint).
Case cache_step(int64_t Lq, int64_t Lkv, std::vector<int64_t> positions, DType dtype = DType::f32) {
  Case c;
  c.dtype = dtype;
  c.batch = {SymExpr(1)};
  c.q_heads = 4;
  c.kv_heads = 2;
  c.enable_gqa = true;
  c.q_len = Lq;
  c.kv_len = Lkv;
  c.head_dim = c.value_dim = 8;
  c.is_causal = true;
  c.causal_alignment = CausalAlignment::start_pos;
  c.start_pos = SymExpr::symbol("sp");
  c.symbols["sp"] = {positions[0], 0, Lkv - Lq};
  for (int64_t p : positions) c.runtime.push_back({{"sp", p}});
  c.data.seed = 11;
  return c;
}

// The module's own mask instead of the causal rows (the ring-buffer path).
Case with_mask(Case c, DType dtype, SymShape shape) {
  c.is_causal = false;
  c.causal_alignment = CausalAlignment::top_left;
  c.mask = MaskSpec{dtype, std::move(shape), MaskPattern::window, 3.0};
  return c;
}

Pass::Result swap(const Case& c, SwapConfig cfg) {
  return ReplaceSdpaWithCustomOpPass(cfg).run(sdpa_custom_entry_graph(c), c.shape_env());
}

SwapConfig upstream(bool use_attention_mask = false) { return {GuardPolicy::upstream, use_attention_mask, std::nullopt}; }
SwapConfig contract(bool use_attention_mask = false) { return {GuardPolicy::contract, use_attention_mask, std::nullopt}; }

TEST(SdpaCustomEntry, IsTheSdpaModuleOverTheCausalRowsAtInputPos) {
  const Case c = cache_step(3, 600, {520});
  const Graph g = sdpa_custom_entry_graph(c);
  EXPECT_TRUE(verify_graph(g).empty());
  const std::vector<SdpaModule> modules = find_sdpa_modules(g);
  ASSERT_EQ(modules.size(), 1u);
  ASSERT_TRUE(modules[0].start_pos.has_value());
  EXPECT_EQ(*modules[0].start_pos, SymExpr::symbol("sp"));
  EXPECT_EQ(causal_slice_start(g, modules[0]), std::optional<SymExpr>(SymExpr::symbol("sp")));
  const Node& slice = g.nodes[modules[0].mask->node];
  EXPECT_EQ(slice.op, kSliceOp);
  EXPECT_EQ(std::get<SymExpr>(slice.args[3]), SymExpr::symbol("sp") + SymExpr(3));
  EXPECT_EQ(g.count(kRepeatInterleaveOp), 2);
  EXPECT_EQ(g.info(g.outputs[0]).shape, (SymShape{1, 4, 3, 8}));
  // A mask of the module's own is a graph input: no causal rows.
  const Graph masked = sdpa_custom_entry_graph(with_mask(c, DType::f32, {3, 600}));
  EXPECT_EQ(masked.count(kSliceOp), 0);
  EXPECT_FALSE(causal_slice_start(masked, find_sdpa_modules(masked).at(0)).has_value());
}

TEST(SdpaCustomEntry, KeepsKeysUpToStartPosPlusRowByHand) {
  // Lq 2, cache 6, start_pos 2, one head, E 1: q = 0 weighs every kept key
  // the same; v[j] = j, so row i is the mean of 0..2 + i: 1 and 1.5. Keys
  // 4 and 5 (v 4, 5) are in the cache but past the step.
  Case c = cache_step(2, 6, {2});
  c.q_heads = c.kv_heads = 1;
  c.enable_gqa = false;
  c.head_dim = c.value_dim = 1;
  Tensor q(DType::f32, {1, 1, 2, 1}), k(DType::f32, {1, 1, 6, 1}, 1.0), v(DType::f32, {1, 1, 6, 1});
  for (int64_t j = 0; j < 6; ++j) v.data[j] = static_cast<double>(j);
  Tensor pos(DType::i64, {1}, 2.0);
  const Graph g = sdpa_custom_entry_graph(c);
  const std::map<std::string, Tensor> in{{"q", q}, {"k", k}, {"v", v}, {kInputPos, pos}};
  RunContext at{{{"sp", 2}}, 0};
  EXPECT_EQ(interpret(g, exact_kernels(), in, at).outputs[0].data, (std::vector<double>{1.0, 1.5}));
  // Swapped: custom_sdpa at start_pos 2 reads keys 0..3 only, causal.
  const Graph swapped = swap(c, upstream()).graph;
  EXPECT_EQ(interpret(swapped, exact_custom_ops(), in, at).outputs[0].data, (std::vector<double>{1.0, 1.5}));
  // input_pos must hold the symbol's value.
  Tensor wrong(DType::i64, {1}, 3.0);
  EXPECT_THROW(interpret(g, exact_kernels(), {{"q", q}, {"k", k}, {"v", v}, {kInputPos, wrong}}, at), GraphError);
}

TEST(SdpaCustomEntry, MatchesTheOraclesAcrossTheKvBlockEdge) {
  // Passes off: the entry graph alone against the oracles (entry check).
  for (const Case& c : {cache_step(1, 600, {520, 0, 511}), cache_step(5, 1040, {1020, 300}),
                        cache_step(2, 530, {515}, DType::bf16)}) {
    CaseResult r = fixture().run(c, {}, /*passes=*/false);
    EXPECT_EQ(r.verdict, Verdict::pass) << case_summary(c) << (r.primary() ? r.primary()->detail : "");
  }
}

TEST(SdpaCustomPass, UpstreamSwapsEveryModuleForSdpaCustom) {
  Pass::Result r = swap(cache_step(3, 600, {520}), upstream());
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_TRUE(r.decisions[0].rewrite);
  EXPECT_EQ(r.decisions[0].rules.at(0).rule, "sdpa-module");
  EXPECT_TRUE(verify_graph(r.graph).empty());
  EXPECT_EQ(r.graph.count(kSdpaOp), 0);
  EXPECT_EQ(r.graph.count(kRepeatInterleaveOp), 0);
  EXPECT_EQ(r.graph.count("aten._to_copy.default"), 0);  // f32 already: .to(float) records nothing
  const Node* call = nullptr;
  for (const Node& n : r.graph.nodes)
    if (n.op == kCustomSdpaOp) call = &n;
  ASSERT_NE(call, nullptr);
  // custom_sdpa(q, k, v, input_pos[0].item(), None, 0, True).
  EXPECT_EQ(std::get<SymExpr>(call->args[3]), SymExpr::symbol("sp"));
  EXPECT_TRUE(std::holds_alternative<None>(call->args[4]));
  EXPECT_EQ(std::get<int64_t>(call->args[5]), 0);
  EXPECT_TRUE(std::get<bool>(call->args[6]));
  EXPECT_EQ(call->outputs.at(0).shape, (SymShape{1, 3, 4, 8}));
  // bf16: q, k, v cast to f32 and the output back.
  Pass::Result b = swap(cache_step(3, 600, {520}, DType::bf16), upstream());
  EXPECT_EQ(b.graph.count("aten._to_copy.default"), 4);
  EXPECT_EQ(b.graph.info(b.graph.outputs[0]).dtype, DType::bf16);
}

TEST(SdpaCustomPass, IsSoundForDecodeAndChunkedPrefillPastTheBlockEdge) {
  const std::vector<Case> steps = {cache_step(1, 600, {520, 0, 512}),           // decode
                                   cache_step(4, 600, {510, 508, 596}),         // chunk straddling 512
                                   cache_step(40, 1100, {1000, 480}),           // two query blocks
                                   cache_step(3, 1100, {1023}, DType::f16)};    // past 1024
  for (const Case& c : steps)
    for (const char* guard : {"upstream", "contract"}) {
      CaseResult r = fixture().run(c, {{"guard", guard}});
      EXPECT_EQ(r.verdict, Verdict::pass) << guard << " " << case_summary(c) << (r.primary() ? r.primary()->detail : "");
      ASSERT_EQ(r.decisions.size(), 1u);
      EXPECT_TRUE(r.decisions[0].rewrite) << guard;
    }
}

TEST(SdpaCustomPass, ContractKeepsAModuleWhoseMaskTheSwapWouldDrop) {
  const Case own = with_mask(cache_step(3, 8, {2}), DType::f32, {3, 8});
  Decision d = swap(own, contract()).decisions.at(0);
  EXPECT_FALSE(d.rewrite);
  EXPECT_EQ(d.deciding_rule, "causal-slice");
  // Upstream drops it and computes causal at start_pos: unsound.
  CaseResult r = fixture().run(own, {{"guard", "upstream"}});
  EXPECT_EQ(r.verdict, Verdict::unsound_rewrite);
  ASSERT_NE(r.primary(), nullptr);
  EXPECT_EQ(r.primary()->failure_class, "causal-slice");
  EXPECT_EQ(fixture().run(own, {{"guard", "contract"}}).verdict, Verdict::rejected);
}

TEST(SdpaCustomPass, ContractProvesTheStepStaysInTheCache) {
  // llama's torch._check(start_pos < max_context_len): sp in [0, Lkv - 1].
  Case c = cache_step(3, 8, {2});
  c.symbols["sp"].max = 7;
  Decision d = swap(c, contract()).decisions.at(0);
  EXPECT_EQ(d.deciding_rule, "cache-bounds");
  c.q_len = 1;  // decode: sp + 1 <= 8 for every sp in range
  EXPECT_TRUE(swap(c, contract()).decisions.at(0).rewrite);
  // Lq a symbol that may be 0: custom_sdpa divides by qSplitSize = 0.
  Case q0 = cache_step(2, 8, {2});
  q0.q_len = SymExpr::symbol("s0");
  q0.symbols["s0"] = {2, 0, 2};
  q0.symbols["sp"].max = 6;
  for (auto& at : q0.runtime) at["s0"] = 2;
  EXPECT_EQ(swap(q0, contract()).decisions.at(0).deciding_rule, "query-length");
}

TEST(SdpaCustomPass, WithTheAttentionMaskOnlyAnF32LqByLkvMaskFitsTheOp) {
  const Case step = cache_step(3, 8, {2});
  EXPECT_TRUE(swap(with_mask(step, DType::f32, {3, 8}), contract(true)).decisions.at(0).rewrite);
  EXPECT_EQ(swap(with_mask(step, DType::f16, {3, 8}), contract(true)).decisions.at(0).deciding_rule, "mask-dtype");
  EXPECT_EQ(swap(with_mask(step, DType::f32, {1, 8}), contract(true)).decisions.at(0).deciding_rule, "mask-shape");
  EXPECT_EQ(swap(with_mask(step, DType::f32, {1, 1, 3, 8}), contract(true)).decisions.at(0).deciding_rule, "mask-rank");
  // The causal rows are a bool mask: the contract keeps them ...
  EXPECT_EQ(swap(step, contract(true)).decisions.at(0).deciding_rule, "mask-dtype");
  // ... and upstream fails export on them in custom_sdpa's Meta kernel.
  CaseResult r = fixture().run(step, {{"guard", "upstream"}, {"use_attention_mask", "true"}});
  EXPECT_EQ(r.verdict, Verdict::unexpected_error);
  ASSERT_NE(r.primary(), nullptr);
  EXPECT_NE(r.primary()->detail.find("Expected attn_mask to be float but got torch.bool"), std::string::npos)
      << r.primary()->detail;
  // An f32 [Lq, Lkv] mask passed as is, start_pos 0: sound.
  CaseResult ok = fixture().run(with_mask(cache_step(4, 600, {520}), DType::f32, {4, 600}),
                                {{"guard", "upstream"}, {"use_attention_mask", "true"}});
  EXPECT_EQ(ok.verdict, Verdict::pass) << (ok.primary() ? ok.primary()->detail : "");
}

TEST(SdpaCustomPass, OptionsOfTheOtherEntryFormAreErrors) {
  const TargetRegistry& r = fixture().registry;
  EXPECT_THROW(r.make("llm", {{"entry", "sdpa-custom"}, {"assume_causal_mask", "true"}}), InputError);
  EXPECT_THROW(r.make("llm", {{"entry", "sdpa-custom"}, {"weaken", "dropout"}}), InputError);
  EXPECT_THROW(r.make("llm", {{"use_attention_mask", "true"}}), InputError);
  EXPECT_THROW(r.make("llm", {{"weaken", "causal-slice"}}), InputError);
  EXPECT_THROW(r.make("llm", {{"entry", "sdpa-custom"}, {"call_form", "keyword"}}), InputError);
  EXPECT_NO_THROW(r.make("llm", {{"entry", "sdpa-custom"}, {"weaken", "mask-dtype"}}));
}

// ReplaceSDPAWithCustomSDPAPass came on 2025-04-28: a tree before it runs
// the module swap only, and a tree the model does not know is an error.
TEST(SdpaCustomPass, ATreeBeforeTheExportPassTakesTheSwapOnly) {
  const TargetRegistry& r = fixture().registry;
  try {
    r.make("llm", {{"executorch", "2025-04-24"}});
    ADD_FAILURE() << "entry=sdpa accepted a tree without its pass";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("option 'executorch' of target llm: ReplaceSDPAWithCustomSDPAPass was added "
                                         "on 2025-04-28"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(r.make("llm", {{"entry", "sdpa-custom"}, {"executorch", "2025-04-24"}}));
  EXPECT_NO_THROW(r.make("llm", {{"executorch", "2025-07-01"}}));
  EXPECT_THROW(r.make("llm", {{"executorch", "2024-01-01"}}), InputError);
}

}  // namespace
}  // namespace sdpa::llm
