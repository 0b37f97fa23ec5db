#include <iostream>

#include "cli/commands.h"
#include "harness/io/json_reader.h"
#include "harness/campaign/replay.h"

namespace sdpa::cli {
namespace {

struct ReplayArgs {
  std::vector<std::string> paths;
  bool verbose = false;
  int64_t max_elements = SizeLimits{}.max_tensor_elements;
  int64_t max_dim = SizeLimits{}.max_dim;
  IsolationArgs isolation;
  bool allow_adapters = false;
};

void print_finding(const Finding& f) {
  std::cout << "    " << verdict_name(f.verdict) << " [" << check_name(f.check) << "]"
            << (f.kernel_set.empty() ? "" : " kernels=" + f.kernel_set) << ": " << f.detail << "\n";
  if (f.error != 0.0 || f.bound != 0.0)
    std::cout << "    error " << f.error << " (" << f.error_ulps << " ulp) > bound " << f.bound << "\n";
  if (!f.first_node.empty()) std::cout << "    first diverging node: " << f.first_node << "\n";
  for (const auto& a : f.violated_assumptions) std::cout << "    violated assumption: " << a << "\n";
}

int run_replay(const ReplayArgs& a, Wiring& w) {
  CorpusReading reading;
  reading.limits.max_tensor_elements = a.max_elements;
  reading.limits.max_dim = a.max_dim;
  reading.allow_adapters = a.allow_adapters;
  auto report = [&](const std::string& file, const ReplayOutcome* o, const std::string& error) {
    if (!o) {
      std::cout << "INVALID  " << error << "\n";
      return;
    }
    std::cout << replay_status_name(o->status) << "  " << file << "  expect=" << o->expected
              << " observed=" << o->observed << "\n";
    for (const auto& c : o->finding_changes)
      if (o->status == ReplayStatus::changed) std::cout << "    finding changed: " << c << "\n";
    if (o->status == ReplayStatus::fixed)
      std::cout << "    this recorded failure now passes: set \"expect\" to \"pass\" if the fix is intended\n";
    if (o->status != ReplayStatus::as_expected || a.verbose)
      for (const auto& f : o->result.findings) print_finding(f);
    if (a.verbose)
      std::cout << "  graph before passes:\n" << o->result.graph_before << "  graph after passes:\n"
                << o->result.graph_after;
  };
  std::vector<CorpusProblem> problems;
  std::vector<std::string> files = collect_corpus_files(a.paths, &problems);
  std::unique_ptr<IsolatedCases> isolated = make_isolated_cases(w, a.isolation);
  ReplayTally t = replay_files(files, w.registry, *w.reference, reading, a.verbose, report, isolated.get());
  report_corpus_problems(problems, report, t);
  if (t.invalid) return kBadInput;
  if (t.regressed()) return kFindings;
  return t.fixed ? kKnownFixed : kOk;
}

}  // namespace

void add_replay_command(CLI::App& app, Wiring& w, int& exit_code) {
  auto* args = new ReplayArgs();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "replay corpus files and check each observed verdict against its `expect`, and the\n"
      "observed finding against the recorded one (verdict, check, kernel set, first diverging node).\n"
      "Exit 0: all as expected; 1: a regression, or a changed verdict or finding (CHANGED);\n"
      "2: an invalid file;\n"
      "3: a recorded failure now passes (update its `expect`).");
  cmd->add_option("paths", args->paths, "corpus files or folders (searched for *.json)")->required();
  cmd->add_flag("-v,--verbose", args->verbose, "print every finding and the graphs before and after the passes");
  cmd->add_option("--max-elements", args->max_elements, "refuse cases with a tensor larger than this")->check(integer_in(1));
  cmd->add_option("--max-dim", args->max_dim, "refuse cases with a size larger than this")->check(integer_in(1));
  add_isolation_options(cmd, args->isolation);
  add_allow_adapters_flag(cmd, args->allow_adapters);
  cmd->callback([args, &w, &exit_code] { exit_code = run_replay(*args, w); });
}

}  // namespace sdpa::cli
