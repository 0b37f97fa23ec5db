// sdpacheck: differential testing of SDPA rewrites (README.md).
#include <iostream>

#include "cli/commands.h"
#include "harness/io/json_reader.h"

namespace {

// The first argument, when it is not an option, must name a command: CLI11
// would say only "A subcommand is required".
void refuse_unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return;
  std::string names;
  for (const CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; })) {
    if (cmd->get_name() == argv[1]) return;
    names += (names.empty() ? "" : ", ") + cmd->get_name();
  }
  throw sdpa::InputError(std::string("unknown command '") + argv[1] + "': expected one of " + names);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sdpa::cli;
  CLI::App app{"sdpacheck: differential testing and verification of SDPA rewrites"};
  app.require_subcommand(1);
  Wiring w = make_wiring();
  int exit_code = kOk;
  add_fuzz_command(app, w, exit_code);
  add_replay_command(app, w, exit_code);
  add_list_command(app, w, exit_code);
  add_explain_command(app, w, exit_code);
  add_gate_command(app, w, exit_code);
  add_repro_command(app, w, exit_code);
  add_merge_command(app, w, exit_code);
  try {
    refuse_unknown_command(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kOk : kBadInput;
  } catch (const sdpa::InputError& e) {
    std::cerr << "sdpacheck: " << e.what() << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    // A file that cannot be written, a folder that cannot be read: no case
    // result is lost (findings are written as they are found).
    std::cerr << "sdpacheck: could not complete: " << e.what() << "\n";
    return kBadInput;
  }
  return exit_code;
}
