#include "harness/campaign/replay.h"

#include <algorithm>
#include <filesystem>

#include "harness/io/json_reader.h"

namespace sdpa {

const char* replay_status_name(ReplayStatus s) {
  switch (s) {
    case ReplayStatus::as_expected: return "ok";
    case ReplayStatus::regression: return "REGRESSION";
    case ReplayStatus::fixed: return "FIXED";
    case ReplayStatus::changed: return "CHANGED";
  }
  return "?";
}

std::pair<Options, CheckOptions> entry_options(const CorpusEntry& e) {
  Options target_options = e.options;
  CheckOptions opt;
  if (auto it = target_options.find(kPassesOption); it != target_options.end()) {
    if (it->second != "on" && it->second != "off")
      throw InputError(std::string("options.") + kPassesOption + ": expected on or off, got '" +
                       it->second + "'");
    opt.passes = it->second == "on";
    target_options.erase(it);
  }
  return {target_options, opt};
}

CorpusEntry read_replay_entry(const std::string& path, const TargetRegistry& registry,
                              const SizeLimits& limits) {
  CorpusEntry e = read_corpus_file(path, limits);
  try {
    registry.make(e.target, entry_options(e).first);  // an unknown target or option
  } catch (const InputError& err) {
    throw InputError(path + ": " + err.what());
  }
  return e;
}

ReplayOutcome replay_entry(const CorpusEntry& e, const TargetRegistry& registry,
                           const ReferenceModel& reference, bool keep_graphs, IsolatedCases* isolated) {
  auto [target_options, opt] = entry_options(e);
  opt.keep_graphs = keep_graphs;
  auto target = registry.make(e.target, target_options);
  ReplayOutcome o;
  if (isolated) {
    o.result = isolated->run(e.target, target->options(), e.c, opt);
    if (isolated->last_died())
      for (auto& f : o.result.findings) f.failure_class = target->failure_class(e.c);
  } else {
    o.result = run_case(*target, reference, e.c, opt);
  }
  o.expected = e.expect;
  o.observed = verdict_name(o.result.verdict);
  if (o.observed == o.expected) o.status = ReplayStatus::as_expected;
  else if (o.expected == "pass") o.status = ReplayStatus::regression;
  else if (o.observed == "pass") o.status = ReplayStatus::fixed;
  else o.status = ReplayStatus::changed;
  o.finding_changes = finding_changes(e.finding, o.result);
  if (o.status == ReplayStatus::as_expected && !o.finding_changes.empty()) o.status = ReplayStatus::changed;
  return o;
}

std::vector<std::string> finding_changes(const nlohmann::json& recorded, const CaseResult& observed) {
  std::vector<std::string> out;
  if (!recorded.is_object()) return out;
  const Finding* f = observed.primary();
  auto compare = [&](const char* field, const std::string& now) {
    auto it = recorded.find(field);
    const bool implied_exact = std::string(field) == "kernel_set" && recorded.contains("check");
    if (it == recorded.end() && !implied_exact) return;
    const std::string was = it == recorded.end() ? "" : it->is_string() ? it->get<std::string>() : it->dump();
    if (was != now)
      out.push_back(std::string(field) + ": recorded " + (was.empty() ? "(none)" : "'" + was + "'") + ", observed " +
                    (now.empty() ? "(none)" : "'" + now + "'"));
  };
  compare("verdict", verdict_name(observed.verdict));
  compare("check", f ? check_name(f->check) : "");
  compare("kernel_set", f ? f->kernel_set : "");
  compare("first_node", f ? f->first_node : "");
  return out;
}

ReplayTally replay_files(const std::vector<std::string>& files, const TargetRegistry& registry,
                         const ReferenceModel& reference, const SizeLimits& limits, bool keep_graphs,
                         const std::function<void(const std::string&, const ReplayOutcome*,
                                                  const std::string&)>& report,
                         IsolatedCases* isolated) {
  ReplayTally t;
  for (const auto& file : files) {
    ++t.files;
    try {
      CorpusEntry e = read_replay_entry(file, registry, limits);
      ReplayOutcome o;
      try {
        o = replay_entry(e, registry, reference, keep_graphs, isolated);
      } catch (const InputError& err) {
        throw InputError(file + ": " + err.what());
      }
      switch (o.status) {
        case ReplayStatus::as_expected: ++t.as_expected; break;
        case ReplayStatus::fixed: ++t.fixed; break;
        case ReplayStatus::regression: ++t.regressions; break;
        case ReplayStatus::changed: ++t.regressions, ++t.changed; break;
      }
      report(file, &o, "");
    } catch (const InputError& err) {
      ++t.invalid;
      report(file, nullptr, err.what());
    }
  }
  return t;
}

std::vector<std::string> collect_corpus_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& p : paths) {
    if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else if (fs::is_directory(p)) {
      for (const auto& entry : fs::recursive_directory_iterator(p))
        if (entry.is_regular_file() && entry.path().extension() == ".json")
          files.push_back(entry.path().string());
    } else {
      throw InputError(p + ": no such file or folder");
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace sdpa
