#include "generators/case_classes.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sdpa {
namespace {

bool has(const std::vector<std::string>& classes, const std::string& name) {
  return std::find(classes.begin(), classes.end(), name) != classes.end();
}

TEST(BoundaryClasses, StaticDecodeWithGroupOfThree) {
  Case c;
  c.dtype = DType::bf16;
  c.q_heads = 6;
  c.kv_heads = 2;
  c.enable_gqa = true;
  c.q_len = 1;
  c.kv_len = 257;
  c.head_dim = 8;
  c.value_dim = 4;
  c.start_pos = 200;
  c.scale = 1e-8;
  auto k = boundary_classes(c);
  for (const char* name : {"dtype:bf16", "gqa", "gqa-group-non-pow2", "enable_gqa", "Lq=1",
                           "Lq<Lkv", "tile-edge-len", "tile-edge:257", "E!=Ev", "start_pos>0",
                           "scale:tiny", "mask:none", "symbols:none", "batch-rank:0"})
    EXPECT_TRUE(has(k, name)) << name;
  for (const char* name : {"Hq=Hkv", "Hkv=1", "Lq>Lkv", "Lq=Lkv", "causal", "bshd", "scale:none"})
    EXPECT_FALSE(has(k, name)) << name;
  EXPECT_TRUE(std::is_sorted(k.begin(), k.end()));
}

TEST(BoundaryClasses, AdditiveFullRowMaskAndScales) {
  Case c;
  c.dtype = DType::f16;
  c.q_heads = 4;
  c.kv_heads = 1;
  c.batch = {2};
  c.q_len = 5;
  c.kv_len = 3;
  c.mask = MaskSpec{DType::f16, {1, 5, 3}, MaskPattern::full_row, 0.5, MaskFill::min};
  auto k = boundary_classes(c);
  for (const char* name : {"Hkv=1", "Lq>Lkv", "mask:additive", "mask-dtype:f16", "full-row-mask",
                           "pattern:full-row", "fill:min", "mask-rank<full", "mask-dim-1"})
    EXPECT_TRUE(has(k, name)) << name;
  c.mask->dtype = DType::b8;
  EXPECT_FALSE(has(boundary_classes(c), "fill:min"));  // bool masks have no fill

  const std::pair<double, const char*> scales[] = {
      {0.0, "scale:0"}, {-0.5, "scale:negative"}, {1e4, "scale:huge"}, {0.125, "scale:ordinary"}};
  for (const auto& [scale, name] : scales) {
    c.scale = scale;
    EXPECT_TRUE(has(boundary_classes(c), name)) << name;
  }
}

TEST(BoundaryClasses, SharedUnbackedSymbolsWithRuntimeOffHint) {
  Case c;
  c.q_len = c.kv_len = SymExpr::symbol("s0");
  c.batch = {SymExpr::symbol("s1")};
  c.symbols["s0"] = SymbolInfo{std::nullopt, 1, 64};
  c.symbols["s1"] = SymbolInfo{2, 1, 4};
  c.runtime = {{{"s0", 64}, {"s1", 2}}, {{"s0", 1}, {"s1", 3}}};
  auto k = boundary_classes(c);
  for (const char* name : {"symbols:shared", "symbols:batch", "symbol:unbacked", "runtime!=hint",
                           "runtime:multiple", "Lq=Lkv", "Lq=1", "tile-edge:64"})
    EXPECT_TRUE(has(k, name)) << name;
  EXPECT_FALSE(has(k, "symbols:independent"));

  c.runtime = {{{"s0", 5}, {"s1", 2}}};
  c.q_len = 3;
  c.symbols["s0"].hint = 5;
  auto independent = boundary_classes(c);
  EXPECT_TRUE(has(independent, "symbols:independent"));
  EXPECT_FALSE(has(independent, "runtime!=hint"));
  EXPECT_FALSE(has(independent, "symbol:unbacked"));
}

TEST(BoundaryClasses, MasksThatEmptyWholeKeyTiles) {
  Case c;
  c.q_len = 2;
  c.kv_len = 129;
  c.mask = MaskSpec{DType::b8, {2, 129}, MaskPattern::left_padding, 64, MaskFill::neg_inf};
  auto k = boundary_classes(c);
  // Keys 0..63 dropped, 64..128 kept: the first 64-key tile is empty.
  for (const char* name : {"pattern:left-padding", "mask:left-padding", "empty-tile", "empty-tile:64",
                           "empty-tile:left-padding:129", "tile-edge:129"})
    EXPECT_TRUE(has(k, name)) << name;
  for (const char* name : {"empty-tile:512", "mask:fully-masked-row"}) EXPECT_FALSE(has(k, name)) << name;
  c.mask->param = 63;  // one key of the first tile kept
  EXPECT_FALSE(has(boundary_classes(c), "empty-tile"));
  c.mask->param = 129;  // every key padded: fully masked rows, no tile skipped past
  k = boundary_classes(c);
  EXPECT_TRUE(has(k, "mask:fully-masked-row"));
  EXPECT_FALSE(has(k, "empty-tile"));
  EXPECT_FALSE(has(k, "mask:left-padding"));

  // Right padding past 512 keys of 1025: the tile of key 1024 and the second 512-key block.
  c.kv_len = 1025;
  c.mask = MaskSpec{DType::f32, {2, 1025}, MaskPattern::padding, 500, MaskFill::neg_inf};
  k = boundary_classes(c);
  for (const char* name : {"empty-tile:64", "empty-tile:512", "empty-tile:padding:1025"})
    EXPECT_TRUE(has(k, name)) << name;
  // A mask broadcast over keys drops whole rows, never one tile.
  c.mask->shape = {2, 1};
  EXPECT_FALSE(has(boundary_classes(c), "empty-tile"));
}

TEST(BoundaryClasses, PerBatchLengthsAndBlockSparseRowsFromTheMaskData) {
  Case c;
  c.batch = {2};
  c.q_heads = 2;
  c.q_len = 3;
  c.kv_len = 6;
  c.data.seed = 7;  // pads 4 and 2 under param 4 (tensor_data_test)
  c.mask = MaskSpec{DType::b8, {2, 1, 1, 6}, MaskPattern::per_batch_padding, 4, MaskFill::neg_inf};
  EXPECT_TRUE(has(boundary_classes(c), "mask:per-batch-padding"));
  c.mask->shape = {1, 1, 1, 6};  // one batch element: one length for all
  EXPECT_FALSE(has(boundary_classes(c), "mask:per-batch-padding"));

  c.kv_len = 256;
  c.mask = MaskSpec{DType::b8, {3, 256}, MaskPattern::block_sparse, 0.5, MaskFill::neg_inf, 1, 32};
  auto k = boundary_classes(c);
  for (const char* name : {"pattern:block-sparse", "mask:block-sparse", "empty-tile:64", "empty-tile:block-sparse:256"})
    EXPECT_TRUE(has(k, name)) << name;
  c.mask->param = 1.0;  // every block kept
  k = boundary_classes(c);
  EXPECT_FALSE(has(k, "mask:block-sparse"));
  EXPECT_FALSE(has(k, "empty-tile"));
}

}  // namespace
}  // namespace sdpa
