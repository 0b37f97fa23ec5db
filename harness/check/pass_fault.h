#pragma once
/// What a pass that runs in another process (harness/adapter) throws when
/// that process fails rather than the pass: it died, hung, or answered
/// what its protocol does not allow. Unlike an exception of the pass, it
/// is a finding with this verdict in every run of the pass, forced runs
/// included (check.cpp).
#include <stdexcept>
#include <string>

#include "harness/check/verdict.h"

namespace sdpa {

class PassFault : public std::runtime_error {
 public:
  PassFault(Verdict verdict, const std::string& message) : std::runtime_error(message), verdict(verdict) {}
  Verdict verdict;
};

}  // namespace sdpa
