#pragma once
/// One scaled_dot_product_attention call, fully specified (CORPUS_FORMAT.md).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/ir/dtype.h"
#include "harness/ir/shape_env.h"
#include "harness/ir/symbolic.h"

namespace sdpa {

enum class Layout { bhsd, bshd };
/// What a mask keeps (README, "Tensor data"). The last three are the masks
/// of batched serving: left padding, per-batch padding lengths, block-sparse rows.
enum class MaskPattern {
  random, causal, window, padding, full_row, keep_all,
  left_padding, per_batch_padding, block_sparse
};
enum class MaskFill { neg_inf, min, neg_1e4 };
enum class Distribution { normal, uniform, integers, large };
/// A non-finite or range-edge value written over drawn data: NaN, +inf,
/// -inf, `overflow` (just past the case dtype's largest finite value, so the
/// input rounds to inf: only in f16/bf16 for values f32 holds) or `huge`
/// (65504, the largest f16: finite in every dtype, q.k overflows in f16).
enum class SpecialValue { nan, pos_inf, neg_inf, overflow, huge };
/// Where: `elements` (count elements at hashed indices) or `row` (count
/// whole rows of the last dim: one position of q, k or v, one mask row).
enum class SpecialPlace { elements, row };
/// Where a causal mask sits when Lq != Lkv: top-left keeps j <= i (aten,
/// efficient, cuDNN), bottom-right keeps j <= i + Lkv - Lq (a direct flash call),
/// start-pos keeps j <= i + start_pos (a KV-cache step at position start_pos:
/// rows start_pos .. start_pos + Lq of llama's causal mask, custom_sdpa's
/// causal offset); start_pos 0 is top-left, Lkv - Lq bottom-right.
enum class CausalAlignment { top_left, bottom_right, start_pos };

const char* layout_name(Layout l);
const char* pattern_name(MaskPattern p);
const char* fill_name(MaskFill f);
const char* distribution_name(Distribution d);
const char* alignment_name(CausalAlignment a);
const char* special_value_name(SpecialValue v);
const char* special_place_name(SpecialPlace p);
std::optional<Layout> parse_layout(const std::string& s);
std::optional<MaskPattern> parse_pattern(const std::string& s);
std::optional<MaskFill> parse_fill(const std::string& s);
std::optional<Distribution> parse_distribution(const std::string& s);
std::optional<CausalAlignment> parse_alignment(const std::string& s);
std::optional<SpecialValue> parse_special_value(const std::string& s);
std::optional<SpecialPlace> parse_special_place(const std::string& s);

struct MaskSpec {
  DType dtype = DType::b8;  // b8, f32, f16 or bf16
  SymShape shape;           // broadcastable to [batch..., Hq, Lq, Lkv]
  MaskPattern pattern = MaskPattern::keep_all;
  /// random, full-row, block-sparse: keep probability (of an element, of a
  /// block); window: width; padding: kept leading keys; left-padding:
  /// dropped leading keys; per-batch-padding: most trailing keys a batch
  /// element pads.
  double param = 0.0;
  MaskFill fill = MaskFill::neg_inf;  // additive masks only
  /// block-sparse only: a block is block_rows query rows by block_keys keys,
  /// kept or dropped whole; 0 for every other pattern.
  int64_t block_rows = 0;
  int64_t block_keys = 0;
};

/// Special values written into one tensor after its data is drawn
/// (README, "Tensor data"): which elements comes from the stream
/// "special_<tensor>", so every element stays a pure function of the seed.
struct SpecialData {
  SpecialValue value = SpecialValue::nan;
  std::string tensor = "q";  // "q", "k", "v" or "mask" (an additive mask only)
  SpecialPlace place = SpecialPlace::elements;
  int64_t count = 1;         // elements or rows, >= 1
};

struct DataSpec {
  uint64_t seed = 0;
  Distribution distribution = Distribution::normal;
  double magnitude = 1.0;
  std::optional<SpecialData> special;  // none: finite data only
};

struct Case {
  DType dtype = DType::f32;
  Layout layout = Layout::bhsd;
  SymShape batch;              // leading dims before the head dim
  int64_t q_heads = 1;         // Hq
  int64_t kv_heads = 1;        // Hkv
  SymExpr q_len = 1;           // Lq
  SymExpr kv_len = 1;          // Lkv
  int64_t head_dim = 1;        // E, of q and k
  int64_t value_dim = 1;       // Ev
  bool enable_gqa = false;
  bool is_causal = false;
  CausalAlignment causal_alignment = CausalAlignment::top_left;  // with is_causal
  double dropout_p = 0.0;
  std::optional<double> scale;  // none: 1/sqrt(E)
  SymExpr start_pos = 0;
  std::optional<MaskSpec> mask;
  std::map<std::string, SymbolInfo> symbols;
  std::vector<Assignment> runtime;  // sizes the exported graph runs at
  DataSpec data;
  /// The target's entry-form variant (which pattern, where the scale sits,
  /// which module); empty: the target's only or default form.
  std::string variant;

  /// The scale the call uses: the given one or 1/sqrt(E).
  double effective_scale() const;
  ShapeEnv shape_env() const;
  /// The assignments to execute at: `runtime`, or one empty assignment when
  /// the case has no symbols.
  std::vector<Assignment> runs() const;
  /// Whether query row i keeps key j under is_causal and the alignment, at
  /// a run whose start_pos is `start_pos`.
  bool causal_keeps(int64_t i, int64_t j, int64_t Lq, int64_t Lkv, int64_t start_pos = 0) const;
};

/// Shapes of the call's tensors in the entry layout (bhsd: [..., H, L, E];
/// bshd: [..., L, H, E]) and of the output, always [..., Hq, Lq, Ev].
SymShape query_shape(const Case& c);
SymShape key_shape(const Case& c);
SymShape value_shape(const Case& c);
SymShape output_shape(const Case& c);
/// [batch..., Hq, Lq, Lkv]: the score tensor a mask broadcasts to.
SymShape score_shape(const Case& c);

/// The case's sizes at one runtime assignment.
struct ConcreteSizes {
  std::vector<int64_t> batch;
  int64_t Hq, Hkv, Lq, Lkv, E, Ev, start_pos;
  std::vector<int64_t> mask_shape;  // empty when there is no mask
  int64_t batch_numel() const;
};
ConcreteSizes concrete_sizes(const Case& c, const Assignment& at);

/// One-line summary for progress output and reports: "f32 bhsd B[2] Hq4/Hkv2 Lq3 Lkv5 E8 Ev8 ...".
std::string case_summary(const Case& c);

}  // namespace sdpa
