#include <iostream>

#include "cli/commands.h"
#include "harness/campaign/explain.h"
#include "harness/campaign/replay.h"
#include "harness/io/json_reader.h"

namespace sdpa::cli {

void add_explain_command(CLI::App& app, Wiring& w, int& exit_code) {
  auto* file = new std::string();
  CLI::App* cmd = app.add_subcommand(
      "explain",
      "take one corpus file apart: verdict, diverging node and violated facts first, then the call,\n"
      "the graph after each pass with every guard rule, the results at each runtime size, the\n"
      "exact and target runs node by node, and the error bound with its inputs");
  cmd->add_option("file", *file, "a corpus file")->required();
  cmd->callback([file, &w, &exit_code] {
    CorpusEntry e = read_replay_entry(*file, w.registry);
    try {
      std::cout << *file << "\n" << explain_entry(e, w.registry, *w.reference);
    } catch (const InputError& err) {
      throw InputError(*file + ": " + err.what());
    }
    exit_code = kOk;
  });
}

}  // namespace sdpa::cli
