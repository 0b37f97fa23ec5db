// sdpacheck merge: the run folders and corpora of a campaign's shards put
// together as one run (reports/run_merge.h does the arithmetic; this file
// reads the folders and writes the merged one).
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "generators/case_classes.h"
#include "harness/campaign/campaign_state.h"
#include "harness/io/atomic_write.h"
#include "harness/io/json_reader.h"
#include "reports/html_report.h"
#include "reports/junit.h"
#include "reports/run_merge.h"
#include "reports/run_summary.h"

namespace sdpa::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct MergeArgs {
  std::vector<std::string> runs, corpora;
  std::string out, out_corpus;  // out_corpus empty: OUT/corpus
  bool allow_incomplete = false;
};

// One run folder: run.json, and checkpoint.json, which holds every finding
// whole (shrunk case, graphs) and the per-case statistics.
struct RunFolder {
  RunRecord record;
  json args;          // the fuzz settings of the checkpoint
  bool complete = true, timing = true;
  std::map<std::string, int64_t> crash_iterations;  // crash file -> its iteration
};

// Read within the bounds every JSON input has (json_reader.h): a hostile
// file's nesting never reaches a recursive walk.
json read_json(const fs::path& path) {
  if (!fs::exists(path))
    throw InputError(path.string() + ": cannot open file (is this a run folder of sdpacheck fuzz?)");
  json j = read_json_file(path.string());
  if (!j.is_object()) throw InputError(path.string() + ": not valid JSON (expected an object)");
  return j;
}

// "I/N" with 0 <= I < N, the whole text: "1/2xyz" is not a shard.
std::optional<std::pair<int, int>> parse_shard_name(const std::string& s) {
  const auto slash = s.find('/');
  if (slash == std::string::npos) return std::nullopt;
  auto whole_int = [](const std::string& t, int& out) {
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return ec == std::errc() && end == t.data() + t.size() && !t.empty();
  };
  int i = -1, n = 0;
  if (!whole_int(s.substr(0, slash), i) || !whole_int(s.substr(slash + 1), n) || i < 0 || n < 1 || i >= n)
    return std::nullopt;
  return std::make_pair(i, n);
}

// run.json's `shard` "I/N", or `shards` ["0/4", "2/4"] (a merge of some
// shards) -> ({I...}, N): distinct indices of one count.
std::pair<std::vector<int>, int> parse_held_shards(JsonObject& run) {
  const bool many = run.has("shards");
  const std::string key = many ? "shards" : "shard";
  const json& v = run.require(key);
  if (many ? !v.is_array() || v.empty() : !v.is_string())
    run.fail(key, many ? "expected a non-empty list of \"I/N\"" : "expected \"I/N\", got " + json_kind(v));
  std::vector<int> indices;
  int count = 0;
  for (const json& name : many ? v : json::array({v})) {
    auto shard = name.is_string() ? parse_shard_name(name.get<std::string>()) : std::nullopt;
    if (!shard || (count && shard->second != count))
      run.fail(key, "expected \"I/N\" with 0 <= I < N, one N for all, got " + name.dump());
    if (std::find(indices.begin(), indices.end(), shard->first) != indices.end())
      run.fail(key, "shard " + name.get<std::string>() + " is named twice");
    indices.push_back(shard->first);
    count = shard->second;
  }
  return {indices, count};
}

// The fields of run.json the merge compares and sums, each of its kind.
void check_run_json(JsonObject& run) {
  const std::string format = run.str("format");
  if (format != kRunFormat) run.fail("format", std::string("expected \"") + kRunFormat + "\", got \"" + format + "\"");
  run.str("version");
  const json& seed = run.require("seed");
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
    run.fail("seed", "expected an integer in [0, 2^64), got " + seed.dump());
  if (run.integer("cases_per_target") < 1) run.fail("cases_per_target", "expected an integer >= 1");
  const int64_t max_size = run.integer("max_size");
  if (max_size < 0 || max_size > 1000) run.fail("max_size", "expected an integer in [0, 1000], got " + std::to_string(max_size));
  run.str("policy");
  const std::string passes = run.str("passes");
  if (passes != "on" && passes != "off") run.fail("passes", "expected \"on\" or \"off\", got \"" + passes + "\"");
  if (run.has("shard_source")) run.str("shard_source");
  if (run.has("state")) run.str("state");
}

// checkpoint.json's args, as far as the merge reads them: distinct target
// names, option texts, record_warnings.
std::vector<std::string> check_args(JsonObject& cp) {
  JsonObject args = cp.object("args");
  std::vector<std::string> targets;
  const json& t = args.require("targets");
  if (!t.is_array() || t.empty()) args.fail("targets", "expected a non-empty list of target names");
  for (const json& name : t) {
    if (!name.is_string()) args.fail("targets", "expected a list of target names, got " + name.dump());
    if (std::find(targets.begin(), targets.end(), name.get<std::string>()) != targets.end())
      args.fail("targets", "target " + name.dump() + " is named twice");
    targets.push_back(name.get<std::string>());
  }
  const json& options = args.require("options");
  if (!options.is_array() || !std::all_of(options.begin(), options.end(), [](const json& o) { return o.is_string(); }))
    args.fail("options", "expected a list of key=value texts");
  args.boolean("record_warnings");
  return targets;
}

// The settings the shards of one campaign must share.
json agreed_settings(const json& run, const json& args) {
  std::vector<std::string> options = args.at("options").get<std::vector<std::string>>();
  std::sort(options.begin(), options.end());
  return {{"version", run.at("version")},         {"seed", run.at("seed")},
          {"cases", run.at("cases_per_target")},  {"max_size", run.at("max_size")},
          {"policy", run.at("policy")},           {"passes", run.at("passes")},
          {"targets", args.at("targets")},        {"options", options},
          {"record_warnings", args.at("record_warnings")}};
}

// Crash files are looked for in the folder given, where a scheduler may have
// put the run folder, before the path the shard recorded.
std::string find_crash_file(const fs::path& dir, const std::string& recorded) {
  fs::path here = dir / "crashes" / fs::path(recorded).filename();
  if (fs::exists(here)) return here.string();
  if (fs::exists(recorded)) return recorded;
  throw InputError(dir.string() + ": crash file " + recorded + " is neither in " + (dir / "crashes").string() +
                   " nor at its recorded path");
}

// Runs `read` (which checks fields of one file), its InputError prefixed with the file.
template <class Read>
void in_file(const std::string& file, Read read) {
  try {
    read();
  } catch (const InputError& e) {
    throw InputError(file + ": " + e.what());
  }
}

// The iterations i < cases with i % shards == index: the most cases that shard runs of a target.
int64_t shard_share(int index, int shards, int64_t cases) {
  return index < cases ? (cases - index + shards - 1) / shards : 0;
}

// A target run of the checkpoint: of a target of the run, not seen before,
// with no more cases than the shards it holds run.
TargetRun checked_run(const json& j, const std::string& cp_path, const std::string& path,
                      const std::vector<std::string>& targets, int64_t most_cases, const std::vector<TargetRun>& seen) {
  TargetRun t = target_run_from_json(j, cp_path, path);
  auto fail = [&](const std::string& field, const std::string& why) {
    throw InputError(cp_path + ": " + path + "." + field + ": " + why);
  };
  if (std::find(targets.begin(), targets.end(), t.target) == targets.end())
    fail("target", "\"" + t.target + "\" is not a target of the run (args.targets)");
  for (const auto& other : seen)
    if (other.target == t.target) fail("target", "\"" + t.target + "\" has a second run");
  if (t.cases > most_cases)
    fail("cases", "expected at most " + std::to_string(most_cases) + ", the iterations its shards hold, got " +
                      std::to_string(t.cases));
  return t;
}

// held (written by merge): shard index -> target -> the first iteration of
// that shard not run; one entry for each shard run.json names.
void read_held(const json& held, const std::vector<int>& indices, const std::vector<std::string>& targets,
               RunRecord& r) {
  JsonObject o(held, "held");
  for (const auto& [key, _] : held.items()) {
    int i = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), i);
    if (ec != std::errc() || end != key.data() + key.size() || key.empty() ||
        std::find(indices.begin(), indices.end(), i) == indices.end())
      o.fail(key, "expected the index of a shard run.json names, got \"" + key + "\"");
    JsonObject shard = o.object(key);
    for (const auto& [target, __] : o.require(key).items()) {
      if (std::find(targets.begin(), targets.end(), target) == targets.end())
        shard.fail(target, "\"" + target + "\" is not a target of the run (args.targets)");
      const int64_t next = shard.integer(target);
      if (next < 0) shard.fail(target, "expected an iteration >= 0, got " + std::to_string(next));
      r.held[i][target] = next;
    }
  }
  for (int i : indices)
    if (!r.held.count(i)) throw InputError("held: no entry for shard " + std::to_string(i) + ", which run.json names");
}

// The iteration a crash file records, read as replay reads it.
int64_t crash_iteration(const std::string& path) {
  int64_t iteration = 0;
  in_file(path, [&] {
    const json crash = read_json(path);
    JsonObject top(crash, "");
    iteration = top.object("provenance").integer("iteration");
  });
  return iteration;
}

RunFolder read_run_folder(const std::string& dir, bool allow_incomplete) {
  RunFolder f;
  const fs::path d(dir);
  const std::string run_path = (d / "run.json").string(), cp_path = (d / "checkpoint.json").string();
  json run = read_json(run_path), cp = read_json(cp_path);
  std::vector<int> indices;
  int count = 0;
  in_file(run_path, [&] {
    JsonObject o(run, "");
    check_run_json(o);
    std::tie(indices, count) = parse_held_shards(o);
  });
  const std::string state = run.value("state", "");
  f.complete = state == "complete";
  if (!f.complete && !allow_incomplete)
    throw InputError(run_path + ": state is '" + state + "', not complete: finish it with sdpacheck fuzz --resume " +
                     dir + ", or pass --allow-incomplete to merge what it did");
  f.timing = run.contains("timing");
  std::vector<std::string> targets;
  in_file(cp_path, [&] {
    JsonObject o(cp, "");
    const std::string format = o.str("format");
    if (format != kCheckpointFormat)
      o.fail("format", std::string("expected \"") + kCheckpointFormat + "\", got \"" + format + "\"");
    targets = check_args(o);
    if (!o.require("done").is_array()) o.fail("done", "expected a list of target runs, got " + json_kind(cp["done"]));
    const json& current = o.require("current");
    if (!current.is_null() && !current.is_object()) o.fail("current", "expected an object or null");
    if (o.has("held") && !cp["held"].is_object()) o.fail("held", "expected an object");
    if (!o.has("held") && indices.size() > 1)
      o.fail("held", "missing, though run.json names more than one shard (a merge writes it)");
    if (o.has("stats")) {
      JsonObject stats = o.object("stats");
      for (const auto& [name, _] : cp["stats"].items())
        if (std::find(targets.begin(), targets.end(), name) == targets.end())
          stats.fail(name, "\"" + name + "\" is not a target of the run (args.targets)");
    }
  });
  f.args = cp.at("args");
  RunRecord& r = f.record;
  r.source = dir;
  r.agreed = agreed_settings(run, f.args);
  r.settings = RunSettings{run.at("seed").get<uint64_t>(), run.at("cases_per_target").get<int64_t>(),
                           static_cast<int>(run.at("max_size").get<int64_t>()), indices.size() == 1 ? indices[0] : 0,
                           count, run.at("policy").get<std::string>(), run.at("passes").get<std::string>() != "on",
                           run.value("shard_source", ""), indices.size() == 1 ? std::vector<int>{} : indices};
  int64_t most_cases = 0;
  for (int i : indices) most_cases += shard_share(i, count, r.settings.cases);
  const json& done = cp.at("done");
  for (size_t k = 0; k < done.size(); ++k)
    r.runs.push_back(checked_run(done[k], cp_path, "done[" + std::to_string(k) + "]", targets, most_cases, r.runs));
  if (f.complete)
    for (const auto& t : targets)
      if (std::none_of(r.runs.begin(), r.runs.end(), [&](const TargetRun& x) { return x.target == t; }))
        throw InputError(cp_path + ": done: no run of target " + t + ", though run.json says the run is complete");
  const json& current = cp.at("current");
  std::string current_target;
  int64_t current_next = 0;
  if (allow_incomplete && current.is_object()) {
    in_file(cp_path, [&] {
      JsonObject o(current, "current");
      current_target = o.str("target");
      current_next = o.integer("next_iteration");
      if (current_next < 0) o.fail("next_iteration", "expected an iteration >= 0");
    });
    r.runs.push_back(checked_run(current.at("run"), cp_path, "current.run", targets, most_cases, r.runs));
    if (r.runs.back().target != current_target)
      throw InputError(cp_path + ": current.run.target: expected \"" + current_target + "\", the target of current");
  }
  if (r.runs.empty())
    throw InputError(cp_path + ": done: no target run (and no current one): the folder adds nothing to a merge");
  for (auto& t : r.runs) {
    t.interrupted = false;
    for (auto& path : t.crash_files) {
      path = find_crash_file(d, path);
      f.crash_iterations[path] = crash_iteration(path);
    }
  }
  if (cp.contains("held")) {  // written by merge
    in_file(cp_path, [&] { read_held(cp.at("held"), indices, targets, r); });
  } else {  // one shard: how far each target got
    auto& held = r.held[r.settings.shard];
    for (const auto& t : targets) held[t] = r.settings.shard;
    for (const auto& t : r.runs) held[t.target] = next_iteration_after(r.settings.shard, count, t.cases);
    if (!current_target.empty()) held[current_target] = current_next;
  }
  r.has_stats = cp.contains("stats");
  if (r.has_stats)
    for (const auto& [name, t] : cp.at("stats").items())
      r.stats[name] = target_stats_from_json(t, cp_path + ": stats of " + name);
  return f;
}

// The corpus file a finding was written to: in one of the --corpus folders
// (as <target>/<name>) or at its recorded path, with the finding's iteration.
std::string find_finding_file(const MergeArgs& a, const WrittenFinding& w, const std::string& target, uint64_t seed) {
  std::vector<fs::path> candidates;
  const fs::path name = fs::path(w.file).filename();
  for (const auto& c : a.corpora) candidates.push_back(fs::path(c) / target / name);
  candidates.push_back(w.file);
  for (const auto& p : candidates) {
    if (!fs::exists(p)) continue;
    json e = read_json(p);
    const json prov = e.value("provenance", json::object());
    if (prov.value("iteration", int64_t{-1}) == w.iteration && prov.value("seed", uint64_t{0}) == seed)
      return p.string();
  }
  std::string where;
  for (const auto& c : a.corpora) where += " " + c;
  throw InputError("finding " + w.verdict + " of target " + target + " (iteration " + std::to_string(w.iteration) +
                   "): its corpus file " + name.string() + " is in none of the --corpus folders (" +
                   (where.empty() ? std::string("none given") : where.substr(1)) + ") nor at " + w.file);
}

void copy_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw InputError(from + ": cannot read");
  write_file_atomically(to, text.str());
}

// The kept findings' files into the merged corpus, the crash files into OUT/crashes.
void copy_files(const MergeArgs& a, RunRecord& merged, const std::map<std::string, int64_t>& crash_iterations) {
  for (auto& t : merged.runs) {
    for (auto& w : t.findings) {
      if (w.file.empty()) continue;  // a --no-corpus shard
      std::string from = find_finding_file(a, w, t.target, merged.settings.seed);
      w.file = (fs::path(a.out_corpus) / t.target / fs::path(w.file).filename()).string();
      if (fs::weakly_canonical(from) != fs::weakly_canonical(w.file)) copy_file(from, w.file);
    }
    std::vector<std::pair<int64_t, std::string>> crashes;
    for (const auto& path : t.crash_files) crashes.push_back({crash_iterations.at(path), path});
    std::sort(crashes.begin(), crashes.end());  // in the order a campaign run whole meets them
    t.crash_files.clear();
    for (const auto& [_, from] : crashes) {
      std::string to = (fs::path(a.out) / "crashes" / fs::path(from).filename()).string();
      if (fs::weakly_canonical(from) != fs::weakly_canonical(to)) copy_file(from, to);
      t.crash_files.push_back(to);
    }
  }
}

json merged_checkpoint(const MergeArgs& a, const RunRecord& m, json args, const CampaignStats& stats) {
  std::string shard = std::to_string(m.settings.shard) + "/" + std::to_string(m.settings.shards);
  if (!m.settings.shard_set.empty()) {
    shard.clear();
    for (int i : m.settings.shard_set) shard += (shard.empty() ? "" : ",") + std::to_string(i);
    shard += "/" + std::to_string(m.settings.shards);
  }
  args["shard"] = shard;
  args["shard_source"] = m.settings.shard_source;
  args["corpus"] = a.out_corpus;
  args["junit"] = (fs::path(a.out) / "junit.xml").string();
  args["html"] = (fs::path(a.out) / "report").string();
  json j = {{"format", kCheckpointFormat}, {"args", args}, {"done", json::array()}, {"current", nullptr}};
  for (const auto& r : m.runs) j["done"].push_back(target_run_to_json(r));
  if (m.has_stats) j["stats"] = stats.to_json();
  j["held"] = json::object();
  for (const auto& [i, targets] : m.held) j["held"][std::to_string(i)] = targets;
  return j;
}

// The merged folder is written over: it must not be one of the folders read.
void check_out_apart(const MergeArgs& a) {
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(a.out, ec);
  for (const auto& dir : a.runs)
    if (!ec && fs::weakly_canonical(dir, ec) == out)
      throw InputError("--out " + a.out + ": it is run folder " + dir + ", which the merge reads; name a new folder");
}

int run_merge(MergeArgs a) {
  check_out_apart(a);
  if (a.out_corpus.empty()) a.out_corpus = (fs::path(a.out) / "corpus").string();
  std::vector<RunFolder> folders;
  std::vector<RunRecord> records;
  std::map<std::string, int64_t> crash_iterations;
  bool complete = true, timing = true;
  for (const auto& dir : a.runs) {
    folders.push_back(read_run_folder(dir, a.allow_incomplete));
    records.push_back(folders.back().record);
    crash_iterations.insert(folders.back().crash_iterations.begin(), folders.back().crash_iterations.end());
    complete = complete && folders.back().complete;
    timing = timing && folders.back().timing;
  }
  RunRecord m = merge_runs(records);
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) throw InputError("--out: cannot create folder " + a.out + ": " + ec.message());
  copy_files(a, m, crash_iterations);
  CampaignStats stats(boundary_classes);
  for (const auto& [name, t] : m.stats) stats.merge(name, t);
  json summary = run_summary(m.settings, m.runs, timing, m.has_stats ? &stats : nullptr);
  summary["state"] = complete ? "complete" : "interrupted";
  write_file_atomically((fs::path(a.out) / "checkpoint.json").string(),
                        merged_checkpoint(a, m, folders[0].args, stats).dump(-1, ' ', false,
                                                                             json::error_handler_t::replace) +
                            "\n");
  std::string path = write_run_json(a.out, summary);
  std::cout << run_summary_text(m.runs) << "merged " << a.runs.size() << " run folders, holding shard "
            << (summary.contains("shard") ? summary["shard"].dump() : summary["shards"].dump()) << "\n"
            << "run summary: " << path << "\n";
  std::cout << "junit: " << write_junit((fs::path(a.out) / "junit.xml").string(), m.settings, m.runs) << "\n";
  if (m.has_stats)
    std::cout << "html report: " << write_html_report((fs::path(a.out) / "report").string(), m.settings, m.runs, stats)
              << "\n";
  else
    std::cout << "no html report: a run folder has no statistics (written by a fuzz before sdpacheck merge)\n";
  return kOk;
}

}  // namespace

void add_merge_command(CLI::App& app, Wiring&, int& exit_code) {
  auto* args = new MergeArgs();  // lives as long as the process
  CLI::App* cmd = app.add_subcommand(
      "merge", "merge the run folders and corpora of a campaign's shards into one run folder and corpus");
  cmd->add_option("runs", args->runs, "run folders of sdpacheck fuzz (or of an earlier merge)")
      ->required()
      ->type_name("RUN_DIR...");
  cmd->add_option("--corpus", args->corpora,
                  "folders the shards wrote their findings to (repeatable; default: the paths run.json records)")
      ->type_name("DIR");
  cmd->add_option("--out", args->out, "the merged run folder: run.json, checkpoint.json, junit.xml, report/")
      ->required()
      ->type_name("DIR");
  cmd->add_option("--out-corpus", args->out_corpus, "where the kept findings are written (default: OUT/corpus)")
      ->type_name("DIR");
  cmd->add_flag("--allow-incomplete", args->allow_incomplete,
                "also take a run that was interrupted (state not complete): what it did is merged, and the "
                "merged run.json says state interrupted");
  cmd->callback([args, &exit_code] { exit_code = run_merge(*args); });
}

}  // namespace sdpa::cli
