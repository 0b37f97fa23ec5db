#pragma once
/// Generators for the static shape of a call: dtype, layout, heads, batch,
/// head dims and lengths. Each takes its cap (already scaled by size).
#include <rapidcheck.h>

#include <cstdint>
#include <vector>

#include "generators/gen_policy.h"
#include "harness/case/case.h"
#include "harness/case/case_space.h"

namespace sdpa {

struct Heads {
  int64_t Hq = 1;
  int64_t Hkv = 1;
  bool enable_gqa = false;
};

struct Lengths {
  int64_t Lq = 1;
  int64_t Lkv = 1;
  GenPolicy::LengthRelation relation = GenPolicy::LengthRelation::decode;
};

struct HeadDims {
  int64_t E = 1;
  int64_t Ev = 1;
};

/// One of space.dtypes, weighed by p.dtype_weights; shrinks toward space.dtypes[0].
rc::Gen<DType> gen_dtype(const GenPolicy& p, const CaseSpace& space);

/// bshd only when space.bshd_layout; shrinks toward bhsd.
rc::Gen<Layout> gen_layout(const GenPolicy& p, const CaseSpace& space);

/// A head layout aten accepts, with Hq <= max_heads: MHA (Hq == Hkv), GQA
/// (enable_gqa, Hq = g * Hkv) or MQA (Hkv == 1). Shrinks toward MHA, Hq 1.
rc::Gen<Heads> gen_heads(const GenPolicy& p, int64_t max_heads);

/// The highest batch rank drawn: the last rank p.batch_rank_weights weighs,
/// cut at space.max_batch_rank and SizeLimits' max_batch_rank.
size_t max_batch_rank(const GenPolicy& p, const CaseSpace& space);

/// Leading dims, rank at most max_batch_rank(p, space), each in
/// [1, max_batch]. Shrinks toward rank 0.
rc::Gen<std::vector<int64_t>> gen_batch(const GenPolicy& p, const CaseSpace& space,
                                        int64_t max_batch);

/// E and Ev in [1, max_head_dim], E != Ev with p.p_value_dim_differs.
/// With kernel_min_pow2 > 1 (CaseSpace::kernel_min_pow2_head_dim) and a
/// power of two in [kernel_min_pow2, max_head_dim], a power-of-two head dim
/// is at least kernel_min_pow2 with
/// p.p_head_dim_at_kernel_min; without it, any power of two up to
/// max_head_dim is as likely.
rc::Gen<HeadDims> gen_head_dims(const GenPolicy& p, int64_t max_head_dim, int64_t kernel_min_pow2 = 0);

/// With p.p_empty where space.empty, the dim gen_case sets to 0 (batch: the
/// first batch dim, a batch dim added when the case has none); shrinks
/// toward none.
rc::Gen<std::optional<GenPolicy::EmptyDim>> gen_empty(const GenPolicy& p, const CaseSpace& space);

/// Lq and Lkv in [1, max_len] in a relation of p.length_relation_weights,
/// each possibly a tile edge. Shrinks toward Lq = 1 (decode) and Lkv = 1.
rc::Gen<Lengths> gen_lengths(const GenPolicy& p, int64_t max_len);

/// At `size` >= p.long_len_min_size, with p.p_long_len, a length in
/// [1, p.long_len_max], one of p.long_tile_edges with p.p_long_tile_edge
/// (gen_case applies it where it fits); shrinks toward none, and toward 1.
rc::Gen<std::optional<int64_t>> gen_long_length(const GenPolicy& p, int size);

/// Lengths `l` with the longer of its relation (Lkv for decode and
/// q_shorter, Lq for q_longer, both for equal) set to `len`, where `len`
/// is longer than what it replaces; else `l`.
Lengths with_long_length(const Lengths& l, int64_t len);

}  // namespace sdpa
