#include "reports/run_summary.h"

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "harness/case/case_json.h"
#include "harness/io/corpus.h"
#include "harness/io/atomic_write.h"

namespace sdpa {

namespace {

// 16 hex digits: a JSON reader that holds numbers as doubles keeps it whole.
std::string digest_text(uint64_t d) {
  char text[19];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(d));
  return text;
}

nlohmann::json finding_entry(const WrittenFinding& w) {
  nlohmann::json j = {{"verdict", w.verdict},     {"check", w.check},
                      {"signature", w.signature}, {"iteration", w.iteration},
                      {"shrink_steps", w.shrink_steps}, {"case", w.summary},
                      {"detail", w.finding.detail}};
  if (!w.file.empty()) j["file"] = w.file;
  if (!w.finding.first_node.empty()) j["first_node"] = w.finding.first_node;
  if (w.finding.error != 0.0 || w.finding.bound != 0.0) {
    j["error"] = w.finding.error;
    j["bound"] = w.finding.bound;
  }
  return j;
}

}  // namespace

nlohmann::json run_summary(const RunSettings& s, const std::vector<TargetRun>& runs, bool with_timing,
                           const CampaignStats* stats) {
  nlohmann::json j;
  j["format"] = kRunFormat;
  j["version"] = kVersion;
  j["seed"] = s.seed;
  j["cases_per_target"] = s.cases;
  j["max_size"] = s.max_size;
  if (s.shard_set.empty()) {
    j["shard"] = std::to_string(s.shard) + "/" + std::to_string(s.shards);
  } else {
    j["shards"] = nlohmann::json::array();
    for (int i : s.shard_set) j["shards"].push_back(std::to_string(i) + "/" + std::to_string(s.shards));
  }
  if (!s.shard_source.empty()) j["shard_source"] = s.shard_source;
  j["policy"] = s.policy;
  j["passes"] = s.identity ? "off (identity self-check)" : "on";
  j["targets"] = nlohmann::json::object();
  for (const auto& r : runs) {
    nlohmann::json t;
    t["options"] = r.options;
    t["cases"] = r.cases;
    t["verdicts"] = r.verdicts;
    t["guard_rules"] = r.guard_rules;
    t["missed_rewrites_by_rule"] = r.missed_rules;
    t["refuted_by_proof_by_rule"] = r.refuted_rules;
    t["duplicates"] = r.duplicates;
    t["next_iteration"] = r.next_iteration;
    t["iteration_digest"] = digest_text(r.iteration_digest);
    if (r.worker_deaths) t["worker_deaths"] = r.worker_deaths;
    if (!r.crash_files.empty()) t["crash_files"] = r.crash_files;
    if (!r.variants.empty()) {
      t["variants"] = nlohmann::json::object();
      for (const auto& [name, v] : r.variants)
        t["variants"][name] = {{"cases", v.cases}, {"verdicts", v.verdicts}, {"counters", v.counters}};
    }
    if (stats) {
      auto it = stats->targets().find(r.target);
      t["coverage"] = coverage_to_json(it == stats->targets().end() ? Coverage{} : it->second.coverage);
    }
    t["findings"] = nlohmann::json::array();
    for (const auto& w : r.findings) t["findings"].push_back(finding_entry(w));
    j["targets"][r.target] = t;
  }
  if (with_timing) {
    j["timing"] = nlohmann::json::object();
    for (const auto& r : runs) {
      double total = r.timing.generate + r.timing.oracle + r.timing.kernels + r.timing.compare;
      j["timing"][r.target] = {
          {"seconds", r.seconds},
          {"cases_per_second", r.cases / std::max(r.seconds, 1e-9)},
          {"split", {{"generate", r.timing.generate / std::max(total, 1e-12)},
                     {"oracle", r.timing.oracle / std::max(total, 1e-12)},
                     {"kernels", r.timing.kernels / std::max(total, 1e-12)},
                     {"compare", r.timing.compare / std::max(total, 1e-12)}}}};
    }
  }
  return j;
}

std::string run_summary_text(const std::vector<TargetRun>& runs) {
  std::ostringstream o;
  for (const auto& r : runs) {
    o << "target " << r.target << ": " << r.cases << " cases in " << r.seconds << " s ("
      << static_cast<int64_t>(r.cases / std::max(r.seconds, 1e-9)) << "/s)\n";
    for (const auto& [v, n] : r.verdicts) o << "  " << v << ": " << n << "\n";
    for (const auto& w : r.findings) {
      o << "  finding " << w.verdict << " [" << w.check << "] " << w.summary << "\n";
      if (!w.finding.detail.empty()) o << "    " << w.finding.detail << "\n";
      if (!w.file.empty()) o << "    replay: sdpacheck replay " << w.file << "\n";
    }
    if (r.duplicates) o << "  " << r.duplicates << " more failures with an already-found signature\n";
    for (const auto& path : r.crash_files) o << "  case that ended the worker, unshrunk: " << path << "\n";
  }
  return o.str();
}

std::string write_run_json(const std::string& dir, const nlohmann::json& summary) {
  std::string path = (std::filesystem::path(dir) / "run.json").string();
  write_file_atomically(path, summary.dump(2) + "\n");
  return path;
}

}  // namespace sdpa
