#include "harness/case/case.h"

#include <cmath>
#include <sstream>

namespace sdpa {
namespace {

template <typename E, size_t N>
std::optional<E> parse_named(const std::string& s, const std::pair<E, const char*> (&table)[N]) {
  for (const auto& [value, name] : table)
    if (s == name) return value;
  return std::nullopt;
}

template <typename E, size_t N>
const char* name_of(E v, const std::pair<E, const char*> (&table)[N]) {
  for (const auto& [value, name] : table)
    if (v == value) return name;
  return "?";
}

const std::pair<Layout, const char*> kLayouts[] = {{Layout::bhsd, "bhsd"}, {Layout::bshd, "bshd"}};
const std::pair<MaskPattern, const char*> kPatterns[] = {
    {MaskPattern::random, "random"},   {MaskPattern::causal, "causal"},
    {MaskPattern::window, "window"},   {MaskPattern::padding, "padding"},
    {MaskPattern::full_row, "full-row"}, {MaskPattern::keep_all, "keep-all"},
    {MaskPattern::left_padding, "left-padding"}, {MaskPattern::per_batch_padding, "per-batch-padding"},
    {MaskPattern::block_sparse, "block-sparse"}};
const std::pair<MaskFill, const char*> kFills[] = {
    {MaskFill::neg_inf, "-inf"}, {MaskFill::min, "min"}, {MaskFill::neg_1e4, "-1e4"}};
const std::pair<Distribution, const char*> kDistributions[] = {
    {Distribution::normal, "normal"}, {Distribution::uniform, "uniform"},
    {Distribution::integers, "integers"}, {Distribution::large, "large"}};
const std::pair<CausalAlignment, const char*> kAlignments[] = {
    {CausalAlignment::top_left, "top-left"},
    {CausalAlignment::bottom_right, "bottom-right"},
    {CausalAlignment::start_pos, "start-pos"}};
const std::pair<SpecialValue, const char*> kSpecialValues[] = {
    {SpecialValue::nan, "nan"},           {SpecialValue::pos_inf, "+inf"},
    {SpecialValue::neg_inf, "-inf"},      {SpecialValue::overflow, "overflow"},
    {SpecialValue::huge, "huge"}};
const std::pair<SpecialPlace, const char*> kSpecialPlaces[] = {
    {SpecialPlace::elements, "elements"}, {SpecialPlace::row, "row"}};

}  // namespace

const char* layout_name(Layout l) { return name_of(l, kLayouts); }
const char* pattern_name(MaskPattern p) { return name_of(p, kPatterns); }
const char* fill_name(MaskFill f) { return name_of(f, kFills); }
const char* distribution_name(Distribution d) { return name_of(d, kDistributions); }
std::optional<Layout> parse_layout(const std::string& s) { return parse_named(s, kLayouts); }
std::optional<MaskPattern> parse_pattern(const std::string& s) { return parse_named(s, kPatterns); }
std::optional<MaskFill> parse_fill(const std::string& s) { return parse_named(s, kFills); }
std::optional<Distribution> parse_distribution(const std::string& s) {
  return parse_named(s, kDistributions);
}
const char* alignment_name(CausalAlignment a) { return name_of(a, kAlignments); }
std::optional<CausalAlignment> parse_alignment(const std::string& s) {
  return parse_named(s, kAlignments);
}
const char* special_value_name(SpecialValue v) { return name_of(v, kSpecialValues); }
const char* special_place_name(SpecialPlace p) { return name_of(p, kSpecialPlaces); }
std::optional<SpecialValue> parse_special_value(const std::string& s) {
  return parse_named(s, kSpecialValues);
}
std::optional<SpecialPlace> parse_special_place(const std::string& s) {
  return parse_named(s, kSpecialPlaces);
}

bool Case::causal_keeps(int64_t i, int64_t j, int64_t Lq, int64_t Lkv, int64_t start_pos) const {
  if (!is_causal) return true;
  switch (causal_alignment) {
    case CausalAlignment::top_left: return j <= i;
    case CausalAlignment::bottom_right: return j <= i + Lkv - Lq;
    case CausalAlignment::start_pos: break;
  }
  return j <= i + start_pos;
}

double Case::effective_scale() const {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

ShapeEnv Case::shape_env() const { return ShapeEnv(symbols); }

std::vector<Assignment> Case::runs() const {
  if (symbols.empty() || runtime.empty()) return {Assignment{}};
  return runtime;
}

namespace {
SymShape with_batch(const Case& c, std::initializer_list<SymExpr> tail) {
  SymShape s = c.batch;
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}
}  // namespace

SymShape query_shape(const Case& c) {
  return c.layout == Layout::bhsd ? with_batch(c, {c.q_heads, c.q_len, c.head_dim})
                                  : with_batch(c, {c.q_len, c.q_heads, c.head_dim});
}
SymShape key_shape(const Case& c) {
  return c.layout == Layout::bhsd ? with_batch(c, {c.kv_heads, c.kv_len, c.head_dim})
                                  : with_batch(c, {c.kv_len, c.kv_heads, c.head_dim});
}
SymShape value_shape(const Case& c) {
  return c.layout == Layout::bhsd ? with_batch(c, {c.kv_heads, c.kv_len, c.value_dim})
                                  : with_batch(c, {c.kv_len, c.kv_heads, c.value_dim});
}
SymShape output_shape(const Case& c) { return with_batch(c, {c.q_heads, c.q_len, c.value_dim}); }
SymShape score_shape(const Case& c) { return with_batch(c, {c.q_heads, c.q_len, c.kv_len}); }

int64_t ConcreteSizes::batch_numel() const {
  int64_t n = 1;
  for (int64_t b : batch) n *= b;
  return n;
}

ConcreteSizes concrete_sizes(const Case& c, const Assignment& at) {
  ConcreteSizes s;
  s.batch = eval_shape(c.batch, at);
  s.Hq = c.q_heads;
  s.Hkv = c.kv_heads;
  s.Lq = c.q_len.eval(at);
  s.Lkv = c.kv_len.eval(at);
  s.E = c.head_dim;
  s.Ev = c.value_dim;
  s.start_pos = c.start_pos.eval(at);
  if (c.mask) s.mask_shape = eval_shape(c.mask->shape, at);
  return s;
}

std::string case_summary(const Case& c) {
  std::ostringstream o;
  o << dtype_name(c.dtype) << " " << layout_name(c.layout) << " B" << shape_str(c.batch) << " Hq"
    << c.q_heads << "/Hkv" << c.kv_heads << " Lq=" << c.q_len.str() << " Lkv=" << c.kv_len.str()
    << " E" << c.head_dim << " Ev" << c.value_dim;
  if (c.enable_gqa) o << " gqa";
  if (c.is_causal)
    o << (c.causal_alignment == CausalAlignment::top_left
              ? std::string(" causal")
              : std::string(" causal(") + alignment_name(c.causal_alignment) + ")");
  if (c.dropout_p > 0) o << " dropout=" << c.dropout_p;
  if (c.scale) o << " scale=" << *c.scale;
  if (!(c.start_pos == SymExpr(0))) o << " start_pos=" << c.start_pos.str();
  if (c.mask)
    o << " mask=" << dtype_name(c.mask->dtype) << shape_str(c.mask->shape) << ":"
      << pattern_name(c.mask->pattern);
  if (c.mask && c.mask->pattern == MaskPattern::block_sparse)
    o << "(" << c.mask->block_rows << "x" << c.mask->block_keys << ")";
  o << " data=" << distribution_name(c.data.distribution);
  if (const auto& sp = c.data.special)
    o << "+" << special_value_name(sp->value) << ":" << sp->tensor << ":" << special_place_name(sp->place)
      << "x" << sp->count;
  if (!c.variant.empty()) o << " variant=" << c.variant;
  return o.str();
}

}  // namespace sdpa
