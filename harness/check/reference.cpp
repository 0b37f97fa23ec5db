#include "harness/check/reference.h"

#include <algorithm>

namespace sdpa {

double ErrorBound::max_bound() const {
  double m = 0;
  for (double b : row_bound) m = std::max(m, b);
  return m;
}

}  // namespace sdpa
