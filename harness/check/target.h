#pragma once
/// A target: one backend's pipeline (entry form, ordered passes, kernel
/// sets, claimed dtypes, declared divergences, invariants). The harness
/// drives targets only through this interface and never names one.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/case/case.h"
#include "harness/case/case_space.h"
#include "harness/ir/graph.h"
#include "harness/ir/kernel_set.h"
#include "harness/check/composite.h"
#include "harness/check/numerics.h"
#include "harness/check/reference.h"
#include "harness/ir/shape_env.h"
#include "harness/case/tensor_data.h"
#include "harness/check/upstream_repro.h"

namespace sdpa {

using Options = std::map<std::string, std::string>;

struct OptionSpec {
  std::string name;
  std::vector<std::string> choices;  // empty: any value
  std::string default_value;
  std::string help;
};

/// Which matched nodes a pass rewrites: those its guard accepts, and also
/// the `forced` ones (or all, with force_all), but never a `held` one. The
/// completeness check forces each kept node on its own and all together.
struct RewriteControl {
  bool force_all = false;
  std::set<std::string> forced;  // Decision::node names
  std::set<std::string> held;
  /// Whether the node of decision `d` (its guard's choice made) is rewritten.
  bool rewrites(const Decision& d) const {
    if (held.count(d.node)) return false;
    return d.rewrite || force_all || forced.count(d.node) > 0;
  }
};

/// What a pass throws where its upstream raises on a form it does not take
/// (an assert that aborts the pass rather than skipping the node): the
/// case is `unsupported`, with the message. Any other exception a pass
/// throws is an unexpected error.
class PassUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A rewrite pass: a guard that decides per node, and the rewrite.
class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  struct Result {
    Graph graph;
    std::vector<Decision> decisions;  // one per node the pass matched
  };
  /// Runs the guard on every matched node and rewrites the nodes `control`
  /// selects: the accepted ones by default; a forced node's decision says
  /// forced, so the harness can tell a too-tight guard from a sound one.
  /// Throws when the pass itself fails (as upstream would raise).
  virtual Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const = 0;
  /// The guard's choices alone (the default control).
  Result run(const Graph& g, const ShapeEnv& env) const { return run(g, env, RewriteControl{}); }
};

struct KernelSetInfo {
  const KernelSet* kernels;
  std::vector<DType> dtypes;  // the dtypes this set claims
  std::string description;
  /// How the set computes a case (numerics.h); without it, accuracy is `unsupported`.
  NumericsFn numerics;
};

/// One place a graph holds a scalar: keyword `kwarg` or else positional
/// argument `arg` of node `node`, or every element of the graph constant
/// (buffer) `buffer`.
struct ConstantSite {
  std::string node;
  std::string kwarg;
  int arg = -1;
  std::string buffer;
};

/// A scalar a graph computes with (a scale literal, a recovered scale), as
/// the graph holds it: compared between the entry and the rewritten graph.
struct GraphConstant {
  std::string name;  // "scale"
  double value = 0.0;
  DType dtype = DType::f32;  // the dtype it is rounded to: its ulps are counted in it
  /// Where the graph holds it, as factors whose product is `value` (a
  /// scale split over q and k^T has two); the checker puts the entry's
  /// value back (into the first, 1 into the others) to see whether the
  /// rounding alone explains a difference. Empty: nowhere to put it.
  std::vector<ConstantSite> sites;
};

/// A stage of a rewritten graph whose kernel departs from what its own
/// arguments specify (an int8 kernel against its integer reference): an
/// inaccurate-kernel finding, since the rewrite may still be sound.
struct KernelBreach {
  std::string kernel_set;
  std::string node;  // "%name (op)"
  std::string detail;
};

/// What a target finds wrong with a rewritten graph besides its values:
/// properties it promises (broken-invariant), and kernel stage breaches.
struct Violations {
  std::vector<std::string> structural;
  std::vector<KernelBreach> kernel;
};

/// A difference between the target and aten the target declares up front.
struct DeclaredDivergence {
  std::string name;
  std::string description;
};

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string name() const = 0;
  virtual const Options& options() const = 0;
  /// The calls the entry form takes; generators draw inside it.
  virtual CaseSpace case_space() const = 0;
  /// A reason the entry form cannot express this case, or none.
  virtual std::optional<std::string> refuses(const Case& c) const { return std::nullopt; }
  /// The graph a frontend hands the passes for this call.
  virtual Graph entry(const Case& c) const = 0;
  /// The SDPA call the entry graph computes, for the oracles: the case
  /// itself unless the entry form changes it (a scale held as an f32
  /// literal). The entry graph run exactly must match the oracles on it;
  /// where it does not, the entry form's model is wrong (entry-disagree).
  virtual Case meaning(const Case& c) const { return c; }
  /// The scalars a graph computes with, by name, read from the graph: when
  /// the rewrite is unsound, a constant that changed is named with its ulps.
  virtual std::vector<GraphConstant> constants(const Graph& g) const { return {}; }
  /// The module around the SDPA call when the entry form is one (composite.h):
  /// the oracles judge the inner call, on composite->sdpa_tensors, and every
  /// check compares the module's output through it. None: the entry graph's
  /// output is the SDPA call's.
  virtual std::optional<Composite> composite(const Case& c) const { return std::nullopt; }
  /// True when the rewritten graph is fitted to the case's own data (a
  /// quantizer calibrated on it): the completeness proof then runs no second
  /// data draw, whose values such a graph was never fitted to.
  virtual bool rewrite_fits_case_data() const { return false; }
  /// Runtime inputs of the entry graph's placeholders; `t` holds the SDPA
  /// call's tensors (the inner call's, for a composite).
  virtual std::map<std::string, Tensor> inputs(const Case& c, const CaseTensors& t) const;
  virtual std::vector<const Pass*> passes() const = 0;
  virtual std::vector<KernelSetInfo> kernel_sets() const = 0;
  /// Exact (float64, compensated sums) kernels for every op the rewritten graph
  /// may hold: the harness's reference set, plus exact models of the
  /// target's own ops.
  virtual const KernelSet& exact_kernels() const;
  /// The facts a case breaks that make it a defect class (for example the
  /// rules of an intended guard design), each with its sizes; empty when
  /// the target has none.
  virtual std::vector<RuleOutcome> failure_facts(const Case& c) const { return {}; }
  /// The names of failure_facts joined by "+": deduplicates findings.
  std::string failure_class(const Case& c) const;
  /// Kernels a naive implementation of the ORIGINAL graph runs on, in the
  /// case dtype (the baseline B of NUMERICS.md).
  virtual const KernelSet& baseline_kernels() const = 0;
  /// Structural properties of the rewritten graph; each violation in words.
  virtual std::vector<std::string> invariants(const Case& c, const Graph& before,
                                              const Graph& after) const {
    return {};
  }
  /// The invariants, and the kernel stage breaches of a target that checks
  /// its kernels stage by stage; the checker reads both from one call (a
  /// target may run the graph once for both), and reads the invariants
  /// through it alone: a target overrides one of the two.
  virtual Violations violations(const Case& c, const Graph& before, const Graph& after) const {
    return {invariants(c, before, after), {}};
  }
  /// The type errors the pipeline's own retrace raises on the rewritten
  /// graph (an op whose operand dtypes its schema rejects), each naming the
  /// node: dtype-mismatch findings, and the graph is not run.
  virtual std::vector<std::string> type_errors(const Graph& g) const { return {}; }
  virtual std::vector<DeclaredDivergence> divergences() const { return {}; }
  /// How a repro script runs the target's upstream code for a finding in
  /// the rewrite (upstream_repro.h); empty: the script names no entry point.
  virtual UpstreamRepro upstream_repro() const { return {}; }
  /// What the target counts on one case after its passes (nodes a library
  /// takes, patterns matched), by name; a campaign sums them per entry
  /// variant into run.json and the HTML report.
  virtual std::map<std::string, int64_t> counters(const Case& c, const Graph& entry,
                                                  const Graph& rewritten) const {
    return {};
  }
  /// The name of a declared divergence that explains non-finite values at
  /// `bad_rows` (query rows of [batch..., Hq, Lq]; for a composite, rows of
  /// the module's output and its golden) of `kernel_set`'s output on the
  /// inputs `t`, when it ran graph `ran`, or none.
  virtual std::optional<std::string> explains_nan(const Case& c, const CaseTensors& t,
                                                  const Golden& g,
                                                  const std::vector<int64_t>& bad_rows,
                                                  const std::string& kernel_set, const Graph& ran) const {
    return std::nullopt;
  }
};

/// A deliberately wrong configuration of a target: the options that select
/// it and what is wrong. The self-tests prove the checks catch each one.
struct MutantSpec {
  std::string name;
  Options options;
  std::string what;
};

/// Makes configured targets of one kind; what `--target NAME` selects.
class TargetFactory {
 public:
  virtual ~TargetFactory() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  /// Every option, including `guard` (the guard policy) and `entry`.
  virtual std::vector<OptionSpec> option_specs() const = 0;
  /// The self-check mutants a target offers (deliberately wrong passes or
  /// kernels, selected with options).
  virtual std::vector<MutantSpec> mutants() const { return {}; }
  /// `options` has been checked against option_specs and completed with defaults.
  virtual std::unique_ptr<Target> make(const Options& options) const = 0;
};

class TargetRegistry {
 public:
  void add(std::unique_ptr<TargetFactory> f);
  const TargetFactory* find(const std::string& name) const;
  std::vector<const TargetFactory*> all() const;
  /// Checks keys and values against the factory's specs (InputError naming
  /// the option and the expected values), fills defaults, and makes the target.
  std::unique_ptr<Target> make(const std::string& name, const Options& options) const;

 private:
  std::vector<std::unique_ptr<TargetFactory>> factories_;
};

/// Options completed with defaults and checked; throws InputError.
Options resolve_options(const TargetFactory& f, const Options& given);

}  // namespace sdpa
