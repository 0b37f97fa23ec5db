#pragma once
/// How a repro script runs a target's own upstream code, where it is
/// installed, for a finding in the rewrite: which upstream entry points the
/// target models, and the Python that exports the call, runs the upstream
/// pass and returns the rewritten program. A target fills it in; the
/// script writer (reports/) embeds it and knows no target.
#include <string>
#include <vector>

namespace sdpa {

struct UpstreamRepro {
  /// What sdpacheck's model of the rewrite computes, in a few words: the
  /// script says "the rewrite's result is sdpacheck's model of MODEL".
  std::string model;
  /// One line each: an upstream entry point of the pipeline (module path,
  /// class), where it is, and whether it is public, upstream or absent.
  std::vector<std::string> entry_points;
  /// Python modules the script tries to import, each reported as importable
  /// or not, with the error (the entry points above, where they exist).
  std::vector<std::string> probes;
  /// Python source defining `upstream_program(module, inputs)`: it exports
  /// `module` (the script's SdpaCall, the call as the entry graph holds it)
  /// with `export_call(module, inputs)`, runs the upstream pass, and returns
  /// (what ran, the rewritten program: a callable taking `inputs`). It
  /// raises Unavailable(why) when the upstream code is missing ("ExecuTorch
  /// not installed"), and wraps each step in in_stage(name, fn) so a step
  /// that raises is named. Empty: the script does not run the pipeline.
  std::string python;
  /// Why the script does not run the pipeline, when `python` is empty.
  std::string not_run;
  /// Where the target ran with options that are not upstream's (a guard
  /// policy of sdpacheck's own, a deliberately wrong pass or kernel): what
  /// they are, since upstream code is then not expected to show the finding.
  std::vector<std::string> deviations;
};

/// The deviation of a self-test option, "option KEY=VALUE: ...": a
/// deliberately wrong guard, pass or kernel, which upstream code lacks.
inline std::string self_test_deviation(const std::string& key, const std::string& value) {
  return "option " + key + "=" + value +
         ": a deliberately wrong guard, pass or kernel of sdpacheck's self-tests; upstream code has no such "
         "fault and is not expected to show the finding";
}

}  // namespace sdpa
