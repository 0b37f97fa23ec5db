#include "harness/check/case_checker.h"

namespace sdpa {

namespace check_internal {

// For each pass whose guard kept a node: is the forced rewrite sound at
// every runtime size? Then the guard is too tight (missed-rewrite).
// Each kept node is forced on its own (the other passes and nodes follow
// their guards), then every kept node together: a forced rewrite that
// refines the entry graph at every runtime size tried is a missed rewrite.
void CaseChecker::completeness(const Graph& g0, bool case_sound) {
  Controls all;
  int kept = 0;
  for (size_t d = 0; d < result_.decisions.size(); ++d) {
    const Decision& dec = result_.decisions[d];
    if (dec.rewrite) continue;
    ++kept;
    all[decision_pass_[d]].forced.insert(dec.node);
    RewriteControl alone;
    alone.forced.insert(dec.node);
    const bool sound = forced_sound(g0, {{decision_pass_[d], alone}});
    result_.decisions[d].sound_alone = sound;
    if (sound)
      result_.findings.push_back(finding(
          Verdict::missed_rewrite, Check::completeness,
          "guard kept " + dec.node + " (pass " + dec.pass + ", rule " + dec.deciding_rule +
              "), but its forced rewrite is sound at every runtime size tried"));
  }
  attribute_accepted(g0, case_sound);
  if (kept > 1 && forced_sound(g0, all))
    result_.findings.push_back(finding(Verdict::missed_rewrite, Check::completeness,
                                       "all " + std::to_string(kept) +
                                           " kept nodes forced together: sound at every runtime size tried"));
}

// Whether each accepted node's rewrite is sound on its own: the case's
// soundness verdict when it is the only decision, else the rewrite of
// that node alone with every other node held (so the gate can sort
// decisions node by node).
void CaseChecker::attribute_accepted(const Graph& g0, bool case_sound) {
  auto& ds = result_.decisions;
  for (size_t d = 0; d < ds.size(); ++d) {
    if (!ds[d].rewrite) continue;
    if (ds.size() == 1) {
      ds[d].sound_alone = case_sound;
      continue;
    }
    Controls alone;
    for (size_t o = 0; o < ds.size(); ++o)
      if (o != d) alone[decision_pass_[o]].held.insert(ds[o].node);
    ds[d].sound_alone = forced_sound(g0, alone);
  }
}

bool CaseChecker::forced_sound(const Graph& g0, const Controls& controls) {
  std::optional<Graph> forced = apply_passes(g0, controls, nullptr);
  return forced && refines(g0, *forced);
}

}  // namespace check_internal

}  // namespace sdpa
