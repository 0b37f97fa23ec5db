#include "harness/check/composite.h"

#include <cmath>
#include <limits>

namespace sdpa {

Golden composite_golden(const Composite& m, const Golden& sdpa) {
  Golden g;
  g.out = m.output(sdpa.out);
  g.disagreement = sdpa.disagreement;
  g.oracle_max_rel_diff = sdpa.oracle_max_rel_diff;
  const int64_t cols = g.out.shape.empty() ? 1 : g.out.shape.back();
  const int64_t rows = cols ? g.out.numel() / cols : 0;
  g.fully_masked.assign(static_cast<size_t>(rows), 0);
  if (!sdpa.row_max_score.empty()) g.row_max_score.assign(static_cast<size_t>(rows), -INFINITY);
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int64_t> inner = m.rows_of(r);
    bool masked = !inner.empty();
    for (int64_t i : inner) {
      masked = masked && sdpa.fully_masked.at(i);
      if (!g.row_max_score.empty()) g.row_max_score[r] = std::fmax(g.row_max_score[r], sdpa.row_max_score.at(i));
    }
    g.fully_masked[r] = masked;
  }
  return g;
}

}  // namespace sdpa
