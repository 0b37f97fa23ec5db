// sdpacheck merge: the run folders and corpora of a campaign's shards put
// together as one run (reports/run_merge.h does the arithmetic; this file
// reads the folders and writes the merged one).
#include <algorithm>
#include <filesystem>
#include <fstream>
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

// "I/N" -> (I, N); "0,2/4" (a merge of some shards) -> ({0, 2}, 4).
std::pair<std::vector<int>, int> parse_held_shards(const json& run, const std::string& source) {
  std::vector<std::string> names;
  if (run.contains("shards")) run.at("shards").get_to(names);
  else names.push_back(run.at("shard").get<std::string>());
  std::vector<int> indices;
  int count = 0;
  for (const auto& s : names) {
    int i = -1, n = 0;
    char slash = 0;
    std::istringstream in(s);
    if (!(in >> i >> slash >> n) || slash != '/' || i < 0 || n < 1 || i >= n || (count && n != count))
      throw InputError(source + ": shard '" + s + "': expected I/N");
    indices.push_back(i);
    count = n;
  }
  return {indices, count};
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

RunFolder read_run_folder(const std::string& dir, bool allow_incomplete) {
  RunFolder f;
  const fs::path d(dir);
  json run = read_json(d / "run.json"), cp = read_json(d / "checkpoint.json");
  const std::string cp_path = (d / "checkpoint.json").string();
  try {
    if (cp.value("format", "") != kCheckpointFormat) throw InputError(std::string("format is not ") + kCheckpointFormat);
    const std::string state = run.value("state", "");
    f.complete = state == "complete";
    if (!f.complete && !allow_incomplete)
      throw InputError("state is '" + state + "', not complete: finish it with sdpacheck fuzz --resume " + dir +
                       ", or pass --allow-incomplete to merge what it did");
    f.timing = run.contains("timing");
    f.args = cp.at("args");
    RunRecord& r = f.record;
    r.source = dir;
    r.agreed = agreed_settings(run, f.args);
    auto [indices, count] = parse_held_shards(run, dir + "/run.json");
    r.settings = RunSettings{run.at("seed").get<uint64_t>(), run.at("cases_per_target").get<int64_t>(),
                             run.at("max_size").get<int>(), indices.size() == 1 ? indices[0] : 0, count,
                             run.at("policy").get<std::string>(), run.at("passes").get<std::string>() != "on",
                             run.value("shard_source", ""), indices.size() == 1 ? std::vector<int>{} : indices};
    for (const auto& t : cp.at("done")) r.runs.push_back(target_run_from_json(t, cp_path));
    const json& current = cp.at("current");
    if (allow_incomplete && current.is_object()) r.runs.push_back(target_run_from_json(current.at("run"), cp_path));
    for (auto& t : r.runs) {
      t.interrupted = false;
      for (auto& path : t.crash_files) {
        path = find_crash_file(d, path);
        f.crash_iterations[path] = read_json(path).at("provenance").at("iteration").get<int64_t>();
      }
    }
    if (cp.contains("held")) {  // written by merge
      for (const auto& [i, targets] : cp.at("held").items())
        r.held[std::stoi(i)] = targets.get<std::map<std::string, int64_t>>();
    } else {  // one shard: how far each target got
      auto& held = r.held[r.settings.shard];
      for (const auto& t : f.args.at("targets")) held[t.get<std::string>()] = r.settings.shard;
      for (const auto& t : r.runs) held[t.target] = next_iteration_after(r.settings.shard, count, t.cases);
      if (current.is_object() && allow_incomplete)
        held[current.at("target").get<std::string>()] = current.at("next_iteration").get<int64_t>();
    }
    r.has_stats = cp.contains("stats");
    if (r.has_stats)
      for (const auto& [name, t] : cp.at("stats").items())
        r.stats[name] = target_stats_from_json(t, cp_path + ": stats of " + name);
  } catch (const InputError& e) {
    throw InputError(dir + ": " + e.what());
  } catch (const std::exception& e) {
    throw InputError(dir + ": not a run folder of sdpacheck fuzz or merge: " + e.what());
  }
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

int run_merge(MergeArgs a) {
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
