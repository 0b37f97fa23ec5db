// The entry forms: the dispatcher's choice, the graph of each variant, and
// what the oracles are told a causal call means.
#include "backends/cuda/fused_entry.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "backends/common/sdpa_entry.h"
#include "backends/cuda/cuda_test_cases.h"
#include "harness/check/check.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"
#include "oracles/dual_oracle.h"

namespace sdpa::cuda {
namespace {

Case base() { return testing::base_call(); }

using Fixture = TargetFixture;

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

MaskSpec bool_mask(const Case& c, MaskPattern p = MaskPattern::random, double param = 0.7) {
  return MaskSpec{DType::b8, {SymExpr(1), SymExpr(1), c.q_len, c.kv_len}, p, param};
}

TEST(Dispatch, FlashWithoutMaskInHalfPrecision) {
  EXPECT_EQ(dispatch_variant(base()), Variant::flash);
  Case gqa = base();
  gqa.kv_heads = 2;
  gqa.enable_gqa = true;
  EXPECT_EQ(dispatch_variant(gqa), Variant::flash);
}

TEST(Dispatch, CausalWithUnequalLengthsSkipsFlash) {
  Case c = base();
  c.is_causal = true;
  c.kv_len = 5;
  EXPECT_EQ(dispatch_variant(c), Variant::efficient);
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s0");
  c.symbols = {{"s0", {3, 1, 8}}};
  EXPECT_EQ(dispatch_variant(c), Variant::flash);  // equal for every size
}

TEST(Dispatch, MaskGoesToEfficientThenMathBeforeCudnn) {
  Case c = base();
  c.mask = bool_mask(c);
  EXPECT_EQ(dispatch_variant(c), Variant::efficient);
  c.kv_heads = 2;  // efficient has no GQA
  c.enable_gqa = true;
  // The default order tries math before cuDNN, and math takes every call.
  EXPECT_EQ(dispatch_variant(c), Variant::sdpa);
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first), Variant::cudnn);
  c.head_dim = c.value_dim = 4;  // cuDNN needs multiples of 8
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first), Variant::sdpa);
}

TEST(Dispatch, CudnnFirstTakesWhatItCanBeforeFlash) {
  Case c = base();
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first), Variant::cudnn);
  c.kv_len = SymExpr(1);  // cuDNN refuses Lkv == 1: flash takes it
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first), Variant::flash);
  EXPECT_EQ(parse_priority("cudnn-first"), Priority::cudnn_first);
  EXPECT_EQ(parse_priority("math"), std::nullopt);
}

TEST(Dispatch, F32GoesToEfficientOrMath) {
  Case c = base();
  c.dtype = DType::f32;
  EXPECT_EQ(dispatch_variant(c), Variant::efficient);
  c.head_dim = 6;
  EXPECT_EQ(dispatch_variant(c), Variant::sdpa);
}

TEST(Dispatch, MqaWithoutEnableGqaStaysAten) {
  Case c = base();
  c.kv_heads = 1;
  EXPECT_EQ(dispatch_variant(c), Variant::sdpa);
}

// §3.6 rules each shown on one call.
TEST(Dispatch, FlashNeedsEqualHeadDimsOfAtMost256) {
  Case c = base();
  c.dtype = DType::bf16;
  c.head_dim = c.value_dim = 264;  // flash <= 256; efficient takes a multiple of 8
  EXPECT_EQ(dispatch_variant(c), Variant::efficient);
  c.head_dim = 8;
  c.value_dim = 16;  // flash needs E == Ev
  EXPECT_EQ(dispatch_variant(c), Variant::efficient);
  c.head_dim = c.value_dim = 4;
  c.mask = bool_mask(c);  // no flash with a mask; efficient needs multiples of 8 in bf16
  EXPECT_EQ(dispatch_variant(c), Variant::sdpa);
}

TEST(Dispatch, CudnnRefusesDropoutAtOneQueryRow) {
  Case c = base();
  c.q_len = 1;
  c.dropout_p = 0.1;
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first), Variant::flash);
  c.q_len = 3;
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first), Variant::cudnn);
}

TEST(Dispatch, CudnnHeadDimLimitAndDropoutDependOnTheVersion) {
  Case c = base();
  c.head_dim = c.value_dim = 192;
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first), Variant::flash);  // cuDNN <= 128
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first_sm90_9_10), Variant::cudnn);  // 256 on sm90, >= 9.10
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first_sm90_9_11), Variant::cudnn);
  c.head_dim = c.value_dim = 264;
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first_sm90_9_10), Variant::efficient);
  c.head_dim = c.value_dim = 192;
  c.dropout_p = 0.1;  // cuDNN 9.11 to 9.13 take no dropout
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first_sm90_9_10), Variant::cudnn);
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first_sm90_9_11), Variant::flash);
  EXPECT_EQ(parse_priority("cudnn-first-sm90-9.11"), Priority::cudnn_first_sm90_9_11);
}

// Every order the dispatcher model knows is a value of the target's option
// `priority`, so campaigns, gates and corpus files can select it.
TEST(Dispatch, EveryPriorityOrderIsAValueOfTheOption) {
  std::vector<std::string> values;
  for (const auto& o : fixture().registry.find("cuda")->option_specs())
    if (o.name == "priority") values = o.choices;
  for (const char* p : {"default", "cudnn-first", "cudnn-first-sm90-9.10", "cudnn-first-sm90-9.11"}) {
    EXPECT_TRUE(parse_priority(p)) << p;
    EXPECT_NE(std::find(values.begin(), values.end(), p), values.end()) << p;
    Case c = base();
    c.head_dim = c.value_dim = 192;
    auto target = fixture().registry.make("cuda", {{"priority", p}});
    EXPECT_FALSE(target->refuses(c)) << p;
  }
}

// Export emits a flash call only where the dispatcher chose flash: equal
// q, k, v head dims up to 256 (§3.6). A direct call outside them is refused.
TEST(EntryGraph, ADirectFlashCallHasEqualHeadDimsUpTo256) {
  Case c = base();
  c.dtype = DType::bf16;
  EXPECT_FALSE(entry_refuses(EntryForm::flash, c));
  c.value_dim = c.head_dim * 2;
  ASSERT_TRUE(entry_refuses(EntryForm::flash, c));
  EXPECT_NE(entry_refuses(EntryForm::flash, c)->find("head dims"), std::string::npos);
  EXPECT_FALSE(entry_refuses(EntryForm::efficient, c));  // D == Dk is all efficient needs of Ev
  c.head_dim = c.value_dim = 264;
  EXPECT_TRUE(entry_refuses(EntryForm::flash, c));
}

TEST(Dispatch, NoFusedVariantTakesALengthThatMayBeZero) {
  Case c = base();
  c.kv_len = SymExpr::symbol("s0");
  c.symbols = {{"s0", {3, 0, 8}}};  // Lkv in [0, 8]
  EXPECT_EQ(dispatch_variant(c), Variant::sdpa);
  EXPECT_EQ(dispatch_variant(c, Priority::cudnn_first), Variant::sdpa);
  c.symbols = {{"s0", {3, 1, 8}}};
  EXPECT_EQ(dispatch_variant(c), Variant::flash);
  c.kv_len = 3;
  c.q_len = 0;
  EXPECT_EQ(dispatch_variant(c), Variant::sdpa);
}

// attention.cpp's CUDA flash branch: pad_last_dim<8>, og_scale, slice back.
TEST(EntryGraph, TheDispatchedFlashCallIsPaddedToEightWithTheUnpaddedScale) {
  Case c = base();
  c.head_dim = c.value_dim = 6;
  Graph g = fused_entry_graph(c, Variant::flash, /*dispatched=*/true);
  EXPECT_TRUE(verify_graph(g).empty()) << print_graph(g);
  EXPECT_EQ(g.count("aten.constant_pad_nd.default"), 3);
  EXPECT_EQ(g.count("aten.slice.Tensor"), 1);
  const Node& flash = g.nodes[g.find("_scaled_dot_product_flash_attention")];
  EXPECT_EQ(flash.outputs[0].shape.back(), SymExpr(8));
  ASSERT_NE(flash.kwarg("scale"), nullptr);
  EXPECT_EQ(std::get<double>(*flash.kwarg("scale")), 1 / std::sqrt(6.0));  // not 1/sqrt(8)
  EXPECT_EQ(g.info(g.outputs[0]).shape.back(), SymExpr(6));
  // Aligned dims are not padded, but the scale is still passed explicitly.
  c.head_dim = c.value_dim = 8;
  Graph aligned = fused_entry_graph(c, Variant::flash, true);
  EXPECT_EQ(aligned.count("aten.constant_pad_nd.default"), 0);
  EXPECT_NE(print_graph(aligned).find("kwargs = {scale: 0.35355339"), std::string::npos) << print_graph(aligned);
  // A direct call has neither.
  c.head_dim = c.value_dim = 6;
  Graph direct = fused_entry_graph(c, Variant::flash);
  EXPECT_EQ(direct.count("aten.constant_pad_nd.default"), 0);
  EXPECT_EQ(direct.nodes[direct.find("_scaled_dot_product_flash_attention")].kwarg("scale"), nullptr);
}

TEST(EntryGraph, EachVariantHoldsItsOpWithTheSchemaArgumentOrder) {
  Case c = base();
  c.scale = 0.5;
  c.mask = bool_mask(c);
  std::string eff = print_graph(fused_entry_graph(c, Variant::efficient));
  EXPECT_NE(eff.find("aten.where.Scalar](args = (%attn_mask, 0.0, -inf)"), std::string::npos) << eff;
  EXPECT_NE(eff.find("(%q, %k, %v, %attn_bias, False, 0.0, False), kwargs = {scale: 0.5}"), std::string::npos) << eff;
  std::string cudnn = print_graph(fused_entry_graph(c, Variant::cudnn));
  EXPECT_NE(cudnn.find("aten.where.Scalar](args = (%attn_mask, 0.0, -65504.0)"), std::string::npos) << cudnn;
  EXPECT_NE(cudnn.find("(%q, %k, %v, %attn_bias, False, 0.0, False, False)"), std::string::npos) << cudnn;
  c.mask.reset();
  std::string flash = print_graph(fused_entry_graph(c, Variant::flash));
  EXPECT_NE(flash.find("(%q, %k, %v, 0.0, False, False), kwargs = {scale: 0.5}"), std::string::npos) << flash;
  EXPECT_EQ(fused_entry_graph(c, Variant::sdpa).count(kSdpaOp), 1);
}

TEST(EntryGraph, TheLseReaderVariantReadsOutputOne) {
  Case c = base();
  c.variant = kLseReader;
  for (Variant v : {Variant::flash, Variant::efficient, Variant::cudnn}) {
    Graph g = fused_entry_graph(c, v);
    EXPECT_TRUE(verify_graph(g).empty()) << print_graph(g);
    EXPECT_EQ(g.count("aten.zeros_like.default"), 1) << variant_name(v);
    std::string text = print_graph(g);
    EXPECT_NE(text.find("_attention[1],)"), std::string::npos) << text;  // zeros_like reads output 1
  }
}

TEST(EntryGraph, CausalBiasNeedsACausalPatternOverEveryKey) {
  Case c = base();
  c.variant = kCausalBias;
  c.mask = bool_mask(c, MaskPattern::causal);
  EXPECT_TRUE(causal_bias_applies(c, Variant::efficient));
  EXPECT_FALSE(causal_bias_applies(c, Variant::flash));
  std::string text = print_graph(fused_entry_graph(c, Variant::efficient));
  EXPECT_NE(text.find("%attn_bias, False, 0.0, True)"), std::string::npos) << text;
  c.mask->shape.back() = SymExpr(1);  // a causal pattern over one broadcast key keeps every key
  EXPECT_FALSE(causal_bias_applies(c, Variant::efficient));
  c.mask = bool_mask(c, MaskPattern::random);
  EXPECT_FALSE(causal_bias_applies(c, Variant::efficient));
  c.mask = MaskSpec{DType::f32, {SymExpr(1), SymExpr(1), c.q_len, c.kv_len}, MaskPattern::causal, 0, MaskFill::neg_1e4};
  EXPECT_FALSE(causal_bias_applies(c, Variant::efficient));  // -1e4 is not -inf for large scores
  c.mask->fill = MaskFill::neg_inf;
  EXPECT_TRUE(causal_bias_applies(c, Variant::efficient));
}

TEST(Meaning, BottomRightExactlyForADirectFlashCallThatMayBeNonSquare) {
  auto flash = fixture().registry.make("cuda", {{"entry", "flash"}});
  auto eff = fixture().registry.make("cuda", {{"entry", "efficient"}});
  auto dispatch = fixture().registry.make("cuda", {});
  Case c = base();
  c.is_causal = true;
  c.kv_len = 5;
  EXPECT_EQ(flash->meaning(c).causal_alignment, CausalAlignment::bottom_right);
  EXPECT_EQ(eff->meaning(c).causal_alignment, CausalAlignment::top_left);
  EXPECT_EQ(dispatch->meaning(c).causal_alignment, CausalAlignment::top_left);
  c.kv_len = 3;
  c.causal_alignment = CausalAlignment::bottom_right;
  EXPECT_EQ(flash->meaning(c).causal_alignment, CausalAlignment::top_left);  // square: both agree
}

// Each entry run exactly matches the oracles on a non-square causal call
// (the pass is off: only the entry check decides).
TEST(Meaning, EveryEntryMatchesTheOracles) {
  for (const char* entry : {"flash", "efficient", "cudnn", "dispatch"}) {
    auto t = fixture().registry.make("cuda", {{"entry", entry}, {"guard", "none"}});
    Case c = base();
    c.is_causal = true;
    c.causal_alignment = t->case_space().causal_alignments.at(0);
    c.q_len = 2;
    c.kv_len = 4;
    for (const char* variant : {kPlain, kLseReader}) {
      c.variant = variant;
      CaseResult r = run_case(*t, *fixture().reference, c);
      EXPECT_NE(r.verdict, Verdict::entry_disagree) << entry << " " << variant << ": " << r.primary()->detail;
    }
  }
}

TEST(Meaning, CudnnRefusesABoolMaskThatDropsAWholeRow) {
  auto t = fixture().registry.make("cuda", {{"entry", "cudnn"}});
  Case c = base();
  c.mask = bool_mask(c, MaskPattern::full_row, 1.0);
  ASSERT_TRUE(t->refuses(c).has_value());
  EXPECT_NE(t->refuses(c)->find("-65504"), std::string::npos);
  c.mask = bool_mask(c, MaskPattern::causal);
  EXPECT_FALSE(t->refuses(c).has_value());
  c.scale = 1e5;  // scores beyond the fill: a false key takes part
  ASSERT_TRUE(t->refuses(c).has_value());
  EXPECT_NE(t->refuses(c)->find("scores as large as the fill"), std::string::npos);
}

}  // namespace
}  // namespace sdpa::cuda
