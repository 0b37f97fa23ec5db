#pragma once
/// run_case in a worker process (worker.h): a case that kills, hangs or
/// overruns the worker gets a crash, timeout or oom result, and the next
/// case runs in a new worker.
#include <functional>
#include <string>

#include "harness/check/check.h"
#include "harness/isolate/worker.h"

namespace sdpa {

class IsolatedCases {
 public:
  /// Resolves, in the worker, the target a case runs on.
  using TargetLookup = std::function<const Target&(const std::string& name, const Options& options)>;
  IsolatedCases(TargetLookup target_for, const ReferenceModel& reference, WorkerLimits limits);

  /// run_case(target, reference, c, options) as the worker computes it; an
  /// InputError it raises is rethrown here.
  CaseResult run(const std::string& target, const Options& target_options, const Case& c,
                 const CheckOptions& options);
  /// Whether the last run ended its worker (its result is crash, timeout or oom).
  bool last_died() const { return last_died_; }
  /// Workers started after a death.
  int64_t restarts() const { return worker_.starts() > 0 ? worker_.starts() - 1 : 0; }

 private:
  Worker worker_;
  bool last_died_ = false;
};

}  // namespace sdpa
