#pragma once
/// What a target's rewrite computes on one corpus entry, as the checker ran
/// it: for a repro script that sets sdpacheck's model of the rewrite beside
/// PyTorch's original call. The case runs in a worker first (a case that
/// ends the worker is reported as that death, not run here); then, in this
/// process, the checker's rewritten graph runs again on the kernels the
/// finding names (the exact kernels for a soundness finding) at each
/// runtime size.
#include <optional>
#include <string>
#include <vector>

#include "harness/check/check.h"
#include "harness/check/upstream_repro.h"
#include "harness/io/corpus.h"
#include "harness/isolate/isolated_cases.h"

namespace sdpa {

struct RewriteRun {
  /// The finding lies in the target's pipeline: the passes ran and changed
  /// the graph (or raised), or a kernel set fails on the graph they kept;
  /// and the finding is not the oracles', the entry form's or the harness's.
  /// False: a repro makes the original call only.
  bool applies = false;
  /// The passes changed the graph (or raised). False where the finding is a
  /// kernel set's on the graph the passes kept: then the model is that
  /// kernel set's run of the graph as exported, and no upstream pass runs.
  bool rewrote = false;
  std::optional<Finding> finding;  // the checker's primary finding, observed now
  /// The kernels the model ran on: empty for the exact kernels, else the
  /// name of the kernel set the finding names.
  std::string kernel_set;
  std::string rewritten_graph;  // printed like FX; empty when there is none
  /// Ops of the rewritten graph that the entry graph does not hold.
  std::vector<std::string> new_ops;
  /// Why the model has no output at any size (a pass raised, the case ended
  /// the worker); empty when `runs` holds one entry per Case::runs().
  std::string error;
  struct Run {
    std::optional<Tensor> out;  // the rewritten graph's output, [batch..., Hq, Lq, Ev]
    std::string error;          // what the run raised, when out is empty
  };
  std::vector<Run> runs;
  UpstreamRepro upstream;  // the target's
};

/// Runs `e` as replay does (in `isolated`'s worker first, when given) and,
/// when its finding lies in the rewrite, the rewritten graph at each size.
RewriteRun run_rewrite(const CorpusEntry& e, const TargetRegistry& registry, const ReferenceModel& reference,
                       IsolatedCases* isolated);

}  // namespace sdpa
