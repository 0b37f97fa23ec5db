#include "reports/run_merge.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "harness/case/case_json.h"
#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

std::string shard_name(int index, int shards) { return std::to_string(index) + "/" + std::to_string(shards); }

// Whether `y` holds every iteration `x` ran: the same shard of the same count
// (or the one shard of a whole campaign) run at least as far, per target.
bool holds_all(const RunRecord& y, const RunRecord& x) {
  const int nx = x.settings.shards, ny = y.settings.shards;
  for (const auto& [ix, targets] : x.held) {
    for (const auto& [target, next] : targets) {
      const int64_t last = next - nx;  // the last iteration x ran of this shard; < 0: none
      if (last < 0) continue;
      const int iy = ny == 1 ? 0 : ny == nx ? ix : -1;
      auto shard = y.held.find(iy);
      if (shard == y.held.end()) return false;
      auto run = shard->second.find(target);
      if (run == shard->second.end() || last >= run->second) return false;
    }
  }
  return true;
}

// The first shard index both hold, or -1: any shard meets the one shard of a whole campaign.
int shared_shard(const RunRecord& a, const RunRecord& b) {
  for (const auto& [i, _] : a.held) {
    if (b.settings.shards == 1 && !b.held.empty()) return i;
    if (a.settings.shards == 1 && !b.held.empty()) return b.held.begin()->first;
    if (a.settings.shards == b.settings.shards && b.held.count(i)) return i;
  }
  return -1;
}

void check_same_campaign(const RunRecord& a, const RunRecord& b) {
  auto differ = [&](const std::string& field, const std::string& va, const std::string& vb) {
    throw InputError("runs " + a.source + " and " + b.source + " are not shards of one campaign: " + field +
                     " is " + va + " in " + a.source + " and " + vb + " in " + b.source);
  };
  std::set<std::string> keys;
  for (const auto& [k, _] : a.agreed.items()) keys.insert(k);
  for (const auto& [k, _] : b.agreed.items()) keys.insert(k);
  for (const auto& k : keys) {
    nlohmann::json va = a.agreed.value(k, nlohmann::json()), vb = b.agreed.value(k, nlohmann::json());
    if (va != vb) differ(k, va.dump(), vb.dump());
  }
  const int na = a.settings.shards, nb = b.settings.shards;
  if (na != nb && na != 1 && nb != 1) differ("the shard count", std::to_string(na), std::to_string(nb));
}

// The input that stands for a set of equal inputs: the same bytes whichever order they come in.
std::string canonical(const RunRecord& r) { return run_summary(r.settings, r.runs, false).dump(); }

// The inputs no other input holds; of equal ones, one.
std::vector<const RunRecord*> uncontained(const std::vector<RunRecord>& inputs) {
  std::vector<std::string> keys;
  for (const auto& r : inputs) keys.push_back(canonical(r));
  std::vector<const RunRecord*> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool dropped = false;
    for (size_t j = 0; j < inputs.size() && !dropped; ++j) {
      if (j == i || !holds_all(inputs[j], inputs[i])) continue;
      const bool equal = holds_all(inputs[i], inputs[j]);
      dropped = !equal || std::tie(keys[j], j) < std::tie(keys[i], i);
    }
    if (!dropped) out.push_back(&inputs[i]);
  }
  return out;
}

void add_counts(std::map<std::string, int64_t>& into, const std::map<std::string, int64_t>& n) {
  for (const auto& [k, v] : n) into[k] += v;
}

// The finding a merge keeps of one signature: the smallest case, then the earliest.
bool better(const WrittenFinding& a, const WrittenFinding& b) {
  const int64_t ea = case_elements(a.shrunk), eb = case_elements(b.shrunk);
  if (ea != eb) return ea < eb;
  if (a.iteration != b.iteration) return a.iteration < b.iteration;
  return case_to_json(a.shrunk).dump() < case_to_json(b.shrunk).dump();
}

TargetRun sum_target(const std::string& target, const std::vector<const TargetRun*>& parts) {
  TargetRun out;
  out.target = target;
  out.options = parts.front()->options;
  std::map<std::string, WrittenFinding> kept;  // signature -> finding
  int64_t failures = 0;                        // recorded or duplicate, over every part
  for (const TargetRun* r : parts) {
    out.cases += r->cases;
    add_counts(out.verdicts, r->verdicts);
    add_counts(out.guard_rules, r->guard_rules);
    add_counts(out.missed_rules, r->missed_rules);
    add_counts(out.refuted_rules, r->refuted_rules);
    for (const auto& [name, v] : r->variants) {
      VariantRun& into = out.variants[name];
      into.cases += v.cases;
      add_counts(into.verdicts, v.verdicts);
      add_counts(into.counters, v.counters);
    }
    for (const auto& w : r->findings) {
      auto [it, fresh] = kept.emplace(w.signature, w);
      if (!fresh && better(w, it->second)) it->second = w;
    }
    failures += r->duplicates + static_cast<int64_t>(r->findings.size());
    out.worker_deaths += r->worker_deaths;
    out.iteration_digest += r->iteration_digest;  // disjoint parts: the whole's sum
    // The merge ran up to where its least advanced part stopped.
    out.next_iteration = r == parts.front() ? r->next_iteration : std::min(out.next_iteration, r->next_iteration);
    out.crash_files.insert(out.crash_files.end(), r->crash_files.begin(), r->crash_files.end());
    out.timing += r->timing;
    out.seconds += r->seconds;
  }
  for (auto& [_, w] : kept) out.findings.push_back(std::move(w));
  // A campaign run whole records its findings as it meets them.
  std::sort(out.findings.begin(), out.findings.end(),
            [](const WrittenFinding& a, const WrittenFinding& b) { return a.iteration < b.iteration; });
  out.duplicates = failures - static_cast<int64_t>(out.findings.size());
  return out;
}

// Every shard of the count, each run to the end of every target.
bool whole(const RunRecord& r, const std::vector<std::string>& targets) {
  for (int i = 0; i < r.settings.shards; ++i) {
    auto shard = r.held.find(i);
    if (shard == r.held.end()) return false;
    for (const auto& t : targets) {
      auto it = shard->second.find(t);
      if (it == shard->second.end() || it->second < r.settings.cases) return false;
    }
  }
  return true;
}

}  // namespace

int64_t next_iteration_after(int index, int shards, int64_t cases) { return index + cases * shards; }

int64_t case_elements(const Case& c) {
  int64_t n = 0;
  for (const auto& at : c.runs()) {
    ConcreteSizes s = concrete_sizes(c, at);
    int64_t mask = s.mask_shape.empty() ? 0 : 1;
    for (int64_t d : s.mask_shape) mask *= d;
    n += s.batch_numel() * (s.Hq * s.Lq * s.E + s.Hkv * s.Lkv * (s.E + s.Ev)) + mask;
  }
  return n;
}

RunRecord merge_runs(const std::vector<RunRecord>& inputs) {
  if (inputs.empty()) throw InputError("merge: no run folder given");
  for (size_t i = 1; i < inputs.size(); ++i) check_same_campaign(inputs[0], inputs[i]);
  std::vector<const RunRecord*> parts = uncontained(inputs);
  for (size_t i = 0; i < parts.size(); ++i)
    for (size_t j = i + 1; j < parts.size(); ++j)
      if (int s = shared_shard(*parts[i], *parts[j]); s >= 0)
        throw InputError("runs " + parts[i]->source + " and " + parts[j]->source + " both hold iterations of shard " +
                         shard_name(s, std::max(parts[i]->settings.shards, parts[j]->settings.shards)) +
                         " and neither holds all of the other's: merge each shard's run once");
  if (parts.size() == 1) return *parts[0];

  RunRecord out = *parts[0];
  out.source = "merge";
  out.runs.clear();
  out.stats.clear();
  out.held.clear();
  out.settings.shard_source.clear();
  for (const RunRecord* p : parts) {
    out.held.insert(p->held.begin(), p->held.end());
    out.has_stats = out.has_stats && p->has_stats;
  }
  std::vector<std::string> targets = out.agreed.value("targets", std::vector<std::string>());
  for (const auto& t : targets) {
    std::vector<const TargetRun*> runs;
    for (const RunRecord* p : parts)
      for (const auto& r : p->runs)
        if (r.target == t) runs.push_back(&r);
    if (!runs.empty()) out.runs.push_back(sum_target(t, runs));
    for (const RunRecord* p : parts)
      if (auto it = p->stats.find(t); it != p->stats.end()) out.stats[t].merge(it->second);
  }
  if (!out.has_stats) out.stats.clear();
  out.settings.shard_set.clear();
  if (whole(out, targets)) {
    out.settings.shard = 0;
    out.settings.shards = 1;
    std::map<std::string, int64_t> all;
    for (const auto& t : targets) all[t] = out.settings.cases;
    out.held = {{0, all}};
  } else {
    for (const auto& [i, _] : out.held) out.settings.shard_set.push_back(i);
  }
  return out;
}

}  // namespace sdpa
