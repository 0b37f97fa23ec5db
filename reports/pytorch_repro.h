#pragma once
/// A standalone PyTorch script reproducing one corpus entry, fit for an
/// upstream bug report: it rebuilds the case's tensors with the README's
/// counter-based generator, makes the original SDPA call in PyTorch and
/// compares the output with sdpacheck's golden at each runtime size.
#include <string>
#include <vector>

#include "harness/io/corpus.h"
#include "harness/campaign/rewrite_run.h"
#include "harness/check/reference.h"

namespace sdpa {

/// The golden output of `reference` at each of c.runs(), in that order.
std::vector<Golden> run_goldens(const Case& c, const ReferenceModel& reference);

/// The script's text. `source` names the corpus file, `reference_name` the
/// model the goldens (one per c.runs(), in order) come from. The script
/// exits 0 when it ran; its last line starts with "REPRODUCED:" or
/// "NOT REPRODUCED:". With --dump it prints the rebuilt q, k, v and mask of
/// each run ("dump RUN NAME DTYPE D0xD1x... VALUES": DTYPE as torch prints it,
/// values as float.hex, in the case layout) and stops.
/// With a `rewrite` that applies (the finding lies in the rewrite), the
/// script also runs the target's upstream pipeline where it is installed,
/// else sets sdpacheck's model of the rewrite beside PyTorch's call; its
/// last line may then also start with "REPRODUCED IN MODEL:" or
/// "NOT REPRODUCED IN MODEL:" (pytorch_repro_rewrite.h).
std::string pytorch_repro_script(const CorpusEntry& e, const std::string& source,
                                 const std::string& reference_name, const std::vector<Golden>& goldens,
                                 const RewriteRun* rewrite = nullptr);

}  // namespace sdpa
