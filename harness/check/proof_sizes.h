#pragma once
/// The sizes a missed-rewrite claim is proven at. A kept node's forced
/// rewrite is a missed rewrite only if it refines the entry graph at every
/// size the symbols allow; the runtime entries are a few of those sizes.
/// The proof adds, from the case's symbols and size expressions alone
/// (no target), one symbol changed at a time from the first runtime entry
/// and from the export hints: each symbol's min, max, hint and hint +- 1,
/// and the values where two of the case's lengths (Lq, Lkv, start_pos,
/// start_pos + Lq, batch and mask dims) are equal or one apart (Lq = Lkv,
/// Lq = Lkv +- 1) or a length is 0 or 1; then the corners where every
/// symbol sits at its min or at its max. Every size is in the symbols' ranges, makes a
/// valid case (validate_case) and fits the size limits, checked before any
/// tensor exists.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/case/case.h"
#include "harness/case/case_validate.h"
#include "harness/case/tensor_data.h"

namespace sdpa {

/// One size of the proof beyond the runtime entries.
struct ProofSize {
  Assignment at;
  std::string why;  // where it comes from: "the min of s0", "Lkv = Lq + 1"
};

/// What one proof may cost. A symbol whose max does not fit is tried at
/// the largest value that does (and `why` says so).
struct ProofLimits {
  /// Elements of the score tensor [batch..., Hq, Lq, Lkv] (and of q, k,
  /// v) at one proof size: 2^18, a 512 x 512 score matrix. The entry graph
  /// and every forced rewrite run on exact kernels at each size.
  int64_t max_elements = int64_t{1} << 18;
  /// Sizes per case, the cheapest kept.
  size_t max_sizes = 24;
};

/// The proof sizes of `c`, without its runtime entries, in order of cost
/// (fewest score elements first, generation order among equals):
/// deterministic for a case. Empty for a case without symbols.
std::vector<ProofSize> proof_sizes(const Case& c, const SizeLimits& limits = {},
                                   const ProofLimits& proof = {});

/// The same call with its data drawn again, independently, so that data
/// cannot hide a difference on both draws: the seed is
/// splitmix64(seed ^ fnv1a64("second draw")); the data is finite `normal`
/// (no exact zeros, as `integers` draws, so a V of zeros or dropout meeting
/// them hides nothing; no special values, which can make every row NaN in
/// both graphs) with a magnitude that makes the scores of order 1
/// (1 / sqrt(|scale| sqrt(E)), within [1/64, 64]; 1 for scale 0), so that
/// no softmax saturates onto one key and hides the weight of the others,
/// as `large` data or a large scale does. Masks and dropout follow the new
/// seed like every other stream.
Case second_draw(const Case& c);

/// "s0 = 3, s1 = 4"; "static sizes" for an empty assignment.
std::string sizes_str(const Assignment& at);

}  // namespace sdpa
