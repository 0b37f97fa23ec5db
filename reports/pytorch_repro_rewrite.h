#pragma once
/// The rewrite part of a PyTorch repro script (pytorch_repro.h), for a
/// finding that lies in the target's rewrite: the script runs the target's
/// upstream pipeline where it is installed (exports the call, runs the
/// upstream pass and the rewritten program in a child process, so a kernel
/// that aborts ends the child only) and compares the rewritten program
/// with PyTorch's original call and the golden. Where the upstream code is
/// missing, it says what it ran and what it could not, and sets sdpacheck's
/// model of the rewrite (its output as the checker computed it, embedded
/// like the golden) beside PyTorch's call, element by element where they
/// differ. Its last line is one of
///   REPRODUCED: the rewritten program differs / fails ...
///   NOT REPRODUCED: the rewritten program agrees with PyTorch's call and the golden ...
///   REPRODUCED IN MODEL: sdpacheck's model of the rewrite differs / fails ...
///   NOT REPRODUCED IN MODEL: the model agrees at every element (a finding not in
///     the output values, such as a broken invariant)
#include <ostream>

#include "harness/campaign/rewrite_run.h"
#include "harness/io/corpus.h"

namespace sdpa {

/// REWRITE (None unless `rewrite` applies), and for a rewrite the model's
/// outputs, the finding and the target's upstream entry points.
void write_rewrite_constants(std::ostream& o, const CorpusEntry& e, const RewriteRun* rewrite);

/// The Python that runs the upstream pipeline or compares the model, and
/// rewrite_verdict(found, ran), which main() calls when REWRITE is set.
void write_rewrite_body(std::ostream& o, const RewriteRun* rewrite);

}  // namespace sdpa
