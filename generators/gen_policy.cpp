#include "generators/gen_policy.h"

namespace sdpa {

GenPolicy GenPolicy::defaults() { return GenPolicy{}; }

GenPolicy GenPolicy::large() {
  GenPolicy p;
  p.max_len = 720;
  p.max_heads = 6;
  p.max_head_dim = 64;
  p.max_batch = 2;
  // Rank <= 1: with 6 heads and batch 2, lengths up to 591 fit max_elements.
  p.batch_rank_weights = {3, 1};
  p.p_tile_edge_len = 0.3;
  return p;
}

}  // namespace sdpa
