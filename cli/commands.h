#pragma once
/// The sdpacheck subcommands. Each registers its options on the CLI11 app
/// and returns the process exit code when run.
#include <CLI/CLI.hpp>

#include "cli/wiring.h"
#include "harness/isolate/isolated_cases.h"

namespace sdpa::cli {

/// Exit codes shared by the commands (README "Exit codes").
enum ExitCode {
  kOk = 0,
  kFindings = 1,     // fuzz --fail-on-finding found failures; replay saw a regression
  kBadInput = 2,     // a usage error or an invalid input file
  kKnownFixed = 3,   // replay: a recorded failure now passes (update `expect`)
};

/// The format of RUN_DIR/checkpoint.json (fuzz writes it, merge reads it).
inline constexpr const char* kCheckpointFormat = "sdpacheck.checkpoint.v1";

/// Checks on an option's text (cli/number_options.cpp), each message saying
/// what the option takes ("--cases: expected an integer >= 1, got '0'"):
/// an integer in [lo, hi] (hi INT64_MAX: no upper bound); a seed, an
/// integer in [0, 2^64); a finite number of seconds >= 0.
CLI::Validator integer_in(int64_t lo, int64_t hi = INT64_MAX);
CLI::Validator seed_integer();
CLI::Validator seconds();

/// Where cases run (cli/isolation.cpp).
struct IsolationArgs {
  bool in_process = false;
  double case_timeout = 60;
  int64_t rss_limit_mb = 2048;
};
void add_isolation_options(CLI::App* cmd, IsolationArgs& a);
/// A worker that runs cases on any target of the wiring; null with --in-process.
std::unique_ptr<IsolatedCases> make_isolated_cases(const Wiring& w, const IsolationArgs& a);

/// --allow-adapters: a corpus or decisions file whose options name an
/// adapter program (adapter:COMMAND) may start it (harness/campaign/replay.h).
void add_allow_adapters_flag(CLI::App* cmd, bool& allow);

void add_fuzz_command(CLI::App& app, Wiring& w, int& exit_code);
void add_replay_command(CLI::App& app, Wiring& w, int& exit_code);
void add_list_command(CLI::App& app, Wiring& w, int& exit_code);
void add_explain_command(CLI::App& app, Wiring& w, int& exit_code);
void add_gate_command(CLI::App& app, Wiring& w, int& exit_code);
void add_repro_command(CLI::App& app, Wiring& w, int& exit_code);
void add_merge_command(CLI::App& app, Wiring& w, int& exit_code);

}  // namespace sdpa::cli
