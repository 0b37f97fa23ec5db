#pragma once
/// A Pass that runs in a child process, the adapter (docs/adapters.md): a
/// pass written in Python on torch.fx, say, put in place of a target's
/// modeled pass so that every check applies to the real code. The adapter
/// starts on the first run in a process (in a worker, not in the command
/// that forks the workers), serves every later run, and after a fault is
/// stopped and started again on the next run. A fault (it exits, hangs
/// past the per-call timeout, writes a malformed line, returns a wrong
/// graph or wrong decisions) throws PassFault with the adapter's words and
/// the end of its stderr; an error its pass raised is thrown as the
/// modeled pass would throw it (PassUnsupported for `unsupported`).
#include <string>
#include <vector>

#include "harness/check/target.h"
#include "harness/isolate/line_child.h"

namespace sdpa {

struct AdapterConfig {
  std::string command;            // as the user wrote it, for messages
  std::vector<std::string> argv;  // the command split on spaces
  double timeout_s = 10.0;        // one run
  double start_timeout_s = 30.0;  // the start and hello (an import of torch takes seconds)
};

class AdapterPass : public Pass {
 public:
  /// `pass` names the modeled pass it replaces (its decisions carry that
  /// name); `target` and `options` are sent in the hello.
  AdapterPass(AdapterConfig config, std::string pass, std::string target, Options options);
  std::string name() const override { return pass_; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

  /// Adapter processes this process started (the first and each restart).
  int starts() const { return child_.starts(); }

 private:
  void ensure_started() const;
  std::string exchange(const std::string& line, double timeout_s) const;
  [[noreturn]] void fault(Verdict verdict, const std::string& what) const;

  AdapterConfig config_;
  std::string pass_, target_;
  Options options_;
  mutable LineChild child_;
  mutable int64_t next_id_ = 1;
};

}  // namespace sdpa
