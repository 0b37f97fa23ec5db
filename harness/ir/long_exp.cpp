#include "harness/ir/long_exp.h"

namespace sdpa::long_exp_internal {
namespace {

struct PowerTable {
  long double v[kTable];
  PowerTable() {
    for (int j = 0; j < kTable; ++j) v[j] = std::exp2(static_cast<long double>(j) / kTable);
  }
};

}  // namespace

// Built on first use, so a caller during static initialization sees it built.
const long double* power_table() {
  static const PowerTable t;
  return t.v;
}

}  // namespace sdpa::long_exp_internal
