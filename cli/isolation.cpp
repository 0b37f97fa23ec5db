// The options every command that runs cases shares: cases run in a worker
// process (harness/isolate) unless --in-process.
#include <memory>

#include "cli/commands.h"

namespace sdpa::cli {

void add_isolation_options(CLI::App* cmd, IsolationArgs& a) {
  cmd->add_flag("--in-process", a.in_process,
                "run cases in this process, not in a worker: a crash or hang in a kernel ends the command");
  cmd->add_option("--case-timeout", a.case_timeout, "seconds one case may run before it is a timeout (0: no limit)")
      ->check(seconds());
  cmd->add_option("--rss-limit-mb", a.rss_limit_mb,
                  "the worker's resident memory, in MiB, past which a case is oom (0: no limit)")
      ->check(integer_in(0, kMaxRssLimitMb));
}

void add_allow_adapters_flag(CLI::App* cmd, bool& allow) {
  cmd->add_flag("--allow-adapters", allow,
                "run the adapter programs (adapter:COMMAND) that the files read (corpus files, gate's decisions "
                "file) name in their options; without it such a file is refused, as a file is data that may come "
                "from elsewhere");
}

std::unique_ptr<IsolatedCases> make_isolated_cases(const Wiring& w, const IsolationArgs& a) {
  if (a.in_process) return nullptr;
  // In the worker: each target made once per name and options.
  auto made = std::make_shared<std::map<std::pair<std::string, Options>, std::unique_ptr<Target>>>();
  const TargetRegistry* registry = &w.registry;
  auto target_for = [made, registry](const std::string& name, const Options& options) -> const Target& {
    auto& t = (*made)[{name, options}];
    if (!t) t = registry->make(name, options);
    return *t;
  };
  return std::make_unique<IsolatedCases>(target_for, *w.reference, WorkerLimits{a.case_timeout, a.rss_limit_mb});
}

}  // namespace sdpa::cli
