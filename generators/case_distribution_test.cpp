#include <gtest/gtest.h>

#include <iostream>
#include <map>

#include "generators/case_classes.h"
#include "generators/case_gen.h"

namespace sdpa {
namespace {

struct Report {
  std::map<std::string, int> counts;
  double mean_score_elements = 0;  // over every case and runtime size
};

// Classes of `n` cases drawn at sizes 0..100 in turn, as a campaign does.
Report report(const GenPolicy& p, const CaseSpace& space, int n) {
  Report r;
  auto g = gen_case(p, space);
  double elements = 0;
  for (int i = 0; i < n; ++i) {
    Case c = g(rc::Random(static_cast<uint64_t>(i)), i % 101).value();
    for (const auto& name : boundary_classes(c)) ++r.counts[name];
    double per_case = 0;
    for (const auto& at : c.runs()) {
      double e = 1;
      for (int64_t d : eval_shape(score_shape(c), at)) e *= static_cast<double>(d);
      per_case += e;
    }
    elements += per_case / static_cast<double>(c.runs().size());
  }
  r.mean_score_elements = elements / n;
  return r;
}

void print(const std::string& title, const Report& r, int n) {
  std::cout << title << " (" << n << " cases, mean score elements " << r.mean_score_elements
            << ")\n";
  for (const auto& [name, count] : r.counts)
    std::cout << "  " << name << ": " << count << "\n";
}

TEST(Distribution, DefaultsReachEveryBoundaryClass) {
  CaseSpace space;
  space.start_pos = true;
  const int n = 5000;
  Report r = report(GenPolicy::defaults(), space, n);
  print("defaults", r, n);
  for (const char* name :
       {"Lq=1", "Lq<Lkv", "Lq>Lkv", "Lq=Lkv", "Hkv=1", "Hq=Hkv", "gqa", "gqa-group-non-pow2",
        "enable_gqa", "E!=Ev", "tile-edge-len", "mask:none", "mask:bool", "mask:additive",
        "full-row-mask", "pattern:random", "pattern:causal", "pattern:window", "pattern:padding",
        "pattern:keep-all", "fill:-inf", "fill:min", "fill:-1e4", "mask-rank<full", "mask-dim-1",
        "mask-dtype:f32", "mask-dtype:f16", "mask-dtype:bf16", "causal", "dropout", "bshd",
        "scale:none", "scale:0", "scale:negative", "scale:tiny", "scale:huge", "scale:ordinary",
        "start_pos>0", "kv=start_pos+Lq", "mask-rank:1", "symbols:none", "symbols:shared", "symbols:independent", "symbols:batch",
        "symbol:unbacked", "runtime!=hint", "runtime:multiple", "dtype:f32", "dtype:f16",
        "dtype:bf16", "dtype:f64", "batch-rank:0", "batch-rank:1", "batch-rank:2", "dist:normal",
        "dist:uniform", "dist:integers", "dist:large", "pattern:left-padding", "pattern:per-batch-padding",
        "pattern:block-sparse", "mask:left-padding", "mask:per-batch-padding", "mask:block-sparse",
        "mask:fully-masked-row", "empty-tile", "empty-tile:64"})
    EXPECT_GT(r.counts[name], 0) << name;
  // Rare classes still get dozens of cases; campaigns stay fast.
  EXPECT_GT(r.counts["full-row-mask"], 50);
  EXPECT_GT(r.counts["symbols:shared"], 300);
  EXPECT_GT(r.mean_score_elements, 200);
  EXPECT_LT(r.mean_score_elements, 2500);
}

TEST(Distribution, NonFiniteAndEmptyCasesOnlyWhereTheSpaceAllowsThemAndRare) {
  const int n = 5000;
  Report closed = report(GenPolicy::defaults(), CaseSpace{}, n);
  for (const auto& [name, count] : closed.counts) {
    EXPECT_NE(name.rfind("special", 0), 0u) << name;
    EXPECT_NE(name.rfind("empty:", 0), 0u) << name;
  }
  CaseSpace open;
  open.non_finite = open.empty = true;
  Report r = report(GenPolicy::defaults(), open, n);
  print("defaults, non-finite and empty", r, n);
  for (const char* name : {"special:nan", "special:+inf", "special:-inf", "special:overflow", "special:huge",
                           "special-tensor:q", "special-tensor:k", "special-tensor:v", "special-tensor:mask",
                           "special-place:elements", "special-place:row", "empty:batch", "empty:Lq", "empty:Lkv"})
    EXPECT_GT(r.counts[name], 0) << name;
  int special = 0;
  for (const char* v : {"special:nan", "special:+inf", "special:-inf", "special:overflow", "special:huge"})
    special += r.counts[v];
  EXPECT_GT(special, n * 0.02);  // p_special 0.03
  EXPECT_LT(special, n * 0.04);
}

// Every tile edge, and each serving pattern emptying a whole key tile at
// every kv block edge (511 to 513, 1024 and 1024 + 1): about 1 case in 400
// each (7 to 27 of these 5,000), so that a campaign of a few thousand cases
// meets each several times.
TEST(Distribution, LargeReachesEveryTileEdgeAndEmptiesTilesAcrossThem) {
  const int n = 5000;
  Report r = report(GenPolicy::large(), CaseSpace{}, n);
  print("large", r, n);
  for (int64_t edge : kTileEdgeLengths)
    EXPECT_GT(r.counts["tile-edge:" + std::to_string(edge)], 0) << edge;
  for (const char* pattern : {"left-padding", "per-batch-padding", "block-sparse"})
    for (int edge : {511, 512, 513, 1024, 1025}) {
      const std::string name = std::string("empty-tile:") + pattern + ":" + std::to_string(edge);
      EXPECT_GE(r.counts[name], 5) << name;
    }
  EXPECT_GT(r.counts["empty-tile:512"], 100);
  EXPECT_GT(r.counts["mask:per-batch-padding"], 40);
}

}  // namespace
}  // namespace sdpa
