#include "backends/cortex_m/cmsis/cmsis_error.h"

#include <utility>

namespace sdpa::cortex_m::cmsis {

std::string describe(const CmsisFault& fault) { return fault.kernel + ": " + fault.operand + ": " + fault.what; }

void OperandName::too_many(size_t indices) const {
  throw std::logic_error(std::string("OperandName ") + base_ + ": " + std::to_string(indices) +
                         " indices for its style");
}

OperandName OperandName::with_suffix(const char* suffix) const {
  OperandName n = *this;
  n.suffix_ = suffix;
  return n;
}

std::string OperandName::str() const {
  std::string s = base_;
  if (style_ == Style::row_column) {
    s += " (row " + std::to_string(index_[0]) + ", column " + std::to_string(index_[1]) + ")";
  } else if (count_ > 0) {
    s += "[";
    for (int i = 0; i < count_; ++i) s += (i ? "," : "") + std::to_string(index_[i]);
    s += "]";
  }
  return s + suffix_;
}

CmsisError::CmsisError(CmsisFault fault) : std::runtime_error(describe(fault)), fault_(std::move(fault)) {}

}  // namespace sdpa::cortex_m::cmsis
