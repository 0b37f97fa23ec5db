#include "backends/llm/llm_divergences.h"

#include <algorithm>
#include <cmath>

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

// q.k * scale of query row (b, h, i) at key j, in long double.
long double score(const Case& c, const CaseTensors& t, const Blocks& s, int64_t b, int64_t h, int64_t i, int64_t j) {
  const int64_t hk = s.Hkv == s.Hq ? h : (s.Hkv == 1 ? 0 : h / (s.Hq / s.Hkv));
  long double x = 0;
  for (int64_t e = 0; e < s.E; ++e)
    x += static_cast<long double>(t.q.data[((b * s.Hq + h) * s.Lq + i) * s.E + e]) *
         t.k.data[((b * s.Hkv + hk) * s.Lkv + j) * s.E + e];
  return x * static_cast<long double>(c.effective_scale());
}

// The additive mask at (i, j): a bool mask as where(mask, 0, -inf) (§2.1),
// a float one as it is; 0 where the mask is not the [Lq, Lkv] custom_sdpa
// takes (the kernel refuses such a call before any arithmetic).
long double mask_at(const CaseTensors& t, const Blocks& s, int64_t i, int64_t j) {
  if (!t.mask || t.mask->numel() != s.Lq * s.Lkv) return 0;
  const double a = t.mask->data[i * s.Lkv + j];
  return t.mask->dtype == DType::b8 ? (a != 0 ? 0.0L : -INFINITY) : a;
}

bool nan_or_plus_inf(long double x) { return std::isnan(x) || x == INFINITY; }

// Causal query row (b, h, i): its scores at the kept keys (j <= start_pos +
// i) hold no NaN or +inf, and a dropped key's score does, or a key the
// kernel never reads (cut by §1.5, or in a kv block past num_keys) holds an
// inf or NaN in V. aten adds the causal -inf (NaN + -inf and inf + -inf are
// NaN) and multiplies the zero weight into V (0 * inf is NaN): the row is
// NaN. custom_sdpa writes -inf over q.k before the scale (§1.8), so a
// dropped score cannot reach the row; a dropped key it reads still gets
// its 0 * V, so only an unread key's V is out of its reach.
bool causal_drop_explains(const Case& c, const CaseTensors& t, const Blocks& s, const CustomSdpaCall& call,
                          int64_t row) {
  const int64_t b = row / (s.Hq * s.Lq), h = (row / s.Lq) % s.Hq, i = row % s.Lq;
  const int64_t hk = s.Hkv == s.Hq ? h : (s.Hkv == 1 ? 0 : h / (s.Hq / s.Hkv));
  const int64_t unread_from = read_end(s, call, i);
  bool kept_ok = true, dropped_bad = false;
  for (int64_t j = 0; j < s.Lkv; ++j) {
    bool bad = nan_or_plus_inf(score(c, t, s, b, h, i, j));
    if (j <= call.start_pos + i) {
      kept_ok = kept_ok && !bad;
      continue;
    }
    if (j >= unread_from)
      for (int64_t e = 0; e < s.Ev; ++e) bad = bad || !std::isfinite(t.v.data[((b * s.Hkv + hk) * s.Lkv + j) * s.Ev + e]);
    dropped_bad = dropped_bad || bad;
  }
  return kept_ok && dropped_bad;
}

// Whether the row sum of query row (b, h, i) turns NaN: a key the kernel
// reads and keeps holds a NaN or +inf score (with the mask added), or a
// causally filled one does (-inf * scale is NaN or +inf for scale <= 0).
// It errs towards NaN: a block whose only finite-looking max is -inf after
// the unmasked max drops a NaN is skipped upstream and keeps its sum.
bool row_sum_is_nan(const Case& c, const CaseTensors& t, const Blocks& s, const CustomSdpaCall& call,
                    int64_t b, int64_t h, int64_t i) {
  const int64_t end = read_end(s, call, i);
  const bool fill_bad = !(c.effective_scale() > 0);
  for (int64_t j = 0; j < end; ++j) {
    if (call.causal && j > call.start_pos + i) {
      if (fill_bad) return true;
      continue;
    }
    long double x = score(c, t, s, b, h, i, j);
    if (call.masked) x += mask_at(t, s, i, j);
    if (nan_or_plus_inf(x)) return true;
  }
  return false;
}

// Query row (b, h, i) runs in query block z = (b * Hq + h) * qSlice + i /
// qSplit as row r = i % qSplit. parallel_for gives each task the items
// [t * chunk, (t + 1) * chunk), chunk = ceil(items / threads), in turn on
// one scratch whose qk_sum_data no query block resets (§1.11): an earlier
// item of the same task whose row r sum went NaN leaves row r NaN (0 * NaN
// survives the first block's exp(-inf - max) = 0 rescale).
bool carried_sum_explains(const Case& c, const CaseTensors& t, const Blocks& s, const CustomSdpaCall& call,
                          int64_t row) {
  const int64_t b = row / (s.Hq * s.Lq), h = (row / s.Lq) % s.Hq, i = row % s.Lq;
  const int64_t items = s.B * s.Hq * s.q_slice;
  const int64_t chunk = std::max<int64_t>(1, (items + call.threads - 1) / std::max<int64_t>(1, call.threads));
  const int64_t z = (b * s.Hq + h) * s.q_slice + i / s.q_split, r = i % s.q_split;
  for (int64_t y = z / chunk * chunk; y < z; ++y) {
    const int64_t yi = (y % s.q_slice) * s.q_split + r;
    if (yi >= s.Lq) continue;  // a shorter last query block has no row r
    if (row_sum_is_nan(c, t, s, call, y / (s.q_slice * s.Hq), (y / s.q_slice) % s.Hq, yi)) return true;
  }
  return false;
}

}  // namespace

std::vector<DeclaredDivergence> custom_sdpa_divergences() {
  return {{kFullyMaskedNan,
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
}

std::optional<std::string> explain_custom_sdpa_nan(const Case& c, const CaseTensors& t, const Golden& g,
                                                   const std::vector<int64_t>& rows, const CustomSdpaCall& call) {
  if (t.q.shape.size() != 4 || t.k.shape.size() != 4 || t.v.shape.size() != 4) return std::nullopt;
  const Blocks s = blocks_of(t, call);
  std::optional<std::string> first;  // the reason of the first row not fully masked
  for (int64_t r : rows) {
    if (g.fully_masked.at(static_cast<size_t>(r))) continue;
    const char* reason = call.causal && causal_drop_explains(c, t, s, call, r) ? kCausalOverwrite
                         : carried_sum_explains(c, t, s, call, r)             ? kCarriedRowSum
                                                                               : nullptr;
    if (!reason) return std::nullopt;
    if (!first) first = reason;
  }
  return first ? first : std::optional<std::string>(kFullyMaskedNan);
}

}  // namespace sdpa::llm
