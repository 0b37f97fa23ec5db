#pragma once
/// GenPolicy: every knob of case generation in one struct, so that a whole
/// generation strategy is one value (after YARPGen's GenPolicy). The
/// generators never draw outside the target's CaseSpace, whatever the policy
/// says: a knob only weighs the choices the space allows.
#include <cstdint>
#include <utility>
#include <vector>

#include "harness/case/case.h"
#include "harness/ir/dtype.h"

namespace sdpa {

/// Options with relative weights (not necessarily summing to 1). The first
/// option is the simplest: shrinking moves toward the front of the list.
template <typename T>
using Weighted = std::vector<std::pair<T, double>>;

/// Lengths on either side of the 32/64/128/256/512 tiles attention kernels
/// use, and of two 512-key blocks (1024 + 1: a third kv block of one key).
inline const std::vector<int64_t> kTileEdgeLengths = {31,  32,  33,  63,  64,  65,  127,  128,  129,
                                                      255, 256, 257, 511, 512, 513, 1023, 1024, 1025};

/// Key tiles of the kernels' online softmax: 64 keys (Triton's BLOCK_N),
/// 512 keys (custom_sdpa's kv blocks). A mask that drops every key of one
/// such tile of a row that keeps others makes a kernel skip or rescale
/// past it (the "empty-tile" classes).
inline const std::vector<int64_t> kKeyTiles = {64, 512};

struct GenPolicy {
  enum class HeadLayout { mha, gqa, mqa };  // Hq == Hkv; Hq = g * Hkv (g >= 2); Hkv == 1
  enum class LengthRelation { decode, equal, q_shorter, q_longer };  // Lq == 1, ==, <, > Lkv
  enum class MaskKind { none, bool_mask, additive };
  enum class ScaleKind { none, ordinary, zero, negative, tiny, huge };
  enum class SymbolMode { none, independent, shared };  // shared: Lq and Lkv are one symbol
  enum class SymbolMax { cap, wide, hint };             // a symbol's declared upper bound

  // Size caps, reached at RapidCheck size 100; smaller sizes scale them down
  // linearly to 2 (lengths, heads, head dims) or 1 (batch dims) at size 0.
  int64_t max_len = 128;      // Lq, Lkv and every runtime length
  int64_t max_heads = 8;      // Hq
  int64_t max_head_dim = 16;  // E and Ev
  int64_t max_batch = 3;      // each batch dim and every runtime batch size
  /// Bound on every tensor (q, k, v, mask, scores, output) at every runtime
  /// size; the length cap shrinks to keep it. Cut at SizeLimits'
  /// max_tensor_elements; keep it >= max_heads * max_batch^rank * max_head_dim.
  int64_t max_elements = int64_t{1} << 22;

  // dtype and layout. A space dtype missing from dtype_weights weighs 1.
  Weighted<DType> dtype_weights = {
      {DType::f32, 4}, {DType::f16, 2}, {DType::bf16, 2}, {DType::f64, 1}, {DType::i8, 1}};
  double p_bshd = 0.25;  // q, k, v as [..., L, H, D] when the space allows it

  // Batch: weight of each rank (index = rank), cut at CaseSpace::max_batch_rank.
  std::vector<double> batch_rank_weights = {4, 3, 2, 1, 1};

  // Heads.
  Weighted<HeadLayout> head_layout_weights = {
      {HeadLayout::mha, 3}, {HeadLayout::gqa, 3}, {HeadLayout::mqa, 2}};
  /// Group size Hq / Hkv of GQA; 3, 5 and 6 are the non-powers of two.
  Weighted<int64_t> group_size_weights = {{2, 3}, {3, 2}, {4, 2}, {5, 1}, {6, 1}, {8, 1}};
  double p_enable_gqa_mha = 0.25;  // enable_gqa=true although Hq == Hkv
  double p_enable_gqa_mqa = 0.5;   // Hkv == 1 with enable_gqa (else aten's broadcast)

  // Lengths: the relation of Lq to Lkv, then each length log-uniform (small
  // lengths common) or, with p_tile_edge_len, a tile edge under the cap.
  Weighted<LengthRelation> length_relation_weights = {{LengthRelation::decode, 2},
                                                      {LengthRelation::equal, 3},
                                                      {LengthRelation::q_shorter, 3},
                                                      {LengthRelation::q_longer, 2}};
  double p_tile_edge_len = 0.1;
  std::vector<int64_t> tile_edges = kTileEdgeLengths;
  /// Long lengths past the size cap: from RapidCheck size long_len_min_size
  /// on, with p_long_len, the longer length of the relation (Lkv, Lq for
  /// q_longer, both for equal), where it is static, is drawn again in
  /// [1, long_len_max], one of long_tile_edges with p_long_tile_edge, and
  /// taken where it is longer and every tensor still fits max_elements at
  /// every runtime size (else the drawn lengths stay). Drawn apart from the
  /// other lengths, it shrinks on its own: toward none, and toward 1.
  double p_long_len = 0.0;
  int long_len_min_size = 34;
  int64_t long_len_max = 1025;
  std::vector<int64_t> long_tile_edges = {511, 512, 513, 1023, 1024, 1025};
  double p_long_tile_edge = 0.9;

  // Head dims.
  double p_head_dim_pow2 = 0.5;       // E (and a differing Ev) a power of two
  /// Of those powers of two, where the space names a
  /// kernel_min_pow2_head_dim: one at least it (else one below). The
  /// log-uniform draws add small powers of two, so 0.75 puts about half of
  /// all power-of-two head dims at the minimum or above.
  double p_head_dim_at_kernel_min = 0.75;
  double p_value_dim_differs = 0.25;  // E != Ev

  // Mask or is_causal (never both: aten rejects it). The weight of no mask
  // is split into plain and is_causal by p_causal.
  Weighted<MaskKind> mask_kind_weights = {
      {MaskKind::none, 5}, {MaskKind::bool_mask, 2}, {MaskKind::additive, 2}};
  double p_causal = 0.3;  // is_causal when no mask is drawn
  Weighted<MaskPattern> mask_pattern_weights = {
      {MaskPattern::keep_all, 1}, {MaskPattern::random, 3},  {MaskPattern::causal, 2},
      {MaskPattern::window, 2},   {MaskPattern::padding, 2}, {MaskPattern::full_row, 2}};
  Weighted<MaskFill> mask_fill_weights = {
      {MaskFill::neg_inf, 2}, {MaskFill::min, 1}, {MaskFill::neg_1e4, 1}};
  /// Keep probability of the random and full-row patterns, and of a block
  /// of the block-sparse pattern.
  Weighted<double> mask_keep_weights = {{0.5, 2}, {0.9, 1}, {0.1, 1}};
  /// Masks of batched serving: with p_serving_mask a drawn mask takes one of
  /// serving_pattern_weights instead. Drawn apart from mask_pattern_weights
  /// so that the other patterns' draws, and the seeds known to find them,
  /// stay as they were; shrinks back to the drawn pattern. A serving mask
  /// has the serving shape: the trailing dims of [batch..., 1, Lq, Lkv] at
  /// the drawn rank (full for per-batch padding), one head for all, and for
  /// a padding pattern Lq as 1 where the drawn mask dim is 1 ([B, 1, 1, Lkv]).
  double p_serving_mask = 0.25;
  Weighted<MaskPattern> serving_pattern_weights = {{MaskPattern::left_padding, 1},
                                                   {MaskPattern::per_batch_padding, 1},
                                                   {MaskPattern::block_sparse, 1}};
  /// The keys left padding drops, and the most per-batch padding pads:
  /// log-uniform up to the length cap (past it, to the longest long length,
  /// where those are drawn), or with p_pad_tile_edge a tile edge, so that
  /// whole tiles empty; cut to Lkv (left padding: Lkv - 1, keeping a key).
  /// Drawn apart from Lkv, it shrinks alone.
  double p_pad_tile_edge = 0.5;
  /// Block-sparse blocks in the kernels' tiles: query rows (1: each row its
  /// own; 32/64/256 custom_sdpa's q splits) by keys (64 Triton's BLOCK_N,
  /// 512 custom_sdpa's kv blocks).
  Weighted<int64_t> block_rows_weights = {{1, 2}, {32, 1}, {64, 1}, {256, 1}};
  Weighted<int64_t> block_keys_weights = {{32, 1}, {64, 3}, {128, 1}, {256, 1}, {512, 3}};
  double p_mask_query_dtype = 0.5;  // an additive mask in the f16/bf16 query dtype, not f32
  double p_mask_full_rank = 0.5;    // rank batch+3; else log-uniform in [2, batch+3]
  double p_mask_dim_one = 0.3;      // each mask dim broadcast as 1
  double p_mask_rank_one = 0.05;    // a 1-D mask [Lkv] (or [1]), broadcast over every row

  // Scalars.
  double p_dropout = 0.1;
  Weighted<double> dropout_weights = {{0.1, 1}, {0.5, 1}, {0.9, 1}};
  Weighted<ScaleKind> scale_weights = {{ScaleKind::none, 4}, {ScaleKind::ordinary, 3},
                                       {ScaleKind::zero, 1}, {ScaleKind::negative, 1},
                                       {ScaleKind::tiny, 1}, {ScaleKind::huge, 1}};
  /// ScaleKind::ordinary values, negated for ScaleKind::negative.
  Weighted<double> ordinary_scales = {{1.0, 1}, {0.5, 1}, {0.125, 1}, {2.0, 1}};
  double tiny_scale = 1e-8;
  double huge_scale = 1e4;
  /// start_pos > 0 where the space allows it and Lq + start_pos <= Lkv at
  /// every size (custom_sdpa aborts beyond the cache).
  double p_start_pos = 0.5;
  double p_start_pos_bottom_right = 0.5;  // start_pos = Lkv - Lq, the decode position
  /// With start_pos > 0: the KV cache shape of decoding, Lkv = start_pos + Lq,
  /// start_pos a symbol (unbacked with p_unbacked), as export sees input_pos.
  double p_cache_kv_len = 0.3;
  /// KV-cache entry forms (CaseSpace::kv_cache): with p_cache_block_edge the
  /// cache reaches past one of cache_block_edges (key-block edges of
  /// attention kernels: custom_sdpa's 512 keys) and one run puts start_pos
  /// at the edge or up to Lq before it, so the queries read keys on both
  /// sides (or, Lq before, exactly up to it); with p_start_pos_context_range start_pos's declared
  /// range is [0, Lkv - 1] (llama's torch._check(start_pos <
  /// max_context_len)), else [0, Lkv - Lq].
  double p_cache_block_edge = 0.3;
  std::vector<int64_t> cache_block_edges = {512, 1024};
  double p_start_pos_context_range = 0.2;

  // Dynamic dims.
  Weighted<SymbolMode> symbol_mode_weights = {
      {SymbolMode::none, 5}, {SymbolMode::independent, 3}, {SymbolMode::shared, 2}};
  double p_len_symbolic = 0.6;    // Lq, Lkv each a symbol in independent mode
  double p_batch_symbolic = 0.3;  // each batch dim a symbol when not static
  double p_unbacked = 0.2;        // a symbol without hint
  Weighted<int64_t> symbol_min_weights = {{1, 2}, {2, 2}, {0, 1}};  // lowered to the hint
  Weighted<SymbolMax> symbol_max_weights = {
      {SymbolMax::cap, 3}, {SymbolMax::wide, 2}, {SymbolMax::hint, 1}};
  /// SymbolMax::wide, raised to the symbol's runtime cap, cut at SizeLimits' max_dim.
  int64_t wide_symbol_max = 4096;
  double p_runtime_differs = 0.6;   // each runtime size moved off the static size (the hint)
  double p_runtime_boundary = 0.3;  // a moved size is hint +- 1 or its range's min or max
  int64_t max_runtime_entries = 3;  // at most SizeLimits' max_runs

  // Data.
  Weighted<Distribution> distribution_weights = {{Distribution::normal, 4},
                                                 {Distribution::uniform, 2},
                                                 {Distribution::integers, 1},
                                                 {Distribution::large, 1}};
  Weighted<double> magnitude_weights = {{1.0, 6}, {0.01, 1}, {100.0, 1}};
  /// Special values over the drawn data (CaseSpace::non_finite only):
  /// rare, and shrinking toward finite data, then NaN in one element of q.
  double p_special = 0.03;
  Weighted<SpecialValue> special_value_weights = {{SpecialValue::nan, 3},
                                                  {SpecialValue::pos_inf, 2},
                                                  {SpecialValue::neg_inf, 2},
                                                  {SpecialValue::overflow, 1},
                                                  {SpecialValue::huge, 1}};
  /// "mask" falls back to "k" when the case has no additive mask.
  Weighted<std::string> special_tensor_weights = {{"q", 2}, {"k", 2}, {"v", 2}, {"mask", 1}};
  Weighted<SpecialPlace> special_place_weights = {{SpecialPlace::elements, 3},
                                                  {SpecialPlace::row, 1}};
  Weighted<int64_t> special_count_weights = {{1, 4}, {2, 1}, {3, 1}};

  // Empty tensors (CaseSpace::empty only): a zero-size dim as a boundary
  // value, rare; shrinks toward no empty dim.
  double p_empty = 0.02;
  enum class EmptyDim { batch, q_len, kv_len };
  Weighted<EmptyDim> empty_dim_weights = {
      {EmptyDim::kv_len, 1}, {EmptyDim::q_len, 1}, {EmptyDim::batch, 1}};

  /// Small cases for fast campaigns: about 1200 score elements
  /// [batch..., Hq, Lq, Lkv] on average over sizes 0..100 (lengths are
  /// log-uniform, so most cases are much smaller), tile edges up to 129.
  static GenPolicy defaults();
  /// Long sequences, so that every tile edge up to 1025 appears: max_len
  /// 720, cut to 418 by max_elements at size 100, with at most 6 heads and
  /// one batch dim of at most 4; past the cap, long lengths to 1025
  /// (p_long_len, mostly the kv block edges 511 to 513 and 1023 to 1025)
  /// where the heads and batch leave room in max_elements (1025 x 1025
  /// scores take B * Hq <= 3); masks in 4 calls of 7, four in five of them
  /// serving masks (left and per-batch padding, block-sparse).
  static GenPolicy large();
};

}  // namespace sdpa
