// The gate on the cortex-m target: decompose -> decompose+fold changes no
// guard decision (the fold is a lowering change, the guard is shared), so
// every decision is unchanged and none is newly unsound or newly missed; a
// head with a weakened rule is caught as newly unsound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "generators/case_gen.h"
#include "harness/campaign/gate.h"
#include "oracles/dual_oracle.h"

namespace sdpa::cortex_m {
namespace {

struct Fixture : TargetFixture {
  DecisionsFile decisions(const Options& o) const {
    return record_decisions(*registry.make("cortex-m", o), *reference, generators, 3, 300, 100);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

void print(const char* what, const GateComparison& g) {
  std::printf("%s: %lld cases, %lld decisions, %lld unchanged (%lld unsound, %lld missed in both)", what,
              static_cast<long long>(g.cases), static_cast<long long>(g.decisions),
              static_cast<long long>(g.unchanged), static_cast<long long>(g.still_unsound),
              static_cast<long long>(g.still_missed));
  for (GateClass c : gate_classes())
    std::printf(", %s %zu", gate_class_name(c), g.changes.count(c) ? g.changes.at(c).size() : size_t{0});
  std::printf("\n");
}

size_t count(const GateComparison& g, GateClass c) { return g.changes.count(c) ? g.changes.at(c).size() : 0; }

TEST(CortexMGate, DecomposeToDecomposeFoldChangesNoDecision) {
  const DecisionsFile base = fixture().decisions({{"guard", "decompose"}});
  const DecisionsFile head = fixture().decisions({{"guard", "decompose+fold"}});
  GateComparison g = compare_decisions(base, head);
  print("decompose -> decompose+fold", g);
  EXPECT_EQ(g.cases, 300);
  EXPECT_EQ(count(g, GateClass::newly_unsound), 0u);
  EXPECT_EQ(count(g, GateClass::newly_missed), 0u);
  EXPECT_EQ(count(g, GateClass::unsound_fixed), 0u);
  EXPECT_EQ(count(g, GateClass::newly_rewritten_sound), 0u);
  EXPECT_EQ(g.unchanged, g.decisions);
  // Unsound in both only where the scale's int8 constant floors at eps
  // (|scale| < 255·eps: TinyScaleRoundsTheScaleConstantToZero).
  int64_t tiny_unsound = 0;
  for (const GateDecision& d : head.decisions)
    if (d.unsound()) {
      ++tiny_unsound;
      ASSERT_TRUE(d.c.scale.has_value());
      EXPECT_LT(std::fabs(*d.c.scale), 255 * std::ldexp(1.0, -23)) << d.index;
    }
  EXPECT_EQ(g.still_unsound, tiny_unsound);
  // The guard keeps sound calls (masked, causal, dropout, GQA ones whose rewrite
  // forced alone would still pass at these sizes): missed in both, not newly.
  EXPECT_GT(g.still_missed, 0);
  for (const GateDecision& d : head.decisions)
    if (d.rewrite) {
      EXPECT_EQ(d.pass, "decompose-sdpa");
    }
}

TEST(CortexMGate, AWeakenedNoMaskRuleIsNewlyUnsound) {
  const DecisionsFile base = fixture().decisions({{"guard", "decompose"}});
  GateComparison g = compare_decisions(base, fixture().decisions({{"guard", "decompose+fold"}, {"weaken", "no-mask"}}));
  print("decompose -> decompose+fold weaken=no-mask", g);
  ASSERT_GT(count(g, GateClass::newly_unsound), 0u);
  EXPECT_EQ(count(g, GateClass::newly_missed), 0u);
  const GateChange* first = smallest(g.changes.at(GateClass::newly_unsound));
  EXPECT_TRUE(first->head.c.mask.has_value());
  EXPECT_EQ(first->base.rule, "no-mask");
}

}  // namespace
}  // namespace sdpa::cortex_m
