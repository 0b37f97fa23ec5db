#include "harness/campaign/replay.h"

#include <algorithm>
#include <filesystem>
#include <new>

#include "harness/adapter/adapter_option.h"
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

void refuse_adapter_programs(const Options& options) {
  for (const auto& [key, value] : options)
    if (names_adapter(value))
      throw InputError("options." + key + ": '" + value +
                       "' names a program that running this file would start; pass --allow-adapters to run the "
                       "programs named in files you trust");
}

CorpusEntry read_replay_entry(const std::string& path, const TargetRegistry& registry,
                              const CorpusReading& reading) {
  CorpusEntry e = read_corpus_file(path, reading.limits);
  try {
    if (!reading.allow_adapters) refuse_adapter_programs(e.options);
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
                         const ReferenceModel& reference, const CorpusReading& reading, bool keep_graphs,
                         const ReplayReport& report, IsolatedCases* isolated) {
  ReplayTally t;
  for (const auto& file : files) {
    ++t.files;
    try {
      CorpusEntry e = read_replay_entry(file, registry, reading);
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
    } catch (const std::bad_alloc&) {
      // One case too large for this process's memory (--in-process, or a
      // limit raised past the machine) ends that file, not the replay.
      ++t.invalid;
      report(file, nullptr, file + ": not enough memory to replay it (a smaller --max-elements refuses it up front)");
    }
  }
  return t;
}

namespace {

namespace fs = std::filesystem;

// Folders under a corpus folder nest no deeper than this: the walk recurses.
constexpr int kMaxCorpusDepth = 64;

// Why `status` is not a file replay can read, or "" when it is one.
std::string not_a_file(const fs::file_status& status) {
  if (fs::is_regular_file(status)) return "";
  if (status.type() == fs::file_type::not_found) return "a link to nothing";
  return "not a regular file";
}

// The *.json files under `dir`, depth first. A symbolic link to a folder is
// not followed; an entry that cannot be read (a folder without permission,
// a link loop, a FIFO named *.json) is a problem, and the walk goes on.
void walk_corpus_folder(const fs::path& dir, int depth, std::vector<std::string>& files,
                        std::vector<CorpusProblem>& problems) {
  if (depth > kMaxCorpusDepth) {
    problems.push_back({dir.string(), "folders nested deeper than " + std::to_string(kMaxCorpusDepth) + " levels"});
    return;
  }
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path path = it->path();
    std::error_code entry_ec;
    if (fs::is_directory(it->symlink_status(entry_ec))) {
      walk_corpus_folder(path, depth + 1, files, problems);
      continue;
    }
    if (path.extension() != ".json") continue;
    const fs::file_status status = fs::status(path, entry_ec);
    const std::string why = entry_ec && entry_ec != std::errc::no_such_file_or_directory
                                ? "cannot read: " + entry_ec.message()
                                : not_a_file(status);
    if (why.empty()) files.push_back(path.string());
    else problems.push_back({path.string(), why});
  }
  if (ec) problems.push_back({dir.string(), "cannot read folder: " + ec.message()});
}

}  // namespace

std::vector<std::string> collect_corpus_files(const std::vector<std::string>& paths,
                                              std::vector<CorpusProblem>* problems, bool refuse_empty_folders) {
  std::vector<std::string> files;
  std::vector<CorpusProblem> found;
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::file_status status = fs::status(p, ec);
    if (fs::is_regular_file(status)) {
      files.push_back(p);
    } else if (fs::is_directory(status)) {
      const size_t before = files.size(), problems_before = found.size();
      walk_corpus_folder(p, 0, files, found);
      if (refuse_empty_folders && files.size() == before && found.size() == problems_before)
        throw InputError("no corpus files found in " + p + " (expected *.json files in it or below it)");
    } else if (status.type() == fs::file_type::not_found) {
      throw InputError(p + ": no such file or folder");
    } else {
      found.push_back({p, ec ? "cannot read: " + ec.message() : "not a regular file"});
    }
  }
  if (!problems && !found.empty()) throw InputError(found.front().path + ": " + found.front().error);
  if (problems) *problems = found;
  std::sort(files.begin(), files.end());
  return files;
}

void report_corpus_problems(const std::vector<CorpusProblem>& problems, const ReplayReport& report, ReplayTally& t) {
  for (const auto& p : problems) {
    ++t.files;
    ++t.invalid;
    report(p.path, nullptr, p.path + ": " + p.error);
  }
}

}  // namespace sdpa
