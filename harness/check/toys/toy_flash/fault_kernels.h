#pragma once
/// Kernels that fail the way real third-party kernels can and no check can
/// catch in-process: a segfault, an abort, an endless loop, an allocation
/// without bound. They exercise the campaign's worker isolation.
#include <string>
#include <vector>

#include "harness/ir/kernel_set.h"

namespace sdpa::toy_flash {

/// The fault option's values: none, segfault, abort, hang, alloc.
std::vector<std::string> fault_names();

/// Wraps `ops` of `kernels` so that, for a query of Lq >= kFaultLq, they
/// commit `fault` instead of computing; "none" leaves the set as it is.
inline constexpr int64_t kFaultLq = 5;
void add_fault(KernelSet& kernels, const std::vector<std::string>& ops, const std::string& fault);

}  // namespace sdpa::toy_flash
