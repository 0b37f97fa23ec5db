#include "harness/campaign/gate.h"

#include <cstdint>
#include <optional>
#include <set>
#include <tuple>


#include "harness/case/case_json.h"
#include "harness/case/case_validate.h"
#include "harness/check/check.h"
#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

// Every decision of a case's result, with whether that node's rewrite alone
// (forced where the guard kept it) is sound, as the checker's completeness
// stage established: accepted nodes are proven as kept ones are, so that a
// rewrite unsound only at a size no runtime entry tried is unsound in the
// base as well as kept in the head. A case with no decision gives one
// whole-case entry: "no-decision" (its passes matched nothing),
// "pass-raised" or "process-died".
std::vector<GateDecision> decide(const Target& target, const ReferenceModel& reference, const Case& c,
                                 int64_t index, IsolatedCases* isolated) {
  CheckOptions options;
  options.prove_accepted = true;
  CaseResult r = isolated ? isolated->run(target.name(), target.options(), c, options)
                          : run_case(target, reference, c, options);
  std::vector<GateDecision> out;
  for (const auto& dec : r.decisions) {
    GateDecision d;
    d.index = index;
    d.c = c;
    d.pass = dec.pass;
    d.node = dec.node;
    d.rewrite = dec.rewrite;
    d.rule = dec.rewrite ? "accept" : dec.deciding_rule;
    d.sound = dec.sound_alone;
    d.refuted_at = dec.refuted_at;
    d.verdict = verdict_name(r.verdict);
    out.push_back(std::move(d));
  }
  if (out.empty()) {
    GateDecision d;
    d.index = index;
    d.c = c;
    d.rule = "no-decision";
    d.verdict = verdict_name(r.verdict);
    // A pass that raised decided nothing: the call fails to compile, which
    // the gate counts as an unsound rewrite, never as a kept node. So does a
    // case whose process died (a crash, timeout or oom with no decision: an
    // adapter pass that dies, or a worker killed), so that a head that kills
    // it fails the gate.
    for (const auto& f : r.findings)
      if (f.check == Check::robustness && f.verdict == Verdict::unexpected_error) {
        d.rewrite = true;
        d.rule = "pass-raised";
      }
    if (r.verdict == Verdict::crash || r.verdict == Verdict::timeout || r.verdict == Verdict::oom) {
      d.rewrite = true;
      d.rule = "process-died";
    }
    out.push_back(std::move(d));
  }
  return out;
}

void append(std::vector<GateDecision>& to, std::vector<GateDecision> more) {
  for (auto& d : more) to.push_back(std::move(d));
}

size_t by_index_count(const DecisionsFile& f) {
  std::set<int64_t> indices;
  for (const auto& d : f.decisions) indices.insert(d.index);
  return indices.size();
}

int64_t case_size(const Case& c) {
  const Assignment at = c.runs()[0];
  return numel_of(eval_shape(query_shape(c), at)) + numel_of(eval_shape(key_shape(c), at)) +
         numel_of(eval_shape(value_shape(c), at)) + static_cast<int64_t>(c.symbols.size());
}

}  // namespace

DecisionsFile record_decisions(const Target& target, const ReferenceModel& reference,
                               const CaseGeneratorFactory& generators, uint64_t seed, int64_t cases,
                               int max_size, IsolatedCases* isolated) {
  DecisionsFile out{target.name(), target.options(), seed, max_size, {}};
  rc::Gen<Case> gen = generators(target.case_space());
  for (int64_t i = 0; i < cases; ++i) {
    Case c = gen(rc::Random(case_seed(seed, target.name(), i)), static_cast<int>(i % (max_size + 1))).value();
    append(out.decisions, decide(target, reference, c, i, isolated));
  }
  return out;
}

DecisionsFile record_decisions_on(const Target& target, const ReferenceModel& reference,
                                  const DecisionsFile& sample, IsolatedCases* isolated) {
  DecisionsFile out{target.name(), target.options(), sample.seed, sample.max_size, {}};
  for (size_t i = 0; i < sample.decisions.size(); ++i)
    if (i == 0 || sample.decisions[i].index != sample.decisions[i - 1].index)
      append(out.decisions,
             decide(target, reference, sample.decisions[i].c, sample.decisions[i].index, isolated));
  return out;
}

nlohmann::json decisions_to_json(const DecisionsFile& d) {
  nlohmann::json j;
  j["format"] = kDecisionsFormat;
  j["target"] = d.target;
  j["options"] = d.options;
  j["seed"] = d.seed;
  j["max_size"] = d.max_size;
  j["decisions"] = nlohmann::json::array();
  for (const auto& x : d.decisions) {
    nlohmann::json one = {{"index", x.index}, {"case", case_to_json(x.c)}, {"pass", x.pass},
                          {"node", x.node},   {"rewrite", x.rewrite},      {"rule", x.rule},
                          {"sound", x.sound}, {"verdict", x.verdict}};
    if (!x.refuted_at.empty()) one["refuted_at"] = x.refuted_at;
    j["decisions"].push_back(std::move(one));
  }
  return j;
}

DecisionsFile decisions_from_json(const nlohmann::json& j, const std::string& source) {
  try {
    JsonObject o(j, "");
    DecisionsFile d;
    std::string format = o.str("format");
    if (format != kDecisionsFormat)
      o.fail("format", std::string("expected \"") + kDecisionsFormat + "\", got \"" + format + "\"");
    d.target = o.str("target");
    const auto& opts = o.require("options");
    if (!opts.is_object()) o.fail("options", "expected an object, got " + json_kind(opts));
    for (const auto& [k, v] : opts.items()) {
      if (!v.is_string()) o.fail("options." + k, "expected a string, got " + json_kind(v));
      d.options[k] = v.get<std::string>();
    }
    // Range-checked before the casts: a negative seed or a max_size beyond
    // int must not wrap into another sample's parameters.
    const int64_t seed = o.integer("seed");
    if (seed < 0) o.fail("seed", "expected an integer >= 0, got " + std::to_string(seed));
    d.seed = static_cast<uint64_t>(seed);
    const int64_t max_size = o.integer("max_size");
    if (max_size < 0 || max_size > INT32_MAX)
      o.fail("max_size", "expected an integer in [0, 2^31), got " + std::to_string(max_size));
    d.max_size = static_cast<int>(max_size);
    const auto& list = o.require("decisions");
    if (!list.is_array()) o.fail("decisions", "expected a list, got " + json_kind(list));
    // An empty sample would compare nothing and pass the gate.
    if (list.empty()) o.fail("decisions", "expected at least one decision, got an empty list");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string path = "decisions[" + std::to_string(i) + "]";
      JsonObject x(list[i], path);
      GateDecision g;
      g.index = x.integer("index");
      if (g.index < 0) x.fail("index", "expected a sample index >= 0, got " + std::to_string(g.index));
      g.c = case_from_json(x.require("case"), path + ".case");
      validate_case(g.c, {}, path + ".case");
      // pass and node: optional, so files written before they existed still read.
      if (x.find("pass")) g.pass = x.str("pass");
      if (x.find("node")) g.node = x.str("node");
      g.rewrite = x.boolean("rewrite");
      g.rule = x.str("rule");
      if (g.rule.empty()) x.fail("rule", "expected the deciding rule, \"accept\" or \"no-decision\", got \"\"");
      g.sound = x.boolean("sound");
      // Optional: written only where the proof refuted the rewrite.
      if (x.find("refuted_at")) g.refuted_at = x.str("refuted_at");
      g.verdict = x.str("verdict");
      if (!parse_verdict(g.verdict)) x.fail("verdict", "\"" + g.verdict + "\" is not a verdict name");
      x.reject_unknown();
      d.decisions.push_back(std::move(g));
    }
    o.reject_unknown();
    return d;
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
}

DecisionsFile read_decisions_file(const std::string& path) {
  return decisions_from_json(read_json_file(path), path);
}

const char* gate_class_name(GateClass c) {
  switch (c) {
    case GateClass::newly_unsound: return "newly unsound";
    case GateClass::newly_missed: return "newly missed";
    case GateClass::unsound_fixed: return "unsound fixed";
    case GateClass::newly_rewritten_sound: return "newly rewritten and sound";
  }
  return "?";
}

std::vector<GateClass> gate_classes() {
  return {GateClass::newly_unsound, GateClass::newly_missed, GateClass::unsound_fixed,
          GateClass::newly_rewritten_sound};
}

namespace {

using NodeKey = std::tuple<int64_t, std::string, std::string>;  // sample index, pass, node

std::map<NodeKey, const GateDecision*> by_node(const DecisionsFile& f) {
  std::map<NodeKey, const GateDecision*> out;
  for (const auto& d : f.decisions) out[{d.index, d.pass, d.node}] = &d;
  return out;
}

// The case verdict of each sample index (every decision of a case carries it).
std::map<int64_t, std::string> case_verdicts(const DecisionsFile& f) {
  std::map<int64_t, std::string> out;
  for (const auto& d : f.decisions) out[d.index] = d.verdict;
  return out;
}

// A decision one policy has and the other lacks (its pass matched nothing
// or raised there): kept, unsound; its verdict is that policy's own for the case.
GateDecision absent(const GateDecision& other, const std::map<int64_t, std::string>& verdicts) {
  GateDecision d = other;
  d.rewrite = false;
  d.sound = false;
  d.rule = "no-decision";
  auto it = verdicts.find(d.index);
  if (it != verdicts.end()) d.verdict = it->second;
  return d;
}

// A record of a case where a policy decided on no node (decide(): its
// passes matched nothing, one raised, or the case's process died).
bool whole_case(const GateDecision& d) {
  return d.rule == "no-decision" || d.rule == "pass-raised" || d.rule == "process-died";
}

// The whole-case records, by sample index.
std::map<int64_t, const GateDecision*> whole_case_records(const DecisionsFile& f) {
  std::map<int64_t, const GateDecision*> out;
  for (const auto& d : f.decisions)
    if (whole_case(d)) out[d.index] = &d;
  return out;
}

bool decided_on_nodes(const std::map<NodeKey, const GateDecision*>& other, int64_t index) {
  for (auto it = other.lower_bound({index, "", ""}); it != other.end() && std::get<0>(it->first) == index; ++it)
    if (!std::get<2>(it->first).empty()) return true;
  return false;
}

// A whole-case record in the place of the other policy's decision on a node:
// a raised pass or a dead process is an unsound rewrite there, no decision
// a kept node.
GateDecision stand_in(const GateDecision& whole, const GateDecision& other) {
  GateDecision d = whole;
  d.pass = other.pass;
  d.node = other.node;
  return d;
}

std::optional<GateClass> classify(const GateDecision& b, const GateDecision& h) {
  if (h.unsound() && !b.unsound()) return GateClass::newly_unsound;
  if (b.unsound() && !h.unsound()) return GateClass::unsound_fixed;
  if (h.missed() && b.rewrite) return GateClass::newly_missed;
  if (h.rewrite && h.sound && !b.rewrite) return GateClass::newly_rewritten_sound;
  return std::nullopt;
}

}  // namespace

GateComparison compare_decisions(const DecisionsFile& base, const DecisionsFile& head) {
  auto b = by_node(base), h = by_node(head);
  std::map<int64_t, const Case*> cases;
  for (const auto& d : base.decisions) cases[d.index] = &d.c;
  for (const auto& d : head.decisions) {
    auto it = cases.find(d.index);
    if (it == cases.end() || case_to_json(*it->second) != case_to_json(d.c))
      throw InputError("decision " + std::to_string(d.index) + " is about another case in the two samples");
  }
  if (cases.size() != by_index_count(head))
    throw InputError("the two decision samples differ in size (" + std::to_string(cases.size()) + " and " +
                     std::to_string(by_index_count(head)) + " cases)");
  std::map<NodeKey, std::pair<const GateDecision*, const GateDecision*>> pairs;
  for (const auto& [k, d] : b) pairs[k].first = d;
  for (const auto& [k, d] : h) pairs[k].second = d;
  const auto base_verdicts = case_verdicts(base), head_verdicts = case_verdicts(head);
  const auto base_whole = whole_case_records(base), head_whole = whole_case_records(head);
  GateComparison cmp;
  for (GateClass c : gate_classes()) cmp.changes[c];
  cmp.cases = static_cast<int64_t>(cases.size());
  for (const auto& [key, pair] : pairs) {
    // A whole-case record stands in for each node the other policy decided
    // on, so it is compared there and not again on its own.
    const int64_t index = std::get<0>(key);
    const GateDecision* alone = pair.second ? (pair.first ? nullptr : pair.second) : pair.first;
    if (alone && whole_case(*alone) && decided_on_nodes(pair.first ? h : b, index)) continue;
    const GateDecision bd = pair.first    ? *pair.first
                            : base_whole.count(index) ? stand_in(*base_whole.at(index), *pair.second)
                                                      : absent(*pair.second, base_verdicts);
    const GateDecision hd = pair.second   ? *pair.second
                            : head_whole.count(index) ? stand_in(*head_whole.at(index), *pair.first)
                                                      : absent(*pair.first, head_verdicts);
    ++cmp.decisions;
    cmp.base_refuted += !bd.refuted_at.empty();
    cmp.head_refuted += !hd.refuted_at.empty();
    if (auto cls = classify(bd, hd)) {
      cmp.changes[*cls].push_back({bd, hd});
      continue;
    }
    ++cmp.unchanged;
    if (hd.unsound()) ++cmp.still_unsound;
    if (hd.unsound() && bd.verdict != hd.verdict) cmp.verdict_changed.push_back({bd, hd});
    if (hd.missed()) ++cmp.still_missed;
  }
  return cmp;
}

const GateChange* smallest(const std::vector<GateChange>& changes) {
  const GateChange* best = nullptr;
  for (const auto& ch : changes)
    if (!best || case_size(ch.head.c) < case_size(best->head.c)) best = &ch;
  return best;
}

const GateChange* example(GateClass cls, const std::vector<GateChange>& changes) {
  if (cls != GateClass::newly_unsound) return smallest(changes);
  // Tier 0: the head's case ends in a finding the base's did not end in;
  // 1: in a finding; 2: any. The smallest case of the lowest tier.
  const auto tier = [](const GateChange& ch) {
    const auto v = parse_verdict(ch.head.verdict);
    if (!v || !is_failure(*v)) return 2;
    return ch.head.verdict == ch.base.verdict ? 1 : 0;
  };
  const GateChange* best = nullptr;
  for (const auto& ch : changes)
    if (!best || tier(ch) < tier(*best) ||
        (tier(ch) == tier(*best) && case_size(ch.head.c) < case_size(best->head.c)))
      best = &ch;
  return best;
}

}  // namespace sdpa
