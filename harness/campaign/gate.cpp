#include "harness/campaign/gate.h"


#include "harness/case/case_json.h"
#include "harness/case/case_validate.h"
#include "harness/check/check.h"
#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

// A decision from a case's result: the guard's choice and whether the
// rewrite (or, where kept, the forced rewrite the completeness check ran)
// is sound. A pass that raised keeps nothing sound.
GateDecision decide(const Target& target, const ReferenceModel& reference, const Case& c, int64_t index) {
  CaseResult r = run_case(target, reference, c);
  GateDecision d;
  d.index = index;
  d.c = c;
  d.verdict = verdict_name(r.verdict);
  d.rewrite = !r.decisions.empty();
  d.rule = "accept";
  for (const auto& dec : r.decisions)
    if (!dec.rewrite) {
      d.rewrite = false;
      d.rule = dec.deciding_rule;
      break;
    }
  if (r.decisions.empty()) d.rule = "no-decision";
  bool soundness_failed = false;
  for (const auto& f : r.findings)
    soundness_failed = soundness_failed || (is_failure(f.verdict) && (f.check == Check::soundness ||
                                                                       f.check == Check::robustness));
  d.sound = d.rewrite ? !soundness_failed : r.verdict == Verdict::missed_rewrite;
  return d;
}

int64_t case_size(const Case& c) {
  const Assignment at = c.runs()[0];
  return numel_of(eval_shape(query_shape(c), at)) + numel_of(eval_shape(key_shape(c), at)) +
         numel_of(eval_shape(value_shape(c), at)) + static_cast<int64_t>(c.symbols.size());
}

}  // namespace

DecisionsFile record_decisions(const Target& target, const ReferenceModel& reference,
                               const CaseGeneratorFactory& generators, uint64_t seed, int64_t cases,
                               int max_size) {
  DecisionsFile out{target.name(), target.options(), seed, max_size, {}};
  rc::Gen<Case> gen = generators(target.case_space());
  for (int64_t i = 0; i < cases; ++i) {
    Case c = gen(rc::Random(case_seed(seed, target.name(), i)), static_cast<int>(i % (max_size + 1))).value();
    out.decisions.push_back(decide(target, reference, c, i));
  }
  return out;
}

DecisionsFile record_decisions_on(const Target& target, const ReferenceModel& reference,
                                  const DecisionsFile& sample) {
  DecisionsFile out{target.name(), target.options(), sample.seed, sample.max_size, {}};
  for (const auto& d : sample.decisions) out.decisions.push_back(decide(target, reference, d.c, d.index));
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
  for (const auto& x : d.decisions)
    j["decisions"].push_back({{"index", x.index}, {"case", case_to_json(x.c)}, {"rewrite", x.rewrite},
                              {"rule", x.rule}, {"sound", x.sound}, {"verdict", x.verdict}});
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
    d.seed = static_cast<uint64_t>(o.integer("seed"));
    d.max_size = static_cast<int>(o.integer("max_size"));
    const auto& list = o.require("decisions");
    if (!list.is_array()) o.fail("decisions", "expected a list, got " + json_kind(list));
    for (size_t i = 0; i < list.size(); ++i) {
      std::string path = "decisions[" + std::to_string(i) + "]";
      JsonObject x(list[i], path);
      GateDecision g;
      g.index = x.integer("index");
      g.c = case_from_json(x.require("case"), path + ".case");
      validate_case(g.c, {}, path + ".case");
      g.rewrite = x.boolean("rewrite");
      g.rule = x.str("rule");
      g.sound = x.boolean("sound");
      g.verdict = x.str("verdict");
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

GateComparison compare_decisions(const DecisionsFile& base, const DecisionsFile& head) {
  if (base.decisions.size() != head.decisions.size())
    throw InputError("the two decision samples differ in size (" + std::to_string(base.decisions.size()) +
                     " and " + std::to_string(head.decisions.size()) + " cases)");
  GateComparison cmp;
  for (GateClass c : gate_classes()) cmp.changes[c];
  for (size_t i = 0; i < base.decisions.size(); ++i) {
    const GateDecision &b = base.decisions[i], &h = head.decisions[i];
    if (b.index != h.index || case_to_json(b.c) != case_to_json(h.c))
      throw InputError("decision " + std::to_string(i) + " is about another case in the two samples");
    ++cmp.cases;
    std::optional<GateClass> cls;
    if (h.unsound() && !b.unsound()) cls = GateClass::newly_unsound;
    else if (b.unsound() && !h.unsound()) cls = GateClass::unsound_fixed;
    else if (h.missed() && b.rewrite) cls = GateClass::newly_missed;
    else if (h.rewrite && h.sound && !b.rewrite) cls = GateClass::newly_rewritten_sound;
    if (cls) {
      cmp.changes[*cls].push_back({b, h});
      continue;
    }
    ++cmp.unchanged;
    if (h.unsound()) ++cmp.still_unsound;
    if (h.missed()) ++cmp.still_missed;
  }
  return cmp;
}

const GateChange* smallest(const std::vector<GateChange>& changes) {
  const GateChange* best = nullptr;
  for (const auto& ch : changes)
    if (!best || case_size(ch.head.c) < case_size(best->head.c)) best = &ch;
  return best;
}

}  // namespace sdpa
