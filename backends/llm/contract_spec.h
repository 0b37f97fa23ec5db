#pragma once
/// The contract of ReplaceSDPAWithCustomSDPAPass (semantics/passes.md §3,
/// llm-and-cuda.md §1-2) written a second time, from the call itself: no
/// graph, no ShapeEnv, no guard code. It names the contract rules a case
/// breaks, so a guard that mis-evaluates a rule cannot vouch for itself.
#include <vector>

#include "backends/llm/executorch_revision.h"
#include "harness/case/case.h"
#include "harness/ir/shape_env.h"

namespace sdpa::llm {

/// Every contract rule that applies to the call `c`, in the README's order
/// (rank, dtype, heads, head-dims, dropout, query-length, then causal-lengths and
/// causal-scale for a causal call, unmasked-lengths for an unmasked
/// non-causal one, mask-shape and mask-dtype for a masked one), each with
/// its outcome and the sizes compared. A size rule holds only when it holds
/// at every size the symbols allow; the detail of a broken one names a
/// size where it fails. `assume_causal_mask` is the pass's constructor
/// argument: the mask is dropped and the call is causal before any rule
/// reads them (the spec's form of `assume-causal-first`). `rev`: the
/// ExecuTorch tree whose custom_sdpa the rewrite calls (its dtypes).
std::vector<RuleOutcome> contract_spec(const Case& c, bool assume_causal_mask, const EtRevision& rev = {});

/// The sizes in range where a size relation must be tried: every size when
/// the symbol box holds at most `max_points` points, else every corner of
/// the box (exact for sizes affine in each symbol, which is what the entry
/// form builds: sums of symbols and constants).
std::vector<Assignment> sizes_to_try(const std::map<std::string, SymbolInfo>& symbols,
                                     int64_t max_points = 4096);

}  // namespace sdpa::llm
