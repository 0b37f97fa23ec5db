#include "harness/check/case_checker.h"

namespace sdpa {

namespace check_internal {

// For each pass whose guard kept a node: is the forced rewrite sound at
// every size the symbols allow? Then the guard is too tight
// (missed-rewrite). Each kept node is forced on its own (the other passes
// and nodes follow their guards), then every kept node together.
void CaseChecker::completeness(const Graph& g0, const Graph& g1, bool case_sound) {
  Controls all;
  int kept = 0;
  for (size_t d = 0; d < result_.decisions.size(); ++d) {
    const Decision& dec = result_.decisions[d];
    if (dec.rewrite) continue;
    ++kept;
    all[decision_pass_[d]].forced.insert(dec.node);
    RewriteControl alone;
    alone.forced.insert(dec.node);
    const bool sound = forced_sound(g0, {{decision_pass_[d], alone}}, true, &result_.decisions[d]);
    result_.decisions[d].sound_alone = sound;
    if (sound)
      result_.findings.push_back(finding(Verdict::missed_rewrite, Check::completeness,
                                         "guard kept " + dec.node + " (pass " + dec.pass + ", rule " +
                                             dec.deciding_rule + "), but its forced rewrite is sound at every " +
                                             "runtime size, " + proof_words()));
  }
  attribute_accepted(g0, g1, case_sound);
  if (kept > 1 && forced_sound(g0, all, true, nullptr))
    result_.findings.push_back(finding(Verdict::missed_rewrite, Check::completeness,
                                       "all " + std::to_string(kept) + " kept nodes forced together: sound at "
                                       "every runtime size, " + proof_words()));
}

// Whether each accepted node's rewrite is sound on its own: the case's
// soundness verdict when it is the only decision, else the rewrite of
// that node alone with every other node held (so the gate can sort
// decisions node by node); with prove_accepted, proven as a forced one.
void CaseChecker::attribute_accepted(const Graph& g0, const Graph& g1, bool case_sound) {
  auto& ds = result_.decisions;
  for (size_t d = 0; d < ds.size(); ++d) {
    if (!ds[d].rewrite) continue;
    if (ds.size() == 1) {
      ds[d].sound_alone = case_sound && (!opt_.prove_accepted || proven(g0, g1, &ds[d]));
      continue;
    }
    Controls alone;
    for (size_t o = 0; o < ds.size(); ++o)
      if (o != d) alone[decision_pass_[o]].held.insert(ds[o].node);
    ds[d].sound_alone = forced_sound(g0, alone, opt_.prove_accepted, &ds[d]);
  }
}

bool CaseChecker::forced_sound(const Graph& g0, const Controls& controls, bool prove, Decision* d) {
  std::optional<Graph> forced = apply_passes(g0, controls, nullptr);
  if (!forced || !refines(g0, *forced)) return false;
  return !prove || proven(g0, *forced, d);
}

// g refines g0 at every runtime size already: the proof decides.
bool CaseChecker::proven(const Graph& g0, const Graph& g, Decision* d) {
  std::optional<std::string> at = refutation(g0, g);
  if (at && d) d->refuted_at = *at;
  return !at;
}

std::optional<std::string> CaseChecker::refutation(const Graph& g0, const Graph& g) {
  build_proof();
  for (ProofRun& p : proof_) {
    if (!prepare_proof_run(g0, p)) continue;
    const bool holds = refines_at(g, p);
    if (!holds) return proof_run_str(p);
    keep_or_release(p);
  }
  return std::nullopt;
}

void CaseChecker::keep_or_release(ProofRun& p) {
  constexpr int64_t kKeptElements = int64_t{1} << 22;
  if (p.kept) return;
  int64_t n = p.tensors.q.numel() + p.tensors.k.numel() + p.tensors.v.numel() + p.entry_ref.out.numel() +
              (p.tensors.mask ? p.tensors.mask->numel() : 0);
  for (const auto& [name, t] : p.inputs) n += t.numel();
  if (proof_kept_elements_ + n <= kKeptElements) {
    proof_kept_elements_ += n;
    p.kept = true;
    return;
  }
  p = ProofRun{p.at, p.why, p.second_draw};
}

// On the case's data at each proof size, then on the second draw at the
// runtime sizes and at each proof size. Built on first use: most kept
// nodes fail at a runtime size and never need it.
void CaseChecker::build_proof() {
  if (proof_built_) return;
  proof_built_ = true;
  const std::vector<ProofSize> sizes = proof_sizes(c_);
  for (const auto& s : sizes) proof_.push_back({s.at, s.why});
  if (target_.rewrite_fits_case_data()) return;
  for (size_t r = 0; r < runs_.size(); ++r) {
    ProofRun p{runs_[r], c_.runtime.empty() ? "the case's sizes" : "runtime[" + std::to_string(r) + "]"};
    p.second_draw = true;
    proof_.push_back(std::move(p));
  }
  for (const auto& s : sizes) {
    ProofRun p{s.at, s.why};
    p.second_draw = true;
    proof_.push_back(std::move(p));
  }
}

const CaseChecker::SecondDraw& CaseChecker::second() {
  if (!second_) {
    Case c = second_draw(c_);
    Case meaning = target_.meaning(c);
    std::optional<Composite> composite = target_.composite(c);
    second_ = std::make_unique<SecondDraw>(SecondDraw{std::move(c), std::move(meaning), std::move(composite)});
  }
  return *second_;
}

// The tensors at p's size on its draw, and the entry graph's exact output
// there: the reference. False when the entry graph does not run there (no
// reference to refine).
bool CaseChecker::prepare_proof_run(const Graph& g0, ProofRun& p) {
  if (p.prepared) return p.usable;
  p.prepared = true;
  const Case& c = p.second_draw ? second().c : c_;
  const std::optional<Composite>& composite = p.second_draw ? second().composite : composite_;
  auto t0 = Clock::now();
  p.tensors = composite ? composite->sdpa_tensors(p.at) : make_case_tensors(c, p.at);
  p.inputs = target_.inputs(c, p.tensors);
  p.value_scale = (composite ? composite->scale(p.tensors) : p.tensors.v.max_abs()) / (1.0 - c.dropout_p);
  result_.timing.generate += seconds_since(t0);
  p.memo = make_memo(p.at, c.data.seed);
  Outcome o = execute_on(g0, target_.exact_kernels(), p.at, p.inputs, c.data.seed, false, false, p.memo.get());
  if (!o.exec) return false;
  p.entry_ref.out = o.exec->outputs[0];
  p.usable = true;
  return true;
}

// The soundness rule at one proof run: g run exactly matches the entry
// graph there, rows a declared divergence explains aside.
bool CaseChecker::refines_at(const Graph& g, ProofRun& p) {
  const Case& c = p.second_draw ? second().c : c_;
  Outcome o = execute_on(g, target_.exact_kernels(), p.at, p.inputs, c.data.seed, true, false, p.memo.get());
  if (!o.exec) return false;
  Comparison cmp = compare_exact(o.exec->outputs[0], p.entry_ref, p.value_scale);
  if (cmp.within) return true;
  if (!cmp.shape_ok || cmp.max_abs > cmp.bound || cmp.nonfinite_rows.empty()) return false;
  const Case& meaning = p.second_draw ? second().meaning : meaning_;
  if (!p.masks_known) {
    // Which rows are fully masked is the oracles' to say, as at the runtime sizes.
    const std::optional<Composite>& composite = p.second_draw ? second().composite : composite_;
    auto t0 = Clock::now();
    Golden gold;
    try {
      gold = ref_.golden(meaning, p.tensors, p.at);
    } catch (const std::exception&) {
      gold.disagreement = "the oracles raised";
    }
    result_.timing.oracle += seconds_since(t0);
    // Without agreeing oracles nothing explains the rows: no missed-rewrite claim.
    if (!gold.disagreement.empty()) return false;
    p.entry_ref.fully_masked = composite ? composite_golden(*composite, gold).fully_masked : gold.fully_masked;
    p.masks_known = true;
  }
  return target_.explains_nan(meaning, p.tensors, p.entry_ref, cmp.nonfinite_rows, "exact", g).has_value();
}

// "s0 = 1 (the min of s0; Lq 2, Lkv 1)", with the draw when it is the second.
std::string CaseChecker::proof_run_str(const ProofRun& p) {
  const ConcreteSizes s = concrete_sizes(c_, p.at);
  std::string lengths = "Lq " + std::to_string(s.Lq) + ", Lkv " + std::to_string(s.Lkv);
  if (c_.start_pos != SymExpr(0)) lengths += ", start_pos " + std::to_string(s.start_pos);
  bool symbolic_batch = false;
  for (const auto& b : c_.batch) symbolic_batch = symbolic_batch || !b.is_constant();
  if (symbolic_batch) lengths += ", batch " + shape_str(SymShape(s.batch.begin(), s.batch.end()));
  std::string out = (p.at.empty() ? std::string("static sizes") : sizes_str(p.at)) + " (" + p.why + "; " + lengths + ")";
  if (p.second_draw) out += ", on the second data draw (seed " + std::to_string(second().c.data.seed) + ")";
  return out;
}

// "at 7 more sizes the symbols allow and on a second data draw (seed N)".
std::string CaseChecker::proof_words() {
  size_t sizes = 0;
  for (const auto& p : proof_)
    if (!p.second_draw && p.usable) ++sizes;
  std::string out = sizes ? "at " + std::to_string(sizes) + " more size(s) the symbols allow (min, max, hint and " +
                                "the lengths' boundaries) "
                          : "";
  if (target_.rewrite_fits_case_data()) return out + "and on no second data draw (the rewrite is fitted to the case's data)";
  return out + "and on a second data draw (seed " + std::to_string(second().c.data.seed) + ")";
}

}  // namespace check_internal

}  // namespace sdpa
