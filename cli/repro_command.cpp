#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "harness/campaign/replay.h"
#include "harness/campaign/rewrite_run.h"
#include "harness/io/json_reader.h"
#include "reports/gtest_repro.h"
#include "reports/pytorch_repro.h"

namespace sdpa::cli {
namespace {

struct ReproArgs {
  std::string path, output;
  bool pytorch = false, gtest = false, allow_adapters = false;
  IsolationArgs isolation;
};

// The PyTorch script: the goldens from the oracles and, for a finding in the
// rewrite, the target's pipeline run on the case (in a worker first, so a
// case that ends it does not end this command).
std::string pytorch_script(const ReproArgs& a, const CorpusEntry& e, Wiring& w) {
  std::unique_ptr<IsolatedCases> isolated = make_isolated_cases(w, a.isolation);
  RewriteRun rewrite;
  try {
    rewrite = run_rewrite(e, w.registry, *w.reference, isolated.get());
  } catch (const InputError& err) {
    throw InputError(a.path + ": " + err.what());
  }
  return pytorch_repro_script(e, a.path, w.reference->name(), run_goldens(e.c, *w.reference), &rewrite);
}

int run_repro(const ReproArgs& a, Wiring& w) {
  if (a.pytorch == a.gtest) throw InputError("repro: expected exactly one of --pytorch or --gtest");
  const CorpusEntry e = read_replay_entry(a.path, w.registry, {SizeLimits{}, a.allow_adapters});
  const std::string text = a.pytorch ? pytorch_script(a, e, w) : gtest_repro_source(e, a.path);
  if (a.output.empty()) {
    std::cout << text;
    return kOk;
  }
  std::ofstream out(a.output);
  if (!(out << text) || !out.flush()) throw InputError("-o " + a.output + ": cannot write the file");
  return kOk;
}

}  // namespace

void add_repro_command(CLI::App& app, Wiring& w, int& exit_code) {
  auto* args = new ReproArgs();  // lives as long as the process
  CLI::App* cmd = app.add_subcommand(
      "repro",
      "turn a corpus file into a reproduction: --pytorch, a standalone PyTorch script comparing\n"
      "PyTorch's SDPA with sdpacheck's golden and, for a finding in the rewrite, running the target's\n"
      "upstream pass where it is installed, else setting sdpacheck's model of the rewrite beside\n"
      "PyTorch's call (the case runs in a worker first); --gtest, a GoogleTest regression draft.");
  cmd->add_option("file", args->path, "corpus file")->required();
  cmd->add_flag("--pytorch", args->pytorch, "write a PyTorch script (run it with a python3 that has torch)");
  cmd->add_flag("--gtest", args->gtest, "write a GoogleTest .cpp that replays the entry");
  cmd->add_option("-o,--output", args->output, "write to this file instead of stdout");
  add_isolation_options(cmd, args->isolation);
  add_allow_adapters_flag(cmd, args->allow_adapters);
  cmd->callback([args, &w, &exit_code] { exit_code = run_repro(*args, w); });
}

}  // namespace sdpa::cli
