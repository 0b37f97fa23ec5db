#include "backends/llm/llm_divergences.h"

#include <cmath>

namespace sdpa::llm {
namespace {

// Query row `row` of [B, Hq, Lq] under a causal call at start_pos: its
// scores q.k * scale at the kept keys (j <= start_pos + i) hold no NaN or
// +inf, and a dropped key's score does, or its V holds inf or NaN. aten
// adds the causal -inf (NaN + -inf and inf + -inf are NaN) and multiplies
// the zero weight into V (0 * inf is NaN): the row is NaN. custom_sdpa
// writes -inf over q.k before the scale (§1.8) and reads no key past
// start_pos + Lq (§1.5), so the row can keep a finite value.
bool causal_drop_explains(const Case& c, const CaseTensors& t, int64_t row, int64_t start_pos) {
  if (t.q.shape.size() != 4 || t.k.shape.size() != 4 || t.v.shape.size() != 4) return false;
  const int64_t Hq = t.q.shape[1], Lq = t.q.shape[2], E = t.q.shape[3];
  const int64_t Hkv = t.k.shape[1], Lkv = t.k.shape[2], Ev = t.v.shape[3];
  const int64_t b = row / (Hq * Lq), h = (row / Lq) % Hq, i = row % Lq;
  const int64_t hk = Hkv == Hq ? h : (Hkv == 1 ? 0 : h / (Hq / Hkv));
  bool kept_ok = true, dropped_bad = false;
  for (int64_t j = 0; j < Lkv; ++j) {
    long double x = 0;
    for (int64_t e = 0; e < E; ++e)
      x += static_cast<long double>(t.q.data[((b * Hq + h) * Lq + i) * E + e]) *
           t.k.data[((b * Hkv + hk) * Lkv + j) * E + e];
    x *= static_cast<long double>(c.effective_scale());
    bool bad = std::isnan(x) || x == INFINITY;
    if (j <= start_pos + i) {
      kept_ok = kept_ok && !bad;
      continue;
    }
    for (int64_t e = 0; e < Ev; ++e) bad = bad || !std::isfinite(t.v.data[((b * Hkv + hk) * Lkv + j) * Ev + e]);
    dropped_bad = dropped_bad || bad;
  }
  return kept_ok && dropped_bad;
}

}  // namespace

std::vector<DeclaredDivergence> custom_sdpa_divergences() {
  return {{kFullyMaskedNan,
           "custom_sdpa gives NaN for a query row whose every key is masked (no zero-sum "
           "guard: 0 * 1/0); aten gives 0. Masks are runtime data, so no guard can rule it out."},
          {kCausalOverwrite,
           "custom_sdpa writes the causal -inf over q.k and reads no key past start_pos + Lq, so a "
           "NaN or +inf score, or an inf or NaN in V, at a causally dropped key does not reach the "
           "row; aten adds -inf and multiplies the zero weight into V: NaN. Tensor data is runtime "
           "data, so no guard can rule it out."}};
}

std::optional<std::string> explain_custom_sdpa_nan(const Case& c, const CaseTensors& t, const Golden& g,
                                                   const std::vector<int64_t>& rows, bool causal,
                                                   int64_t start_pos) {
  bool all_masked = true;
  for (int64_t r : rows) {
    const bool masked = g.fully_masked.at(static_cast<size_t>(r));
    if (!masked && !(causal && causal_drop_explains(c, t, r, start_pos))) return std::nullopt;
    all_masked = all_masked && masked;
  }
  return std::string(all_masked ? kFullyMaskedNan : kCausalOverwrite);
}

}  // namespace sdpa::llm
