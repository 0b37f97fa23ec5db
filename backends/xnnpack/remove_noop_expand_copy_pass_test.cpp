// RemoveNoopExpandCopyPass: the no-op expand_copy nodes of the traced
// pattern go, an expand that broadcasts one key/value head stays, and the
// pattern no longer matches what is left (semantics §3.2).
#include "backends/xnnpack/remove_noop_expand_copy_pass.h"

#include <gtest/gtest.h>

#include "backends/xnnpack/pattern_entry.h"
#include "backends/xnnpack/sdpa_pattern.h"
#include "backends/xnnpack/test_cases.h"
#include "harness/ir/graph_verify.h"

namespace sdpa::xnnpack {
namespace {

using testing::masked_call;
using testing::with_variant;

TEST(XnnpackRemoveNoopExpand, RemovesTheFourNoOpExpandsOfThePatternAndBreaksTheMatch) {
  const Case c = masked_call();
  const Graph g0 = pattern_entry_graph(c);
  ASSERT_EQ(g0.count(kExpandCopy), 4) << "q, k^T, P and v";
  ASSERT_EQ(match_sdpa_pattern(g0).size(), 1u);
  Pass::Result r = RemoveNoopExpandCopyPass().run(g0, c.shape_env());
  EXPECT_EQ(r.graph.count(kExpandCopy), 0);
  EXPECT_TRUE(r.decisions.empty());
  EXPECT_TRUE(verify_graph(r.graph).empty()) << verify_graph(r.graph)[0];
  EXPECT_EQ(r.graph.nodes.size(), g0.nodes.size() - 4);
  EXPECT_EQ(match_sdpa_pattern(r.graph).size(), 0u) << "the pattern graphs keep their expand_copy nodes";
  // What is left is the qk-no-expand variant, op for op.
  const Graph no_expand = pattern_entry_graph(with_variant(c, "qk-no-expand"));
  ASSERT_EQ(r.graph.nodes.size(), no_expand.nodes.size());
  for (size_t i = 0; i < no_expand.nodes.size(); ++i) EXPECT_EQ(r.graph.nodes[i].op, no_expand.nodes[i].op) << i;
}

TEST(XnnpackRemoveNoopExpand, KeepsTheExpandsThatBroadcastOneKeyValueHead) {
  Case c = masked_call();
  c.kv_heads = 1;
  const Graph g0 = pattern_entry_graph(c);
  Pass::Result r = RemoveNoopExpandCopyPass().run(g0, c.shape_env());
  EXPECT_EQ(r.graph.count(kExpandCopy), 2) << "k^T and v broadcast from 1 head to 2";
  EXPECT_TRUE(verify_graph(r.graph).empty()) << verify_graph(r.graph)[0];
  // The mutant removes them as well: the graph no longer verifies or computes.
  Pass::Result wrong = RemoveNoopExpandCopyPass(/*checked=*/false).run(g0, c.shape_env());
  EXPECT_EQ(wrong.graph.count(kExpandCopy), 0);
}

}  // namespace
}  // namespace sdpa::xnnpack
