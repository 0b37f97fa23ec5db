#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>

#include <filesystem>
#include <map>
#include <iostream>
#include <memory>
#include <thread>

#include "generators/case_classes.h"
#include "harness/campaign/campaign_state.h"
#include "harness/io/atomic_write.h"
#include "cli/commands.h"
#include "cli/shard_source.h"
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
  std::string corpus = "corpus", run_dir = "runs/latest", policy = "default";
  std::string shard;         // "I/N"; empty: from the scheduler's variables (shard_source.h)
  int shards = 0;            // --shards: the count for JOB_COMPLETION_INDEX; 0: not given
  std::string shard_source;  // ShardChoice::source, once resolved
  std::string junit, html;  // empty: not written
  bool no_corpus = false, no_timing = false, identity = false, fail_on_finding = false;
  bool record_warnings = false;
  int64_t stop_after = 0;
  int64_t oracle_sample = kCampaignOracleSample;
  int jobs = 0;  // 0: the machine's cores (isolated), 1 in process
  IsolationArgs isolation;
  std::string resume;  // a run folder whose checkpoint the campaign continues from
};

// The settings a resumed campaign takes from its checkpoint.
nlohmann::json args_to_json(const FuzzArgs& a) {
  return {{"targets", a.targets},   {"options", a.options},     {"cases", a.cases},
          {"time", a.time},         {"seed", a.seed},           {"max_size", a.max_size},
          {"shard", a.shard},       {"shard_source", a.shard_source}, {"corpus", a.corpus},       {"policy", a.policy},
          {"junit", a.junit},       {"html", a.html},           {"no_corpus", a.no_corpus},
          {"no_timing", a.no_timing}, {"identity", a.identity}, {"fail_on_finding", a.fail_on_finding},
          {"record_warnings", a.record_warnings}, {"stop_after", a.stop_after}, {"jobs", a.jobs}, {"oracle_sample", a.oracle_sample},
          {"in_process", a.isolation.in_process}, {"case_timeout", a.isolation.case_timeout},
          {"rss_limit_mb", a.isolation.rss_limit_mb}};
}

// An integer field of args within [lo, hi], as the command line bounds its option.
int64_t bounded_int(JsonObject& o, const std::string& key, int64_t lo, int64_t hi) {
  const int64_t v = o.integer(key);
  if (v < lo || v > hi)
    o.fail(key, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                    std::to_string(v));
  return v;
}

// A number of seconds >= 0.
double seconds_field(JsonObject& o, const std::string& key) {
  const double v = o.number(key);
  if (v < 0) o.fail(key, "expected a number of seconds >= 0, got " + o.require(key).dump());
  return v;
}

std::vector<std::string> strings_field(JsonObject& o, const std::string& key) {
  const nlohmann::json& v = o.require(key);
  if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const nlohmann::json& x) { return x.is_string(); }))
    o.fail(key, "expected a list of strings, got " + v.dump().substr(0, 80));
  return v.get<std::vector<std::string>>();
}

// The settings of a checkpoint, held to the limits of the command line's
// options: a damaged checkpoint is an error naming the field, not a
// campaign of a negative case count or a wrapped memory limit.
FuzzArgs args_from_json(const nlohmann::json& j) {
  JsonObject o(j, "args");
  FuzzArgs a;
  a.targets = strings_field(o, "targets");
  a.options = strings_field(o, "options");
  a.cases = bounded_int(o, "cases", 1, INT64_MAX);
  a.time = seconds_field(o, "time");
  const nlohmann::json& seed = o.require("seed");
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
    o.fail("seed", "expected an integer in [0, 2^64), got " + seed.dump());
  a.seed = seed.get<uint64_t>();
  a.max_size = static_cast<int>(bounded_int(o, "max_size", 0, 1000));
  a.shard = o.str("shard");
  try {
    resolve_shard(a.shard, 0, [](const char*) { return nullptr; });
  } catch (const InputError&) {
    o.fail("shard", "expected \"I/N\" with 0 <= I < N, got \"" + a.shard + "\"");
  }
  if (o.has("shard_source")) a.shard_source = o.str("shard_source");
  a.corpus = o.str("corpus");
  a.policy = o.str("policy");
  a.junit = o.str("junit");
  a.html = o.str("html");
  a.no_corpus = o.boolean("no_corpus");
  a.no_timing = o.boolean("no_timing");
  a.identity = o.boolean("identity");
  a.fail_on_finding = o.boolean("fail_on_finding");
  a.record_warnings = o.boolean("record_warnings");
  a.stop_after = bounded_int(o, "stop_after", 0, INT64_MAX);
  a.jobs = static_cast<int>(bounded_int(o, "jobs", 0, 1024));  // 0: --jobs not given, one per core
  // A checkpoint from before sampling: every case.
  a.oracle_sample = o.has("oracle_sample") ? bounded_int(o, "oracle_sample", 1, INT64_MAX) : 1;
  a.isolation.in_process = o.boolean("in_process");
  a.isolation.case_timeout = seconds_field(o, "case_timeout");
  a.isolation.rss_limit_mb = bounded_int(o, "rss_limit_mb", 0, kMaxRssLimitMb);
  return a;
}

// A target named twice would run twice; an option key given twice with two
// values would keep the last silently.
void check_given_once(const FuzzArgs& a) {
  for (size_t i = 0; i < a.targets.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (a.targets[i] == a.targets[j]) throw InputError("--target " + a.targets[i] + ": given twice");
  std::map<std::string, std::string> seen;
  for (const auto& kv : a.options) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;  // the option parser names the form
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    auto [it, fresh] = seen.emplace(key, value);
    if (!fresh && it->second != value)
      throw InputError("--option " + key + ": given twice, as " + it->second + " and as " + value);
  }
}

std::string checkpoint_path(const std::string& run_dir) {
  return (std::filesystem::path(run_dir) / "checkpoint.json").string();
}

// The checkpoint of RUN_DIR: {format, args, done: [TargetRun], current: state or null}.
nlohmann::json read_checkpoint(const std::string& run_dir) {
  const std::string path = checkpoint_path(run_dir);
  if (!std::filesystem::exists(path))
    throw InputError("--resume " + run_dir + ": no checkpoint.json there (written by sdpacheck fuzz)");
  nlohmann::json j = read_json_file(path);  // within the bounds of every JSON input
  if (!j.is_object() || j.value("format", "") != kCheckpointFormat)
    throw InputError(path + ": not an sdpacheck checkpoint (format " + kCheckpointFormat + ")");
  if (!j.contains("done") || !j["done"].is_array())
    throw InputError(path + ": done: expected a list of target runs");
  if (!j.contains("current") || !(j["current"].is_null() || j["current"].is_object()))
    throw InputError(path + ": current: expected an object or null");
  return j;
}

// Set by SIGINT and SIGTERM: the campaign stops after the case it is on
// and writes what it did.
volatile std::sig_atomic_t stop_signal = 0;

void on_stop_signal(int sig) { stop_signal = sig; }

void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

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

// The shard of a new campaign; a resumed one keeps the shard it was started with.
void resolve_shard_of(FuzzArgs& a) {
  ShardChoice c = resolve_shard(a.shard, a.shards, [](const char* name) { return std::getenv(name); });
  a.shard = shard_text(c.index, c.count);
  a.shard_source = c.source;
}

// Workers that check cases side by side: --jobs, or one per core.
int resolve_jobs(const FuzzArgs& a) {
  if (a.isolation.in_process) {
    if (a.jobs > 1) throw InputError("--jobs " + std::to_string(a.jobs) + ": cases run side by side only in "
                                     "worker processes; drop --in-process or use --jobs 1");
    return 1;
  }
  if (a.jobs > 0) return a.jobs;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
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

// run.json, with what is done so far while the campaign goes.
std::string write_summary(const FuzzArgs& a, const RunSettings& s, const std::vector<TargetRun>& runs,
                          const CampaignStats& stats, const char* state) {
  nlohmann::json summary = run_summary(s, runs, !a.no_timing, &stats);
  summary["state"] = state;
  return write_run_json(a.run_dir, summary);
}

// The statistics of every case counted in `done` and `current`, so that a
// resumed campaign's report and coverage count the cases before the resume,
// and sdpacheck merge can sum them.
void write_checkpoint(const FuzzArgs& a, const std::vector<TargetRun>& done, const nlohmann::json& current,
                      const CampaignStats& stats) {
  nlohmann::json j = {{"format", kCheckpointFormat}, {"args", args_to_json(a)}, {"done", nlohmann::json::array()},
                      {"current", current}, {"stats", stats.to_json()}};
  for (const auto& r : done) j["done"].push_back(target_run_to_json(r));
  write_file_atomically(checkpoint_path(a.run_dir),
                        j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

int run_fuzz(const FuzzArgs& given, Wiring& w) {
  nlohmann::json checkpoint;
  FuzzArgs a = given;
  if (!given.resume.empty()) {
    checkpoint = read_checkpoint(given.resume);
    try {
      if (!checkpoint.contains("args")) throw InputError("args: missing required field");
      a = args_from_json(checkpoint["args"]);
    } catch (const InputError& e) {
      throw InputError(checkpoint_path(given.resume) + ": " + e.what());
    }
    a.run_dir = given.resume;
  }
  const std::string shard_source = a.shard_source;
  resolve_shard_of(a);
  if (!given.resume.empty()) a.shard_source = shard_source;
  CaseGeneratorFactory gen = w.generators(a.policy);
  if (!gen) throw InputError("--policy '" + a.policy + "': expected default or large");
  CampaignOptions opt;
  opt.seed = a.seed;
  opt.cases = a.cases;
  opt.time_limit = a.time;
  opt.max_size = a.max_size;
  {
    ShardChoice c = resolve_shard(a.shard, 0, [](const char*) { return nullptr; });
    opt.shard = c.index;
    opt.shards = c.count;
  }
  opt.corpus_dir = a.no_corpus ? "" : a.corpus;
  opt.record_warnings = a.record_warnings;
  opt.stop_after = a.stop_after;
  opt.check.passes = !a.identity;
  opt.check.oracle_sample = a.oracle_sample;
  opt.isolate = !a.isolation.in_process;
  opt.jobs = resolve_jobs(a);
  opt.limits = {a.isolation.case_timeout, a.isolation.rss_limit_mb};
  opt.crash_dir = (std::filesystem::path(a.run_dir) / "crashes").string();
  if (isatty(STDERR_FILENO))
    opt.progress = [](const std::string& line) { std::cerr << "\r" << line << "   " << std::flush; };
  check_given_once(a);
  std::vector<std::string> names = a.targets;
  if (names.empty())
    for (const auto* f : w.registry.all()) names.push_back(f->name());
  a.targets = names;
  std::vector<const TargetFactory*> factories;
  for (const auto& name : names) {
    w.registry.make(name, {});  // an unknown target name fails here, before any work
    factories.push_back(w.registry.find(name));
  }
  check_options_used(factories, a.options);
  prepare_report_paths(a);
  CampaignStats stats(boundary_classes);
  if (!checkpoint.is_null() && checkpoint.contains("stats"))
    for (const auto& [name, t] : checkpoint.at("stats").items())
      stats.merge(name, target_stats_from_json(t, checkpoint_path(a.run_dir) + ": stats of " + name));
  RunSettings s{a.seed, a.cases, a.max_size, opt.shard, opt.shards, a.policy, a.identity, a.shard_source, {}};
  std::vector<TargetRun> runs;
  if (!checkpoint.is_null())
    for (size_t k = 0; k < checkpoint.at("done").size(); ++k)
      runs.push_back(target_run_from_json(checkpoint["done"][k], checkpoint_path(a.run_dir), "done[" + std::to_string(k) + "]"));
  if (checkpoint.is_null()) write_checkpoint(a, runs, nullptr, stats);
  catch_stop_signals();
  opt.stop_requested = [] { return stop_signal != 0; };
  opt.checkpoint = [&](const TargetRun& so_far, const nlohmann::json& state) {
    write_checkpoint(a, runs, state, stats);
    std::vector<TargetRun> all = runs;
    all.push_back(so_far);
    write_summary(a, s, all, stats, "running");
  };
  bool interrupted = false;
  for (size_t k = runs.size(); k < factories.size() && !interrupted; ++k) {
    const std::string& name = factories[k]->name();
    auto target = w.registry.make(name, options_for(*factories[k], a.options));
    opt.summarize = stats.summarizer();  // in the workers: the command reads summaries, not cases
    opt.on_summary = stats.summary_collector(name);
    const nlohmann::json* current = checkpoint.is_null() ? nullptr : &checkpoint.at("current");
    opt.resume = current && current->is_object() && current->value("target", "") == name ? *current : nullptr;
    TargetRun r = run_target_campaign(*target, *w.reference, gen, opt);
    interrupted = r.interrupted;  // the campaign's last checkpoint holds where it stopped
    runs.push_back(r);
    if (opt.progress) std::cerr << "\n";
    if (!interrupted) write_checkpoint(a, runs, nullptr, stats);
  }
  std::string path = write_summary(a, s, runs, stats, interrupted ? "interrupted" : "complete");
  std::cout << run_summary_text(runs) << "run summary: " << path << "\n";
  if (interrupted) {
    std::cout << "interrupted by signal " << stop_signal << ": continue with sdpacheck fuzz --resume " << a.run_dir << "\n";
    return 128 + stop_signal;
  }
  if (!a.junit.empty()) std::cout << "junit: " << write_junit(a.junit, s, runs) << "\n";
  if (!a.html.empty()) std::cout << "html report: " << write_html_report(a.html, s, runs, stats) << "\n";
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
  cmd->add_option("--cases", args->cases, "cases per target (global iteration count)")->check(integer_in(1));
  cmd->add_option("--time", args->time, "stop each target after this many seconds (0: no limit)")->check(seconds());
  cmd->add_option("--seed", args->seed, "campaign seed")->check(seed_integer());
  cmd->add_option("--max-size", args->max_size, "largest RapidCheck size (0..100 scales case sizes)")->check(integer_in(0, 1000));
  cmd->add_option("--option", args->options,
                  "target option key=value (every selected target with that key) or "
                  "target.key=value, e.g. llm.guard=upstream (repeatable)");
  const auto folder = CLI::Validator(
      [](std::string& s) { return s.empty() ? std::string("expected a folder, got an empty path") : std::string(); },
      "DIR");
  CLI::Option* corpus =
      cmd->add_option("--corpus", args->corpus, "folder findings are written to, as <target>/<file>.json")->check(folder);
  cmd->add_flag("--no-corpus", args->no_corpus, "do not write findings")->excludes(corpus);
  cmd->add_option("--run-dir", args->run_dir, "folder run.json is written to")->check(folder);
  cmd->add_option("--shard", args->shard,
                  "I/N: run iterations i with i % N == I (default: from JOB_COMPLETION_INDEX, "
                  "SLURM_ARRAY_TASK_ID or GTEST_SHARD_INDEX, else 0/1)");
  cmd->add_option("--shards", args->shards,
                  "the shard count for JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's completions; "
                  "or set SDPACHECK_SHARDS)")
      ->check(integer_in(1, INT32_MAX));
  cmd->add_option("--policy", args->policy, "generation policy: default or large");
  cmd->add_flag("--no-timing", args->no_timing, "leave timing out of run.json (byte-identical reruns)");
  cmd->add_flag("--identity", args->identity, "identity self-check: run every target with its passes off");
  cmd->add_flag("--record-warnings", args->record_warnings, "also shrink and write missed-rewrite warnings");
  cmd->add_option("--stop-after", args->stop_after, "stop a target after this many distinct findings (0: never)")->check(integer_in(0));
  cmd->add_option("--oracle-sample", args->oracle_sample,
                  "one case in N, and every case with a finding, non-finite data or golden, or a fully masked "
                  "row, is cross-checked by the LibTorch oracle and judged against the entry graph's exact run; "
                  "the others against the golden (1: every case)")
      ->check(integer_in(1));
  add_isolation_options(cmd, args->isolation);
  cmd->add_option("--jobs", args->jobs,
                  "worker processes checking cases side by side (default: one per core); the run's "
                  "counts, findings and files are the same for any number")
      ->check(integer_in(1, 1024));
  cmd->add_option("--resume", args->resume,
                  "continue the interrupted campaign of this run folder from its checkpoint.json, with the "
                  "settings it was started with (other options are ignored)")
      ->type_name("RUN_DIR");
  cmd->add_flag("--fail-on-finding", args->fail_on_finding, "exit 1 when any case fails");
  cmd->add_option("--junit", args->junit, "write a JUnit XML file: a testsuite per target, a testcase per check")
      ->type_name("PATH");
  cmd->add_option("--html", args->html, "write a self-contained HTML report to DIR/index.html")
      ->type_name("DIR");
  cmd->callback([args, &w, &exit_code] { exit_code = run_fuzz(*args, w); });
}

}  // namespace sdpa::cli
