#include "backends/llm/llm_divergences.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace sdpa::llm {
namespace {

// The block geometry of cpu_flash_attention (§1.11), restated here from the
// page so that the explanation does not lean on the kernel model.
struct Blocks {
  int64_t B, Hq, Lq, Hkv, Lkv, E, Ev;
  int64_t q_split, q_slice, kv_size, kv_split;
};

Blocks blocks_of(const CaseTensors& t, const CustomSdpaCall& call) {
  Blocks s{t.q.shape[0], t.q.shape[1], t.q.shape[2], t.k.shape[1], t.k.shape[2], t.q.shape[3], t.v.shape[3],
           0, 0, 0, 0};
  const int64_t q_split_size = s.Lq >= 768 ? 256 : (s.Lq >= 192 ? 64 : 32);
  s.q_split = std::max<int64_t>(1, std::min(q_split_size, s.Lq));
  s.q_slice = (s.Lq + s.q_split - 1) / s.q_split;
  // §1.5: without a mask the keys are cut to start_pos + Lq.
  s.kv_size = call.masked ? s.Lkv : std::min(s.Lkv, call.start_pos + s.Lq);
  s.kv_split = std::min<int64_t>(512, s.kv_size);
  return s;
}

// The end of the keys the kernel reads for query row i: its kv loop runs
// whole blocks up to num_keys = min(m + start_pos + qBlockSize, kvSize)
// (causal) or kvSize, and multiplies every key of a block it runs into V.
int64_t read_end(const Blocks& s, const CustomSdpaCall& call, int64_t i) {
  if (s.kv_split <= 0) return 0;
  const int64_t m = (i / s.q_split) * s.q_split;
  const int64_t rows = std::min(s.q_split, s.Lq - m);
  const int64_t num_keys = call.causal ? std::min(m + call.start_pos + rows, s.kv_size) : s.kv_size;
  return std::min(s.kv_size, (num_keys + s.kv_split - 1) / s.kv_split * s.kv_split);
}

// The additive mask at (i, j): a bool mask as where(mask, 0, -inf) (§2.1),
// a float one as it is; 0 where the mask is not the [Lq, Lkv] custom_sdpa
// takes (the kernel refuses such a call before any arithmetic).
long double mask_at(const CaseTensors& t, const Blocks& s, int64_t i, int64_t j) {
  if (!t.mask || t.mask->numel() != s.Lq * s.Lkv) return 0;
  const double a = t.mask->data[i * s.Lkv + j];
  return t.mask->dtype == DType::b8 ? (a != 0 ? 0.0L : -INFINITY) : a;
}

// A query row of [B, Hq, Lq]: its batch, head, position and kv head (GQA
// h / (Hq / Hkv)).
struct Row {
  int64_t b, h, i, hk;
};

Row row_of(const Blocks& s, int64_t row) {
  const int64_t h = (row / s.Lq) % s.Hq;
  return {row / (s.Hq * s.Lq), h, row % s.Lq, s.Hkv == s.Hq ? h : (s.Hkv == 1 ? 0 : h / (s.Hq / s.Hkv))};
}

bool nan_or_plus_inf(long double x) { return std::isnan(x) || x == INFINITY; }

// The facts of one custom_sdpa call on one case's tensors, each worked out
// from the page and the values, never from the kernel model.
class CallFacts {
 public:
  CallFacts(const Case& c, const CaseTensors& t, const CustomSdpaCall& call)
      : t_(t), call_(call), s_(blocks_of(t, call)),
        scale_(call.f32 ? static_cast<float>(c.effective_scale()) : c.effective_scale()),
        aten_scale_(c.effective_scale()),
        sum_nan_(static_cast<size_t>(s_.B * s_.Hq * s_.Lq), -1) {}

  // Causal query row r: its scores at the kept keys (j <= start_pos + i)
  // hold no NaN or +inf, and a dropped key's score does, or a key the kernel
  // never reads (cut by §1.5, or in a kv block past num_keys) holds an inf
  // or NaN in V. aten adds the causal -inf (NaN + -inf and inf + -inf are
  // NaN) and multiplies the zero weight into V (0 * inf is NaN): the row is
  // NaN. custom_sdpa writes -inf over q.k before the scale (§1.8), so a
  // dropped score cannot reach the row; a dropped key it reads still gets
  // its 0 * V, so only an unread key's V is out of its reach.
  bool causal_drop_explains(int64_t row) const {
    const Row r = row_of(s_, row);
    const int64_t unread_from = read_end(s_, call_, r.i);
    bool kept_ok = true, dropped_bad = false;
    for (int64_t j = 0; j < s_.Lkv; ++j) {
      bool bad = nan_or_plus_inf(aten_score(r, j));
      if (j <= call_.start_pos + r.i) {
        kept_ok = kept_ok && !bad;
        continue;
      }
      if (j >= unread_from)
        for (int64_t e = 0; e < s_.Ev; ++e)
          bad = bad || !std::isfinite(t_.v.data[((r.b * s_.Hkv + r.hk) * s_.Lkv + j) * s_.Ev + e]);
      dropped_bad = dropped_bad || bad;
    }
    return kept_ok && dropped_bad;
  }

  // Query row (b, h, i) runs in query block z = (b * Hq + h) * qSlice + i /
  // qSplit as row r = i % qSplit. parallel_for gives each task the items
  // [t * chunk, (t + 1) * chunk), chunk = ceil(items / threads), in turn on
  // one scratch whose qk_sum_data no query block resets (§1.11): an earlier
  // item of the same task whose row r sum went NaN leaves row r NaN (0 * NaN
  // survives the first block's exp(-inf - max) = 0 rescale).
  bool carried_sum_explains(int64_t row) {
    const Row x = row_of(s_, row);
    const int64_t items = s_.B * s_.Hq * s_.q_slice;
    const int64_t chunk = std::max<int64_t>(1, (items + call_.threads - 1) / std::max<int64_t>(1, call_.threads));
    const int64_t z = (x.b * s_.Hq + x.h) * s_.q_slice + x.i / s_.q_split, r = x.i % s_.q_split;
    for (int64_t y = z / chunk * chunk; y < z; ++y) {
      const int64_t yi = (y % s_.q_slice) * s_.q_split + r;
      if (yi >= s_.Lq) continue;  // a shorter last query block has no row r
      if (row_sum_is_nan((y / s_.q_slice) * s_.Lq + yi)) return true;  // y / qSlice = b * Hq + h
    }
    return false;
  }

  // Before f3e8972de6: the row's first kv block holds no key it keeps (every
  // score there -inf: masked, causally dropped at a positive scale, or
  // -inf from the data), so its running max is -inf and exp(-inf - -inf)
  // turns its sum and output NaN however the later blocks go.
  bool first_block_masked(int64_t row) const { return first_block_masked_at(row_of(s_, row)); }

 private:
  bool first_block_masked_at(const Row& r) const {
    if (!call_.nan_for_masked_block) return false;
    const int64_t end = std::min(s_.kv_split, read_end(s_, call_, r.i));
    if (end <= 0) return false;  // no block runs
    for (int64_t j = 0; j < end; ++j)
      if (!(kernel_score(r, j) == -INFINITY)) return false;  // a causal fill at scale <= 0 is NaN or +inf
    return true;
  }

  // q.k * scale of row r at key j as aten's golden computes it (exactly).
  long double aten_score(const Row& r, int64_t j) const {
    const double* q = &t_.q.data[((r.b * s_.Hq + r.h) * s_.Lq + r.i) * s_.E];
    const double* k = &t_.k.data[((r.b * s_.Hkv + r.hk) * s_.Lkv + j) * s_.E];
    long double acc = 0;
    for (int64_t e = 0; e < s_.E; ++e) acc += static_cast<long double>(q[e]) * k[e];
    return acc * static_cast<long double>(aten_scale_);
  }

  // q.k * scale of row r at key j in the kernel set's arithmetic: f32 sums
  // of f32 products and the scale rounded to f32 (§1.10), or exact (double).
  long double score(const Row& r, int64_t j) const {
    const double* q = &t_.q.data[((r.b * s_.Hq + r.h) * s_.Lq + r.i) * s_.E];
    const double* k = &t_.k.data[((r.b * s_.Hkv + r.hk) * s_.Lkv + j) * s_.E];
    if (call_.f32) {
      float acc = 0;
      for (int64_t e = 0; e < s_.E; ++e)
        acc = static_cast<float>(acc + static_cast<double>(static_cast<float>(q[e] * k[e])));
      return static_cast<float>(static_cast<double>(acc) * scale_);
    }
    double acc = 0;
    for (int64_t e = 0; e < s_.E; ++e) acc += q[e] * k[e];
    return acc * scale_;
  }

  // Whether the row sum of a query row turns NaN in its own kv blocks:
  // memoized, since every later row of a task asks about the same earlier
  // rows (carried_sum_explains).
  bool row_sum_is_nan(int64_t row) {
    int8_t& known = sum_nan_[static_cast<size_t>(row)];
    if (known < 0) known = compute_row_sum_is_nan(row_of(s_, row)) ? 1 : 0;
    return known == 1;
  }

  // The score the kernel softmaxes at key j of row r: the causal fill
  // written over q.k before the scale (-inf * scale), else q.k * scale plus
  // the mask.
  long double kernel_score(const Row& r, int64_t j) const {
    if (call_.causal && j > call_.start_pos + r.i) return -INFINITY * static_cast<long double>(scale_);
    long double x = score(r, j);
    if (call_.masked) x += mask_at(t_, s_, r.i, j);
    return call_.f32 ? static_cast<float>(x) : static_cast<double>(x);
  }

  // A block's max (§1.11): with a mask a vector reduce, which propagates a
  // NaN; without one _mul_reduce_max_fusion_kernel, whose vector lanes (8
  // floats of 32 bytes, the default build) propagate a NaN while the scalar
  // tail and the final std::max(tail, lanes) drop one.
  long double block_max(const std::vector<long double>& x) const {
    long double lanes = -INFINITY, tail = -INFINITY;
    const size_t vec_end = call_.masked ? x.size() : x.size() / 8 * 8;
    for (size_t c = 0; c < vec_end; ++c) lanes = std::isnan(lanes) || std::isnan(x[c]) ? NAN : std::max(lanes, x[c]);
    if (call_.masked) return lanes;
    for (size_t c = vec_end; c < x.size(); ++c) tail = tail < x[c] ? x[c] : tail;
    return tail < lanes ? lanes : tail;
  }

  // The online softmax of §1.11 on the row's own blocks: per block the new
  // max m = max(running max, block max); a block where m is -inf is skipped
  // (before f3e8972de6: exp(-inf - -inf), NaN); else exp(x - m) and the
  // rescale exp(running max - m) are NaN where x or m is NaN or where inf
  // meets inf, and a NaN term makes the sum NaN.
  bool compute_row_sum_is_nan(const Row& r) const {
    const int64_t end = read_end(s_, call_, r.i);
    long double row_max = -INFINITY;
    std::vector<long double> x;
    for (int64_t n = 0; n < end; n += s_.kv_split) {
      x.resize(static_cast<size_t>(std::min(s_.kv_split, s_.kv_size - n)));
      for (size_t c = 0; c < x.size(); ++c) x[c] = kernel_score(r, n + static_cast<int64_t>(c));
      const long double bm = block_max(x);
      const long double m = row_max > bm ? row_max : bm;
      if (m == -INFINITY) {
        if (call_.nan_for_masked_block) return true;
        continue;
      }
      if (std::isnan(row_max - m)) return true;
      for (long double v : x)
        if (std::isnan(v - m)) return true;
      row_max = m;
    }
    return false;
  }

  const CaseTensors& t_;
  const CustomSdpaCall& call_;
  const Blocks s_;
  const double scale_;       // the kernel's: rounded to f32 in f32 numerics
  const double aten_scale_;  // the golden's
  std::vector<int8_t> sum_nan_;  // per query row: -1 unknown, 0 or 1
};

}  // namespace

std::vector<DeclaredDivergence> custom_sdpa_divergences(const EtRevision& rev) {
  std::vector<DeclaredDivergence> out = {{kFullyMaskedNan,
           "custom_sdpa gives NaN for a query row whose every key is masked (no zero-sum "
           "guard: 0 * 1/0); aten gives 0. Masks are runtime data, so no guard can rule it out."},
          {kCausalOverwrite,
           "custom_sdpa writes the causal -inf over q.k and reads no key past start_pos + Lq, so a "
           "NaN or +inf score at a causally dropped key, or an inf or NaN in V at a key it never "
           "reads, does not reach the row; aten adds -inf and multiplies the zero weight into V: NaN. "
           "Tensor data is runtime data, so no guard can rule it out."},
          {kCarriedRowSum,
           "custom_sdpa's query blocks do not reset their row sums: a thread runs its blocks in turn on "
           "one scratch, so a NaN row sum (a NaN or +inf score) in one head or query block makes the "
           "same row of every later block of that thread NaN; aten keeps them apart. Tensor data is "
           "runtime data, so no guard can rule it out."}};
  if (rev.nan_for_masked_block)
    out.push_back({kMaskedBlockNan,
                   "custom_sdpa before f3e8972de6 gives NaN for a query row whose first kv block (512 keys) "
                   "holds no key it keeps: its running max is still -inf there and exp(-inf - -inf) is NaN; "
                   "aten attends the row's later keys. Masks are runtime data, so no guard can rule it out."});
  return out;
}

std::optional<std::string> explain_custom_sdpa_nan(const Case& c, const CaseTensors& t, const Golden& g,
                                                   const std::vector<int64_t>& rows, const CustomSdpaCall& call) {
  if (t.q.shape.size() != 4 || t.k.shape.size() != 4 || t.v.shape.size() != 4) return std::nullopt;
  CallFacts facts(c, t, call);
  // A NaN sum makes the kernel's whole row NaN: it explains a row where
  // aten's is not all NaN (an element of aten's row differs from NaN), never
  // one where aten's is all NaN (the kernel's is then the finite one).
  const int64_t ev = g.out.shape.empty() ? 0 : g.out.shape.back();
  auto golden_not_all_nan = [&](int64_t r) {
    if (ev <= 0 || (r + 1) * ev > g.out.numel()) return false;
    for (int64_t e = r * ev; e < (r + 1) * ev; ++e)
      if (!std::isnan(g.out.data[e])) return true;
    return false;
  };
  // aten's fully masked rows are the kernel's only if the kernel got the mask.
  const bool kernel_has_atens_mask = call.masked || !c.mask.has_value();
  std::optional<std::string> first;  // the reason of the first row not fully masked
  for (int64_t r : rows) {
    if (g.fully_masked.at(static_cast<size_t>(r)) && kernel_has_atens_mask) continue;
    const bool kernel_side_nan = golden_not_all_nan(r);
    const char* reason = call.causal && facts.causal_drop_explains(r)   ? kCausalOverwrite
                         : kernel_side_nan && facts.first_block_masked(r) ? kMaskedBlockNan
                         : kernel_side_nan && facts.carried_sum_explains(r) ? kCarriedRowSum
                                                                            : nullptr;
    if (!reason) return std::nullopt;
    if (!first) first = reason;
  }
  return first ? first : std::optional<std::string>(kFullyMaskedNan);
}

}  // namespace sdpa::llm
