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
