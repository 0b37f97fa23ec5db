#pragma once
/// Runs one case through a target: oracles, passes, exact and target
/// kernels, and every check in order of trust (ARCHITECTURE.md).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/case/case.h"
#include "harness/check/finding.h"
#include "harness/check/reference.h"
#include "harness/check/target.h"

namespace sdpa {

struct CheckOptions {
  bool passes = true;         // false: identity self-check (entry graph as is)
  bool completeness = true;   // force kept nodes to look for missed rewrites
  bool keep_graphs = false;   // print graphs into the result
  /// Prove each accepted node's own rewrite at the proof sizes and on the
  /// second data draw too, as every kept node's forced rewrite is (the
  /// gate: a decision's soundness means the same for both). Off in a
  /// campaign: the soundness verdict is judged at the runtime sizes, and
  /// proving every accepted node would cost a rerun per proof size.
  bool prove_accepted = false;
  /// The second oracle (LibTorch) cross-checks every case when 1; when N > 1,
  /// one case in N (chosen by a hash of the case's data seed) and every case
  /// with a finding, a non-finite input or golden value, or a fully masked
  /// row. Verdicts read the first oracle alone either way, so no verdict
  /// depends on the second (README, Throughput).
  /// The same cases (and those with a non-finite module golden) run the
  /// entry graph exactly up front; every other case is judged against the
  /// golden in its place and runs its entry graph once it has a finding,
  /// checked again in full when a comparison was too close to its bound
  /// for the verdict to stand. Unlike the second oracle this can change
  /// the verdict of a case without a finding, where a rewrite's error lies
  /// within |run - golden| of the 1e-9 line (README, Throughput).
  int64_t oracle_sample = 1;
  /// The completeness proof's exact runs at one proof size and data draw
  /// share node results (node_memo.h): a node of a forced rewrite that
  /// matches a node of the entry graph (or of an earlier rewrite) by op,
  /// arguments and input values takes its outputs instead of running its
  /// kernel again. Off: every node runs; the results are the same either
  /// way (a test compares them).
  bool reuse_exact_nodes = true;
};

/// The oracle_sample `sdpacheck fuzz` and the throughput bench use unless told.
constexpr int64_t kCampaignOracleSample = 16;

/// Seconds spent per stage on one case.
struct Timing {
  double generate = 0, oracle = 0, kernels = 0, compare = 0;
  Timing& operator+=(const Timing& t) {
    generate += t.generate;
    oracle += t.oracle;
    kernels += t.kernels;
    compare += t.compare;
    return *this;
  }
};

/// One accuracy comparison: a kernel set's output against golden.
struct AccuracySample {
  std::string kernel_set;
  DType dtype = DType::f32;
  double ratio = 0.0;  // the largest |C - G| / bound; above 1 fails
  /// The largest |C - G| / (error model + floor): how tight the bound
  /// derived from the kernel set's numerics is, the baseline rule aside.
  double model_ratio = 0.0;
  /// The largest |C - G| in steps of the output's int8 grid (LSB), where the
  /// kernel set declares one (QuantizedNumerics::output_step); else -1.
  double error_lsb = -1.0;
};

struct CaseResult {
  Verdict verdict = Verdict::pass;  // the most severe finding, else pass/rejected
  std::vector<Finding> findings;
  std::vector<Decision> decisions;
  std::string graph_before, graph_after;  // with keep_graphs
  /// With keep_graphs: the entry graph and the graph after every pass, as
  /// the checker ran them (null when the passes raised).
  std::shared_ptr<const Graph> entry_graph, rewritten_graph;
  Timing timing;
  std::vector<AccuracySample> accuracy;  // every accuracy comparison made
  std::map<std::string, int64_t> counters;  // Target::counters, once the passes ran
  /// Both oracles gave their word on every golden the case computed (true
  /// when it computed none).
  bool oracle_cross_checked = true;
  /// The most severe finding; nullptr when there is none.
  const Finding* primary() const;
};

CaseResult run_case(const Target& target, const ReferenceModel& reference, const Case& c,
                    const CheckOptions& options = {});

}  // namespace sdpa
