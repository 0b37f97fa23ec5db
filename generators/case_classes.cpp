#include "generators/case_classes.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "generators/gen_policy.h"
#include "harness/case/tensor_data.h"

namespace sdpa {
namespace {

bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

void add_head_classes(const Case& c, std::set<std::string>& out) {
  const int64_t hq = c.q_heads, hkv = c.kv_heads;
  if (hq == hkv) out.insert("Hq=Hkv");
  if (hkv == 1 && hq > 1) out.insert("Hkv=1");
  if (hkv > 1 && hq > hkv) out.insert("gqa");
  if (hq != hkv && !is_pow2(hq / hkv)) out.insert("gqa-group-non-pow2");
  if (c.enable_gqa) out.insert("enable_gqa");
}

void add_length_classes(const Case& c, std::set<std::string>& out) {
  for (const auto& at : c.runs()) {
    ConcreteSizes s = concrete_sizes(c, at);
    if (s.Lq == 1) out.insert("Lq=1");
    if (s.Lq < s.Lkv) out.insert("Lq<Lkv");
    if (s.Lq > s.Lkv) out.insert("Lq>Lkv");
    if (s.Lq == s.Lkv) out.insert("Lq=Lkv");
    for (int64_t len : {s.Lq, s.Lkv})
      if (std::count(kTileEdgeLengths.begin(), kTileEdgeLengths.end(), len)) {
        out.insert("tile-edge-len");
        out.insert("tile-edge:" + std::to_string(len));
      }
    if (s.start_pos > 0) out.insert("start_pos>0");
    // A KV-cache step whose keys cross the 512-key block edge of
    // custom_sdpa-like kernels, its queries past position 0.
    if (s.start_pos > 0 && s.start_pos + s.Lq > 512) out.insert("start_pos+Lq>512");
  }
}

// What one mask row does to the kernels' key tiles: every key dropped, or
// some kept and every key of one tile dropped (a tile a kernel skips or
// rescales past), per tile size of kKeyTiles.
struct RowTiles {
  bool kept = false;
  std::vector<bool> empty_tile = std::vector<bool>(kKeyTiles.size(), false);
};

RowTiles row_tiles(const std::vector<bool>& keep, size_t row_start, int64_t cols) {
  RowTiles r;
  for (int64_t j = 0; j < cols && !r.kept; ++j) r.kept = keep[row_start + static_cast<size_t>(j)];
  if (!r.kept) return r;
  for (size_t t = 0; t < kKeyTiles.size(); ++t) {
    const int64_t tile = kKeyTiles[t];
    for (int64_t n = 0; n < cols && !r.empty_tile[t]; n += tile) {
      bool any = false;
      for (int64_t j = n; j < std::min(cols, n + tile) && !any; ++j) any = keep[row_start + static_cast<size_t>(j)];
      r.empty_tile[t] = !any;
    }
  }
  return r;
}

// Classes of what the mask keeps at one runtime size, from its data: a
// left padding that drops some keys of every row and keeps others,
// per-batch padding whose batch elements differ in length, block-sparse
// rows that keep some blocks and drop others, and rows that empty a whole
// key tile ("empty-tile:64", and "empty-tile:<pattern>:<Lkv>" where Lkv is
// a tile edge: the pattern across the kernels' tile edges).
void add_mask_data_classes(const Case& c, const Assignment& at, std::set<std::string>& out) {
  const MaskSpec& m = *c.mask;
  const ConcreteSizes s = concrete_sizes(c, at);
  const Shape& shape = s.mask_shape;
  const int64_t cols = shape.back();
  if (cols < 2 || s.Lkv < 2) return;  // a key-broadcast mask drops whole rows only
  const std::vector<bool> keep = mask_keeps(c, shape);
  const size_t rows = keep.size() / static_cast<size_t>(cols);
  const size_t per_batch = static_cast<size_t>(shape.size() >= 3 ? shape[shape.size() - 3] : 1) *
                           static_cast<size_t>(shape.size() >= 2 ? shape[shape.size() - 2] : 1);
  std::vector<bool> any_empty(kKeyTiles.size(), false);
  bool partial = false, fully_masked = false;
  std::set<int64_t> lengths;
  for (size_t r = 0; r < rows; ++r) {
    const size_t start = r * static_cast<size_t>(cols);
    const RowTiles t = row_tiles(keep, start, cols);
    fully_masked = fully_masked || !t.kept;
    int64_t kept = 0;
    for (int64_t j = 0; j < cols; ++j) kept += keep[start + static_cast<size_t>(j)];
    partial = partial || (kept > 0 && kept < cols);
    if (r % per_batch == 0) lengths.insert(kept);
    for (size_t i = 0; i < kKeyTiles.size(); ++i) any_empty[i] = any_empty[i] || t.empty_tile[i];
  }
  if (m.pattern == MaskPattern::left_padding && partial) out.insert("mask:left-padding");
  if (m.pattern == MaskPattern::per_batch_padding && lengths.size() > 1) out.insert("mask:per-batch-padding");
  if (m.pattern == MaskPattern::block_sparse && partial) out.insert("mask:block-sparse");
  if (fully_masked) out.insert("mask:fully-masked-row");
  const bool edge = std::count(kTileEdgeLengths.begin(), kTileEdgeLengths.end(), s.Lkv) > 0;
  for (size_t i = 0; i < kKeyTiles.size(); ++i) {
    if (!any_empty[i]) continue;
    out.insert("empty-tile");
    out.insert("empty-tile:" + std::to_string(kKeyTiles[i]));
    if (edge) out.insert(std::string("empty-tile:") + pattern_name(m.pattern) + ":" + std::to_string(s.Lkv));
  }
}

void add_mask_classes(const Case& c, std::set<std::string>& out) {
  if (!c.mask) {
    out.insert("mask:none");
    return;
  }
  for (const auto& at : c.runs()) add_mask_data_classes(c, at, out);
  const MaskSpec& m = *c.mask;
  const bool additive = m.dtype != DType::b8;
  out.insert(additive ? "mask:additive" : "mask:bool");
  if (additive) out.insert(std::string("mask-dtype:") + dtype_name(m.dtype));
  out.insert(std::string("pattern:") + pattern_name(m.pattern));
  if (m.pattern == MaskPattern::full_row) out.insert("full-row-mask");
  if (additive) out.insert(std::string("fill:") + fill_name(m.fill));
  if (m.shape.size() < score_shape(c).size()) out.insert("mask-rank<full");
  if (m.shape.size() == 1) out.insert("mask-rank:1");
  if (std::any_of(m.shape.begin(), m.shape.end(), [](const SymExpr& d) { return d == SymExpr(1); }))
    out.insert("mask-dim-1");
}

void add_scale_classes(const Case& c, std::set<std::string>& out) {
  if (!c.scale) {
    out.insert("scale:none");
    return;
  }
  const double s = *c.scale;
  if (s == 0) out.insert("scale:0");
  else if (s < 0) out.insert("scale:negative");
  else if (s < 1e-4) out.insert("scale:tiny");
  else if (s > 1e3) out.insert("scale:huge");
  else out.insert("scale:ordinary");
}

void add_symbol_classes(const Case& c, std::set<std::string>& out) {
  if (c.symbols.empty()) {
    out.insert("symbols:none");
    return;
  }
  const auto q = c.q_len.symbols(), kv = c.kv_len.symbols();
  const bool shared = std::any_of(q.begin(), q.end(), [&](const auto& s) { return kv.count(s); });
  out.insert(shared ? "symbols:shared" : "symbols:independent");
  for (const auto& d : c.batch)
    if (!d.is_constant()) out.insert("symbols:batch");
  for (const auto& [name, info] : c.symbols) {
    if (!info.hint) out.insert("symbol:unbacked");
    for (const auto& at : c.runtime)
      if (info.hint && at.at(name) != *info.hint) out.insert("runtime!=hint");
  }
  if (c.runtime.size() > 1) out.insert("runtime:multiple");
  if (!c.start_pos.is_constant() && c.kv_len == c.start_pos + c.q_len) out.insert("kv=start_pos+Lq");
}

// Special values and zero-size dims (at the static size or any runtime size).
void add_data_classes(const Case& c, std::set<std::string>& out) {
  if (const auto& sp = c.data.special) {
    out.insert(std::string("special:") + special_value_name(sp->value));
    out.insert("special-tensor:" + sp->tensor);
    out.insert(std::string("special-place:") + special_place_name(sp->place));
  }
  for (const auto& at : c.runs()) {
    const ConcreteSizes s = concrete_sizes(c, at);
    if (s.batch_numel() == 0) out.insert("empty:batch");
    if (s.Lq == 0) out.insert("empty:Lq");
    if (s.Lkv == 0) out.insert("empty:Lkv");
  }
}

}  // namespace

std::vector<std::string> boundary_classes(const Case& c) {
  std::set<std::string> out;
  out.insert(std::string("dtype:") + dtype_name(c.dtype));
  if (c.layout == Layout::bshd) out.insert("bshd");
  out.insert("batch-rank:" + std::to_string(c.batch.size()));
  add_head_classes(c, out);
  add_length_classes(c, out);
  if (c.head_dim != c.value_dim) out.insert("E!=Ev");
  add_mask_classes(c, out);
  if (c.is_causal) out.insert("causal");
  if (c.dropout_p > 0) out.insert("dropout");
  add_scale_classes(c, out);
  add_symbol_classes(c, out);
  out.insert(std::string("dist:") + distribution_name(c.data.distribution));
  add_data_classes(c, out);
  return {out.begin(), out.end()};
}

}  // namespace sdpa
