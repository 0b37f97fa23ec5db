#pragma once
/// What a kernel that runs in another process (harness/adapter) throws when
/// that process fails rather than the kernel: it died, hung, or answered
/// what its protocol does not allow. Unlike a KernelError, whose kind says
/// what the kernel refused, it is a finding with this verdict in the check
/// `robustness` (check.cpp), wherever the kernel set runs.
#include <stdexcept>
#include <string>

#include "harness/check/verdict.h"

namespace sdpa {

class KernelFault : public std::runtime_error {
 public:
  KernelFault(Verdict verdict, const std::string& message) : std::runtime_error(message), verdict(verdict) {}
  Verdict verdict;
};

}  // namespace sdpa
