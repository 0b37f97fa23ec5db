#include "generators/gen_policy.h"

namespace sdpa {

GenPolicy GenPolicy::defaults() { return GenPolicy{}; }

GenPolicy GenPolicy::large() {
  GenPolicy p;
  p.max_len = 720;
  p.max_heads = 6;
  p.max_batch = 4;
  p.max_head_dim = 64;
  // Rank <= 1: with 6 heads and batch 4, lengths up to 418 fit max_elements;
  // half the calls batched, so that per-batch padding lengths differ.
  p.batch_rank_weights = {1, 1};
  p.p_tile_edge_len = 0.3;
  // Past the cap, long lengths to 1025 where the heads and batch leave room
  // (the kv block edges 511 to 513 and 1024 + 1 most often), and masks in
  // most calls, mostly of batched serving, which empty whole tiles there.
  p.p_long_len = 0.75;
  p.mask_kind_weights = {{MaskKind::none, 3}, {MaskKind::bool_mask, 2}, {MaskKind::additive, 2}};
  p.p_serving_mask = 0.8;
  return p;
}

}  // namespace sdpa
