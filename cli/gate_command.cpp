#include <filesystem>
#include <iostream>

#include "harness/io/atomic_write.h"
#include "cli/commands.h"
#include "harness/io/json_reader.h"
#include "harness/campaign/replay.h"
#include "reports/gate_summary.h"

namespace sdpa::cli {
namespace {

struct GateArgs {
  std::string target, against, record, corpus = "corpus", out = "gate-out";
  std::vector<std::string> base, head;
  int64_t cases = 500, smoke = 200;
  uint64_t seed = 1;
  int max_size = 100;
  bool allow_missed = false, allow_adapters = false;
};

Options parse_kv(const std::vector<std::string>& given, const std::string& flag) {
  Options out;
  for (const auto& kv : given) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(flag + " '" + kv + "': expected key=value, for example guard=contract");
    out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

std::string label(const Options& o) {
  std::string s;
  for (const auto& [k, v] : o) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s.empty() ? "defaults" : s;
}

// Replays every corpus file, each case in a worker; counts regressions and
// invalid files.
void replay_corpus(const GateArgs& a, Wiring& w, GateReport& r, IsolatedCases* isolated) {
  if (!std::filesystem::exists(a.corpus)) return;
  auto report = [](const std::string& file, const ReplayOutcome* o, const std::string& error) {
    if (!o) std::cerr << "corpus: INVALID " << error << "\n";
    else if (o->status != ReplayStatus::as_expected)
      std::cerr << "corpus: " << replay_status_name(o->status) << " " << file << " expect="
                << o->expected << " observed=" << o->observed << "\n";
  };
  std::vector<CorpusProblem> problems;
  const std::vector<std::string> files = collect_corpus_files({a.corpus}, &problems, false);
  ReplayTally t = replay_files(files, w.registry, *w.reference, {SizeLimits{}, a.allow_adapters}, false, report, isolated);
  report_corpus_problems(problems, report, t);
  r.corpus_files = t.files;
  r.corpus_regressions = t.regressions + t.fixed;
  r.corpus_invalid = t.invalid;
}

// The case a section of gate.md shows, as a corpus file replaying the head
// policy; returns its path.
std::string write_case(const GateArgs& a, const Options& head, const GateChange& s, const std::string& section) {
  CorpusEntry e;
  e.target = a.target;
  e.options = head;
  e.expect = s.head.verdict;
  e.c = s.head.c;
  e.provenance = {{"version", kVersion}, {"notes", "sdpacheck gate: " + section}, {"seed", a.seed},
                  {"index", s.head.index}};
  std::string slug = section;
  for (char& ch : slug) ch = ch == ' ' || ch == ',' ? '-' : ch;
  auto path = std::filesystem::path(a.out) / "cases" / (slug + ".json");
  write_file_atomically(path.string(), corpus_to_json(e).dump(2) + "\n");
  return path.string();
}

// The case each class shows (example(): the smallest, a newly unsound one
// ending in a finding first), and the smallest unsound in both with another
// verdict.
void write_cases(const GateArgs& a, const Options& head, GateReport& r) {
  for (GateClass c : gate_classes())
    if (const GateChange* s = example(c, r.comparison.changes.at(c)))
      r.case_files[c] = write_case(a, head, *s, gate_class_name(c));
  if (const GateChange* s = smallest(r.comparison.verdict_changed))
    r.verdict_changed_file = write_case(a, head, *s, "unsound in both another verdict");
}

// The paths the gate writes, checked before the sample is decided: a path
// that cannot be written fails now, not after all the work.
void prepare_output_paths(const GateArgs& a) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec || !fs::is_directory(a.out))
    throw InputError("--out " + a.out + ": cannot create folder" + (ec ? ": " + ec.message() : ""));
  if (a.record.empty()) return;
  if (fs::is_directory(a.record))
    throw InputError("--record " + a.record + ": is a folder; expected the path of the decisions file");
  const fs::path parent = fs::path(a.record).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec || (!parent.empty() && !fs::is_directory(parent)))
    throw InputError("--record " + a.record + ": cannot create folder " + parent.string() +
                     (ec ? ": " + ec.message() : ""));
}

int run_gate(const GateArgs& a, Wiring& w) {
  if (!w.registry.find(a.target)) w.registry.make(a.target, {});  // names the known targets
  if (!a.against.empty() && !a.base.empty())
    throw InputError("--base and --against: give one (the head policy is compared with a base policy, or with "
                     "a decisions file)");
  prepare_output_paths(a);
  Options head_given = parse_kv(a.head, "--head");
  auto head = w.registry.make(a.target, head_given);
  CaseGeneratorFactory gen = w.generators("default");
  GateReport r;
  r.target = a.target;
  r.seed = a.seed;
  r.allow_missed = a.allow_missed;
  r.head_label = label(head_given);
  // Every case runs in a worker with the default limits, as fuzz and replay run them.
  std::unique_ptr<IsolatedCases> isolated = make_isolated_cases(w, IsolationArgs{});
  DecisionsFile base_d, head_d;
  if (!a.against.empty()) {
    base_d = read_decisions_file(a.against);
    if (base_d.target != a.target)
      throw InputError(a.against + ": target: the file records target " + base_d.target + ", not " + a.target);
    try {
      if (!a.allow_adapters) refuse_adapter_programs(base_d.options);
    } catch (const InputError& e) {
      throw InputError(a.against + ": " + e.what());
    }
    try {
      w.registry.make(base_d.target, base_d.options);  // an option or value the target does not have
    } catch (const InputError& e) {
      throw InputError(a.against + ": options: " + e.what());
    }
    r.base_label = "decisions file " + a.against + " (" + label(base_d.options) + ")";
    r.seed = base_d.seed;
    head_d = record_decisions_on(*head, *w.reference, base_d, isolated.get());
  } else {
    Options base_given = parse_kv(a.base, "--base");
    auto base = w.registry.make(a.target, base_given);
    r.base_label = label(base_given);
    base_d = record_decisions(*base, *w.reference, gen, a.seed, a.cases, a.max_size, isolated.get());
    head_d = record_decisions(*head, *w.reference, gen, a.seed, a.cases, a.max_size, isolated.get());
  }
  if (!a.record.empty()) write_file_atomically(a.record, decisions_to_json(head_d).dump(1) + "\n");
  r.comparison = compare_decisions(base_d, head_d);
  replay_corpus(a, w, r, isolated.get());
  CampaignOptions smoke;
  smoke.seed = a.seed;
  smoke.cases = a.smoke;
  smoke.isolate = true;
  TargetRun run = run_target_campaign(*head, *w.reference, gen, smoke);
  r.smoke_cases = run.cases;
  for (const auto& [v, n] : run.verdicts) r.smoke_failures += is_failure(*parse_verdict(v)) ? n : 0;
  write_cases(a, head->options(), r);
  std::string md = gate_markdown(r);
  write_file_atomically((std::filesystem::path(a.out) / "gate.md").string(), md);
  write_file_atomically((std::filesystem::path(a.out) / "gate.json").string(), gate_json(r).dump(2) + "\n");
  std::cout << md;
  if (r.corpus_invalid > 0) return kBadInput;  // as replay: an invalid file is exit 2
  return r.failures().empty() ? kOk : kFindings;
}

}  // namespace

void add_gate_command(CLI::App& app, Wiring& w, int& exit_code) {
  auto* a = new GateArgs();
  CLI::App* cmd = app.add_subcommand(
      "gate",
      "compare the guard decisions of two policies (or a policy and a kept decisions file) on a\n"
      "deterministic sample, replay the corpus and run a smoke campaign. Exit 0: the gate passes;\n"
      "1: something newly unsound, newly missed (unless --allow-missed), a corpus regression or a\n"
      "smoke failure; 2: a usage error or an invalid file.");
  cmd->add_option("--target", a->target, "the target whose guard changed")->required();
  cmd->add_option("--base", a->base, "base policy options key=value (repeatable), e.g. guard=upstream");
  cmd->add_option("--head", a->head, "head policy options key=value (repeatable), e.g. guard=contract");
  cmd->add_option("--against", a->against, "a decisions file to compare the head policy against (instead of --base)");
  cmd->add_option("--record", a->record, "write the head policy's decisions file here");
  cmd->add_option("--cases", a->cases, "sample size")->check(integer_in(1));
  cmd->add_option("--seed", a->seed, "sample seed")->check(seed_integer());
  cmd->add_option("--max-size", a->max_size, "largest RapidCheck size")->check(integer_in(0, 1000));
  cmd->add_flag("--allow-missed", a->allow_missed, "newly missed rewrites do not fail the gate");
  cmd->add_option("--corpus", a->corpus, "corpus folder to replay (skipped when it does not exist)");
  add_allow_adapters_flag(cmd, a->allow_adapters);
  cmd->add_option("--smoke", a->smoke, "fixed-seed smoke campaign size for the head policy")->check(integer_in(0));
  cmd->add_option("--out", a->out, "folder for gate.md, gate.json and the case each class shows");
  cmd->callback([a, &w, &exit_code] { exit_code = run_gate(*a, w); });
}

}  // namespace sdpa::cli
