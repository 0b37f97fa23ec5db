#pragma once
/// Gating a change to a rewrite guard: record guard decisions over a
/// deterministic sample of cases, compare two policies (or a policy against
/// a kept decisions file), and sort each changed decision into a class.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/campaign/campaign.h"
#include "harness/isolate/isolated_cases.h"
#include "harness/case/case.h"
#include "harness/check/target.h"

namespace sdpa {

inline constexpr const char* kDecisionsFormat = "sdpacheck.decisions.v1";

/// One guard decision on one node of a case under one policy: a case has
/// one per node its passes matched (one "no-decision" entry when none did).
struct GateDecision {
  int64_t index = 0;       // position in the sample
  Case c;
  std::string pass, node;  // the deciding pass and the node ("%sdpa"); empty: no decision
  bool rewrite = false;    // the guard rewrote the node
  std::string rule;        // the deciding rule, "accept", or "no-decision"
  /// The node's rewrite alone (forced where kept) refines the entry graph
  /// at every runtime size and passes the completeness proof (proof sizes,
  /// second data draw), for kept and accepted nodes alike.
  bool sound = false;
  std::string refuted_at;  // where the proof broke it after every runtime size held; empty otherwise
  std::string verdict;     // the case's verdict under the policy
  bool unsound() const { return rewrite && !sound; }
  bool missed() const { return !rewrite && sound; }
};

struct DecisionsFile {
  std::string target;
  Options options;
  uint64_t seed = 1;
  int max_size = 100;
  std::vector<GateDecision> decisions;
};

/// The decisions of `target` on cases drawn like a campaign's (same seeds
/// and sizes), so two policies see the same sample. With `isolated`, each
/// case runs in its worker: a case that ends it is recorded with its crash,
/// timeout or oom verdict and no decision, and the recording goes on.
DecisionsFile record_decisions(const Target& target, const ReferenceModel& reference,
                               const CaseGeneratorFactory& generators, uint64_t seed, int64_t cases,
                               int max_size, IsolatedCases* isolated = nullptr);
/// The decisions of `target` on the cases of an existing file.
DecisionsFile record_decisions_on(const Target& target, const ReferenceModel& reference,
                                  const DecisionsFile& sample, IsolatedCases* isolated = nullptr);

nlohmann::json decisions_to_json(const DecisionsFile& d);
/// Strict: names the file and field on error (InputError).
DecisionsFile decisions_from_json(const nlohmann::json& j, const std::string& source);
DecisionsFile read_decisions_file(const std::string& path);

enum class GateClass { newly_unsound, newly_missed, unsound_fixed, newly_rewritten_sound };
const char* gate_class_name(GateClass c);
std::vector<GateClass> gate_classes();

struct GateChange {
  GateDecision base, head;
};

struct GateComparison {
  std::map<GateClass, std::vector<GateChange>> changes;
  int64_t cases = 0, decisions = 0;  // decisions: (case, node) pairs compared
  int64_t unchanged = 0, still_unsound = 0, still_missed = 0;  // counted per decision
  /// Decisions whose rewrite held at every runtime size and failed the
  /// completeness proof (GateDecision::refuted_at), in each file.
  int64_t base_refuted = 0, head_refuted = 0;
  /// Decisions unsound in both whose case ends in another verdict: the
  /// same class, but a failure of another kind (an export that failed now
  /// a crash at run time, ...), which a change of upstream version shows.
  std::vector<GateChange> verdict_changed;
};

/// Pairs decisions by sample index and node; throws InputError when the
/// samples differ.
GateComparison compare_decisions(const DecisionsFile& base, const DecisionsFile& head);

/// The change of a class with the smallest case (fewest q, k, v elements).
const GateChange* smallest(const std::vector<GateChange>& changes);

/// The change a report shows for class `cls`: the smallest, except that a
/// newly unsound decision is shown, where one does, on the smallest case the
/// head policy leaves with a finding the base policy did not give it, then
/// on the smallest with any finding, before a smaller case that a later
/// step leaves unsupported or that fails the same way under both.
const GateChange* example(GateClass cls, const std::vector<GateChange>& changes);

}  // namespace sdpa
