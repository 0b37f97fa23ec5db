#include <iostream>

#include "cli/commands.h"
#include "harness/campaign/explain.h"
#include "harness/campaign/replay.h"
#include "harness/io/json_reader.h"

namespace sdpa::cli {
namespace {

struct ExplainArgs {
  std::string file;
  IsolationArgs isolation;
  bool allow_adapters = false;
};

}  // namespace

void add_explain_command(CLI::App& app, Wiring& w, int& exit_code) {
  auto* args = new ExplainArgs();  // lives as long as the process
  CLI::App* cmd = app.add_subcommand(
      "explain",
      "take one corpus file apart: verdict, diverging node and violated facts first, then the call,\n"
      "the graph after each pass with every guard rule, the results at each runtime size, the\n"
      "exact and target runs node by node, and the error bound with its inputs. The case runs in a\n"
      "worker first: one that ends it (crash, timeout, oom) is reported as such.");
  cmd->add_option("file", args->file, "a corpus file")->required();
  add_isolation_options(cmd, args->isolation);
  add_allow_adapters_flag(cmd, args->allow_adapters);
  cmd->callback([args, &w, &exit_code] {
    CorpusEntry e = read_replay_entry(args->file, w.registry, {SizeLimits{}, args->allow_adapters});
    exit_code = kOk;
    try {
      std::unique_ptr<IsolatedCases> isolated = make_isolated_cases(w, args->isolation);
      auto death = isolated ? explain_worker_death(e, args->file, w.registry, *w.reference, *isolated)
                            : std::nullopt;
      std::cout << args->file << "\n"
                << (death ? *death : explain_entry(e, w.registry, *w.reference));
    } catch (const InputError& err) {
      throw InputError(args->file + ": " + err.what());
    }
  });
}

}  // namespace sdpa::cli
