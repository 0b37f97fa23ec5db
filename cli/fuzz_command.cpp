#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "generators/case_classes.h"
#include "cli/commands.h"
#include "harness/io/json_reader.h"
#include "reports/campaign_stats.h"
#include "reports/html_report.h"
#include "reports/junit.h"
#include "reports/run_summary.h"

namespace sdpa::cli {
namespace {

struct FuzzArgs {
  std::vector<std::string> targets, options;
  int64_t cases = 2000;
  double time = 0;
  uint64_t seed = 1;
  int max_size = 100;
  std::string shard = "0/1", corpus = "corpus", run_dir = "runs/latest", policy = "default";
  std::string junit, html;  // empty: not written
  bool no_corpus = false, no_timing = false, identity = false, fail_on_finding = false;
  bool record_warnings = false;
  int64_t stop_after = 0;
};

// The options of target `factory` among `given` ("key=value" applies to
// every selected target that has the key, "target.key=value" to one).
Options options_for(const TargetFactory& factory, const std::vector<std::string>& given) {
  Options out;
  for (const auto& kv : given) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--option '" + kv + "': expected key=value, for example guard=upstream");
    std::string key = kv.substr(0, eq);
    auto dot = key.find('.');
    if (dot != std::string::npos) {
      if (key.substr(0, dot) != factory.name()) continue;
      key = key.substr(dot + 1);
    } else {
      bool known = false;
      for (const auto& spec : factory.option_specs()) known = known || spec.name == key;
      if (!known) continue;
    }
    out[key] = kv.substr(eq + 1);
  }
  return out;
}

// Every --option must reach some selected target.
void check_options_used(const std::vector<const TargetFactory*>& targets,
                        const std::vector<std::string>& given) {
  for (const auto& kv : given) {
    bool used = false;
    for (const auto* f : targets) used = used || !options_for(*f, {kv}).empty();
    std::string key = kv.substr(0, kv.find('='));
    if (!used) {
      std::string names;
      for (const auto* f : targets) names += (names.empty() ? "" : ", ") + f->name();
      throw InputError("option '" + key + "' is not an option of target " + names +
                       " (see sdpacheck list)");
    }
  }
}

std::pair<int, int> parse_shard(const std::string& s) {
  int i = 0, n = 0;
  char slash = 0;
  std::istringstream in(s);
  if (!(in >> i >> slash >> n) || slash != '/' || n < 1 || i < 0 || i >= n || !in.eof())
    throw InputError("--shard '" + s + "': expected I/N with 0 <= I < N, for example 0/4");
  return {i, n};
}

// The output folders exist before the campaign, so that a path that cannot
// be written fails now and not after hours of fuzzing.
void prepare_report_paths(const FuzzArgs& a) {
  namespace fs = std::filesystem;
  auto make = [](const fs::path& dir, const std::string& flag) {
    std::error_code ec;
    if (!dir.empty()) fs::create_directories(dir, ec);
    if (ec) throw InputError(flag + ": cannot create folder " + dir.string() + ": " + ec.message());
  };
  if (!a.junit.empty()) make(fs::path(a.junit).parent_path(), "--junit");
  if (!a.junit.empty() && fs::is_directory(a.junit))
    throw InputError("--junit " + a.junit + ": is a folder; expected the path of the XML file");
  if (!a.html.empty()) make(a.html, "--html");
  make(a.run_dir, "--run-dir");
  if (!a.no_corpus) make(a.corpus, "--corpus");
}

int run_fuzz(const FuzzArgs& a, Wiring& w) {
  CaseGeneratorFactory gen = w.generators(a.policy);
  if (!gen) throw InputError("--policy '" + a.policy + "': expected default or large");
  CampaignOptions opt;
  opt.seed = a.seed;
  opt.cases = a.cases;
  opt.time_limit = a.time;
  opt.max_size = a.max_size;
  std::tie(opt.shard, opt.shards) = parse_shard(a.shard);
  opt.corpus_dir = a.no_corpus ? "" : a.corpus;
  opt.record_warnings = a.record_warnings;
  opt.stop_after = a.stop_after;
  opt.check.passes = !a.identity;
  if (isatty(STDERR_FILENO))
    opt.progress = [](const std::string& line) { std::cerr << "\r" << line << "   " << std::flush; };
  std::vector<std::string> names = a.targets;
  if (names.empty())
    for (const auto* f : w.registry.all()) names.push_back(f->name());
  std::vector<const TargetFactory*> factories;
  for (const auto& name : names) {
    w.registry.make(name, {});  // an unknown target name fails here, before any work
    factories.push_back(w.registry.find(name));
  }
  check_options_used(factories, a.options);
  prepare_report_paths(a);
  std::unique_ptr<CampaignStats> stats;
  if (!a.html.empty()) stats = std::make_unique<CampaignStats>(boundary_classes);
  std::vector<TargetRun> runs;
  for (const auto* factory : factories) {
    const std::string& name = factory->name();
    auto target = w.registry.make(name, options_for(*factory, a.options));
    if (stats) opt.on_case = stats->collector(name);
    runs.push_back(run_target_campaign(*target, *w.reference, gen, opt));
    if (opt.progress) std::cerr << "\n";
  }
  RunSettings s{a.seed, a.cases, a.max_size, opt.shard, opt.shards, a.policy, a.identity};
  std::string path = write_run_json(a.run_dir, run_summary(s, runs, !a.no_timing));
  std::cout << run_summary_text(runs) << "run summary: " << path << "\n";
  if (!a.junit.empty()) std::cout << "junit: " << write_junit(a.junit, s, runs) << "\n";
  if (stats) std::cout << "html report: " << write_html_report(a.html, s, runs, *stats) << "\n";
  bool failed = false;
  for (const auto& r : runs)
    for (const auto& [v, n] : r.verdicts) failed = failed || is_failure(*parse_verdict(v));
  return a.fail_on_finding && failed ? kFindings : kOk;
}

}  // namespace

void add_fuzz_command(CLI::App& app, Wiring& w, int& exit_code) {
  auto* args = new FuzzArgs();  // lives as long as the process
  CLI::App* cmd = app.add_subcommand("fuzz", "run a fuzzing campaign on one or more targets");
  cmd->add_option("--target", args->targets, "target to fuzz (repeatable; default: every target)");
  cmd->add_option("--cases", args->cases, "cases per target (global iteration count)")->check(CLI::PositiveNumber);
  cmd->add_option("--time", args->time, "stop each target after this many seconds (0: no limit)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", args->seed, "campaign seed");
  cmd->add_option("--max-size", args->max_size, "largest RapidCheck size (0..100 scales case sizes)")->check(CLI::Range(0, 1000));
  cmd->add_option("--option", args->options,
                  "target option key=value (every selected target with that key) or "
                  "target.key=value, e.g. llm.guard=upstream (repeatable)");
  cmd->add_option("--corpus", args->corpus, "folder findings are written to, as <target>/<file>.json");
  cmd->add_flag("--no-corpus", args->no_corpus, "do not write findings");
  cmd->add_option("--run-dir", args->run_dir, "folder run.json is written to");
  cmd->add_option("--shard", args->shard, "I/N: run iterations i with i % N == I");
  cmd->add_option("--policy", args->policy, "generation policy: default or large");
  cmd->add_flag("--no-timing", args->no_timing, "leave timing out of run.json (byte-identical reruns)");
  cmd->add_flag("--identity", args->identity, "identity self-check: run every target with its passes off");
  cmd->add_flag("--record-warnings", args->record_warnings, "also shrink and write missed-rewrite warnings");
  cmd->add_option("--stop-after", args->stop_after, "stop a target after this many distinct findings (0: never)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--fail-on-finding", args->fail_on_finding, "exit 1 when any case fails");
  cmd->add_option("--junit", args->junit, "write a JUnit XML file: a testsuite per target, a testcase per check")
      ->type_name("PATH");
  cmd->add_option("--html", args->html, "write a self-contained HTML report to DIR/index.html")
      ->type_name("DIR");
  cmd->callback([args, &w, &exit_code] { exit_code = run_fuzz(*args, w); });
}

}  // namespace sdpa::cli
