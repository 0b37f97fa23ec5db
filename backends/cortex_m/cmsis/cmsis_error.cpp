#include "backends/cortex_m/cmsis/cmsis_error.h"

#include <utility>

namespace sdpa::cortex_m::cmsis {

std::string describe(const CmsisFault& fault) { return fault.kernel + ": " + fault.operand + ": " + fault.what; }

CmsisError::CmsisError(CmsisFault fault) : std::runtime_error(describe(fault)), fault_(std::move(fault)) {}

}  // namespace sdpa::cortex_m::cmsis
