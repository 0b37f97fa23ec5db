// The entry form: every variant verifies and, run exactly, computes the SDPA
// call it came from (no entry-disagree); only the pattern graphs' form matches.
#include "backends/xnnpack/pattern_entry.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "backends/xnnpack/sdpa_pattern.h"
#include "backends/xnnpack/test_cases.h"
#include "harness/io/json_reader.h"
#include "harness/case/tensor_data.h"
#include "harness/check/check.h"
#include "harness/ir/graph_verify.h"
#include "oracles/dual_oracle.h"

namespace sdpa::xnnpack {
namespace {

using testing::masked_call;
using testing::with_variant;

using Fixture = TargetFixture;

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

// Calls that differ in the ways the graph builder branches on.
std::vector<Case> calls() {
  std::vector<Case> out{masked_call(64), masked_call(5, DType::f16)};
  Case mqa = masked_call(8);  // 3-D [H, L, D], one key/value head
  mqa.batch = {};
  mqa.kv_heads = 1;
  out.push_back(mqa);
  Case negative = masked_call(16);
  negative.scale = -0.3;
  out.push_back(negative);
  Case boolean = masked_call(4);
  boolean.mask->dtype = DType::b8;
  boolean.mask->pattern = MaskPattern::full_row;
  boolean.mask->param = 0.5;
  out.push_back(boolean);
  Case grouped = masked_call(8);  // repeated to Hq heads
  grouped.q_heads = 4;
  grouped.enable_gqa = true;
  out.push_back(grouped);
  grouped.kv_heads = 1;
  out.push_back(grouped);
  Case plain = masked_call(8);
  plain.mask.reset();
  plain.batch = {SymExpr(2), SymExpr(1)};  // 5-D
  out.push_back(plain);
  return out;
}

TEST(XnnpackEntry, EveryVariantVerifiesAndMeansTheCallOnExactKernels) {
  auto target = fixture().registry.make("xnnpack", {{"guard", "none"}});
  int checked = 0;
  for (const auto& v : pattern_variants())
    for (const Case& base : calls()) {
      Case c = with_variant(base, v.name);
      ASSERT_FALSE(target->refuses(c)) << v.name << ": " << *target->refuses(c);
      EXPECT_TRUE(verify_graph(target->entry(c)).empty()) << v.name << ": " << verify_graph(target->entry(c))[0];
      CheckOptions identity;
      identity.passes = false;
      CaseResult r = run_case(*target, *fixture().reference, c, identity);
      for (Verdict bad : {Verdict::entry_disagree, Verdict::oracle_disagree, Verdict::unexpected_error, Verdict::crash})
        EXPECT_NE(r.verdict, bad) << v.name << " " << case_summary(c) << ": " << r.primary()->detail;
      ++checked;
    }
  EXPECT_EQ(checked, static_cast<int>(pattern_variants().size() * calls().size()));
}

TEST(XnnpackEntry, TheScaleIsSplitIntoDoubleLiteralsWithTheSignOnQ) {
  Case c = masked_call(64);
  const double root = std::sqrt(0.125);
  EXPECT_EQ(scale_literals(c), (std::vector<double>{root, root}));
  EXPECT_NE(root, static_cast<float>(root)) << "the literal is the unrounded double";
  const Graph g = pattern_entry_graph(c);
  int muls = 0;
  for (const Node& n : g.nodes) {
    if (n.op != kMulScalar) continue;
    EXPECT_EQ(std::get<double>(n.args[1]), root);
    ++muls;
  }
  EXPECT_EQ(muls, 2);
  c.scale = -0.5;
  const double half = std::sqrt(0.5);
  EXPECT_EQ(scale_literals(c), (std::vector<double>{-half, half}));
  // The op math reads each literal as a float: the graph means their product.
  const double read = static_cast<float>(half);
  EXPECT_EQ(traced_scale(c), -read * read);
  EXPECT_EQ(scale_literals(with_variant(c, "scores")), std::vector<double>{-0.5});
}

TEST(XnnpackEntry, OnlyTheMaskedPatternFormsMatch) {
  for (const auto& v : pattern_variants()) {
    const size_t expected = v.name == "qk" || v.name == "qk-safe-softmax-decomposed" ? 1 : 0;
    EXPECT_EQ(match_sdpa_pattern(pattern_entry_graph(with_variant(masked_call(), v.name))).size(), expected) << v.name;
    Case unmasked = with_variant(masked_call(), v.name);
    unmasked.mask.reset();  // the pattern graphs all hold the add of a mask
    EXPECT_EQ(match_sdpa_pattern(pattern_entry_graph(unmasked)).size(), 0u) << v.name;
  }
}

// The pattern graphs are traced at rank 4; SubgraphMatcher compares the
// permute dims and the expand and view sizes entry by entry, so a graph
// traced at rank 3 or 5 holds no match, however its literals read.
TEST(XnnpackEntry, OnlyARank4CallMatchesThePatternTracedAtRank4) {
  for (const std::vector<SymExpr>& batch :
       {std::vector<SymExpr>{}, {SymExpr(1)}, {SymExpr(3)}, {SymExpr(2), SymExpr(1)}}) {
    Case c = masked_call(8);
    c.batch = batch;
    EXPECT_EQ(match_sdpa_pattern(pattern_entry_graph(c)).size(), batch.size() == 1 ? 1u : 0u)
        << "rank " << batch.size() + 3;
  }
}

// With enable_gqa the math decomposition repeats k and v to Hq heads, one
// key/value head too (repeat_interleave); the pattern's placeholders bind
// the repeated tensors, so the converted SDPA gets Hq key heads, which the
// XNNPACK operator takes (no failure). Without the flag one head broadcasts: the
// operator refuses the 4-D key of one head.
TEST(XnnpackEntry, RepeatedHeadsAreConvertedWithHqKeyHeadsAndABroadcastHeadIsNot) {
  auto target = fixture().registry.make("xnnpack", {{"entry", "pattern"}, {"flow", "pattern-graph"}});
  for (int64_t kv_heads : {1, 2})
    for (bool enable_gqa : {false, true}) {
      if (kv_heads == 2 && !enable_gqa) continue;  // grouped heads need the flag
      Case c = masked_call(16);  // scale 1/4: recovered exactly
      c.q_heads = 4;
      c.kv_heads = kv_heads;
      c.enable_gqa = enable_gqa;
      ASSERT_FALSE(target->refuses(c)) << case_summary(c) << ": " << *target->refuses(c);
      const Graph g = target->entry(c);
      ASSERT_EQ(g.count("aten.repeat_interleave.self_int"), enable_gqa ? 2u : 0u) << case_summary(c);
      const std::vector<SdpaPatternMatch> m = match_sdpa_pattern(g);
      ASSERT_EQ(m.size(), 1u) << case_summary(c);
      EXPECT_EQ(g.info(m[0].k).shape[1], SymExpr(enable_gqa ? 4 : kv_heads)) << case_summary(c);
      CaseResult r = run_case(*target, *fixture().reference, c, CheckOptions{});
      if (enable_gqa)  // the lift's guard keeps the MULs for the conversion: rejected, no failure
        EXPECT_FALSE(is_failure(r.verdict)) << case_summary(c) << ": " << verdict_name(r.verdict);
      else EXPECT_STREQ(verdict_name(r.verdict), "invalid-rewrite") << case_summary(c);
    }
}

// The NaN of a fully masked row is the SDPA operator's: a graph left
// decomposed runs _safe_softmax, which gives 0 there, so a NaN from it is
// not explained by the divergence.
TEST(XnnpackEntry, TheOperatorsNanExplainsOnlyAConvertedGraph) {
  auto target = fixture().registry.make("xnnpack", {{"entry", "pattern"}, {"flow", "pattern-graph"}});
  Case c = masked_call(16);
  CaseTensors t = make_case_tensors(c, {});
  for (int64_t j = 0; j < 4; ++j) t.mask->data[j] = -INFINITY;  // query row 0 fully masked
  const Golden g = fixture().reference->golden(c, t, {});
  ASSERT_TRUE(g.fully_masked.at(0));
  const Graph decomposed = target->entry(c);
  ASSERT_EQ(decomposed.count("aten.scaled_dot_product_attention.default"), 0);
  Graph converted = decomposed;
  converted.nodes.push_back(Node{});
  converted.nodes.back().op = "aten.scaled_dot_product_attention.default";
  EXPECT_TRUE(target->explains_nan(c, t, g, {0}, "xnnpack", converted));
  EXPECT_FALSE(target->explains_nan(c, t, g, {0}, "xnnpack", decomposed));
}

TEST(XnnpackEntry, AnUnknownVariantIsABadFileNamingTheField) {
  try {
    pattern_variant("qk-swizzle");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("case.variant"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sdpa::xnnpack
