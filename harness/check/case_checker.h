#pragma once
/// The staged checker behind run_case (check.h): one object per case, its
/// stages in a file each (check.cpp drives them; entry_stage, soundness_stage,
/// accuracy_stage, completeness_stage). Internal to harness/check.
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/check/check.h"
#include "harness/check/compare.h"
#include "harness/check/proof_sizes.h"
#include "harness/io/json_reader.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"
#include "harness/ir/node_memo.h"

namespace sdpa::check_internal {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The outcome of executing a graph: outputs, or the finding its error is.
struct Outcome {
  std::optional<Execution> exec;
  Finding error;
};

class CaseChecker {
 public:
  CaseChecker(const Target& t, const ReferenceModel& r, const Case& c, const CheckOptions& o)
      : target_(t), ref_(r), c_(c), opt_(o), env_(c.shape_env()), runs_(c.runs()) {}

  // The stages, in order of trust: inputs and goldens (the oracles), the
  // entry graph against them, the passes, soundness (the rewritten graph
  // refines the entry graph), invariants, accuracy, completeness.
  CaseResult run();

 private:
  Check main_check() const { return opt_.passes ? Check::soundness : Check::identity; }
  Finding finding(Verdict v, Check check, const std::string& detail) const;
  Finding unsupported(const std::string& why) const;
  Finding harness_bug(const std::string& why) const;
  CaseResult finish_with(Finding f);
  void restart_with(Finding f);
  CaseResult finish();

  // A variant or causal alignment the target's entry form does not take is
  // a bad file, not a case.
  void check_variant() const;

  // Tensors and golden outputs at every run, from the SDPA call the entry
  // graph means; false on oracle disagreement.
  bool prepare();
  // Whether the second oracle checks this case up front: every case, or
  // one in opt_.oracle_sample by a hash of its data seed.
  bool sampled_for_cross_check() const;
  // The second oracle's word, after the checks, on a case it was not
  // sampled for: a case with a finding, non-finite data or golden, or a
  // fully masked row. On disagreement the result is what prepare() gives.
  void cross_check_late();
  bool needs_cross_check() const;

  // The entry graph run exactly at every run: the reference the rewritten
  // graph must refine. Where the entry means an SDPA call, it must match
  // the oracles; a difference is the entry form's model, never a pass.
  // Outside the cross-check sample (finite data and goldens, no fully
  // masked row) the golden stands in for that run; check_entry_late runs
  // it once the case has a finding.
  bool check_entry(const Graph& g0);
  bool entry_runs_up_front() const;
  enum class Late { done, check_again };
  Late check_entry_late(const Graph& g0);
  CaseResult check_again_in_full();
  CaseResult finish_after_entry(const Graph& g0);
  std::optional<Finding> run_entry(const Graph& g0, size_t r, Golden& ref);
  void note_margin(const Comparison& cmp);
  static double largest_difference(const Tensor& a, const Tensor& b);
  static std::string option_or(const Options& o, const std::string& key, const std::string& fallback);

  // Where two outputs differ, in words.
  static std::string difference(const Comparison& cmp, const Tensor& out, const Tensor& ref);

  // Rewrite controls by pass index; a pass without one follows its guard.
  using Controls = std::map<int, RewriteControl>;

  // Runs the passes, rewriting in each pass the nodes its control selects
  // (the guard's choices where it has none).
  std::optional<Graph> apply_passes(const Graph& g0, const Controls& controls,
                                    std::vector<Decision>* decisions);
  Outcome execute(const Graph& g, const KernelSet& k, size_t r, bool rewritten, bool keep = false);
  // The same at any size, on given inputs and data seed (the proof's runs);
  // with a memo, node results are read from and given to it.
  Outcome execute_on(const Graph& g, const KernelSet& k, const Assignment& at,
                     const std::map<std::string, Tensor>& inputs, uint64_t seed, bool rewritten, bool keep = false,
                     NodeMemo* memo = nullptr);
  // The memo of the proof's exact runs at `at` on data seed `seed`, shared
  // by g0 and every forced rewrite there (null when reuse is off). The
  // runtime runs take none: their graphs share too little to pay for it.
  std::unique_ptr<NodeMemo> make_memo(const Assignment& at, uint64_t seed);

  // The error model depends only on the run and the kernel set's declared
  // numerics for this case and graph: computed once per run and set.
  // Its fields, a double by its bits: two declarations share a bound only when identical.
  using NumericsKey = std::array<uint64_t, 37>;  // numerics_key: 16 fields and 7 grids of 3
  static NumericsKey numerics_key(const KernelNumerics& n);

  // The bound depends only on the run and the declaration: kernel sets that
  // declare the same numerics share one computation.
  // A composite's bound adds the projections of graph `g` (the one the set runs).
  const ErrorBound& error_bound(size_t r, const std::string& kernel_set, const KernelNumerics& n, const Graph* g);

  // max |V| over every run, scaled by dropout: what an output averages.
  double value_scale() const { return value_scale_; }
  std::vector<std::string> violated_assumptions(size_t r) const;

  // The first computing node the rewrite introduced (not a layout or dtype
  // move): what an unsound rewrite replaced the original call with.
  static std::string rewrite_node(const Graph& g0, const Graph& g1);

  // The first node of the rewritten graph whose exact value differs from
  // the node of the same name and op in the entry graph; when every shared
  // node agrees, the first computing node the rewrite added.
  std::string diverging_node(const Graph& g0, const Graph& g1, size_t r, bool& shared_agree);
  static bool values_agree(const Tensor& a, const Tensor& b);

  // A constant the rewrite changed: rounded-constant only where rounding
  // alone can explain it (soundness_stage.cpp says when); otherwise the
  // change is added to the unsound-rewrite detail.
  void name_changed_constants(Finding& f, const Graph& g0, const Graph& g1);

  // Sets constant `c` of graph g to `value` where the graph holds it.
  static bool put_back(Graph& g, const GraphConstant& c, double value);
  static bool put_back(Graph& g, const ConstantSite& s, double value);
  static std::string number_str(double x);
  /// "; the row's largest score X" for query row `row`, or "" without one.
  static std::string largest_score(const Golden& gold, int64_t row);

  // Verifies, checks invariants, and runs the rewrite exactly. False when a
  // failure makes the later checks meaningless.
  bool check_rewritten(const Graph& g0, const Graph& g1);

  // Compares one output with golden; records a finding and returns false
  // when it fails. `baseline` null: the exact run (soundness). `g`: the
  // graph that gave `out`. `numerics`: the kernel set's declaration, with a baseline.
  bool judge(const Tensor& out, size_t r, const std::string& kernel_set, const Tensor* baseline,
             const Graph& g, const KernelNumerics* numerics = nullptr);
  Finding nonfinite_finding(Finding f, const Comparison& cmp, const Tensor& out, const Golden& gold,
                            const std::optional<std::string>& declared) const;

  // The first node whose value on the target kernels departs from the
  // exact run by far more than rounding (or in finiteness).
  std::string first_divergence(const Graph& g, size_t r, const std::string& kernel_set);
  void accuracy(const Graph& g0, const Graph& g1, bool rewritten);

  // For each pass whose guard kept a node: is the forced rewrite sound at
  // every size the symbols allow? Then the guard is too tight
  // (missed-rewrite). Each kept node is forced on its own (the other
  // passes and nodes follow their guards), then every kept node together:
  // a forced rewrite is a missed rewrite when it refines the entry graph at
  // every runtime size and passes the proof (proven()).
  void completeness(const Graph& g0, const Graph& g1, bool case_sound);

  // Whether each accepted node's rewrite is sound on its own: the case's
  // soundness verdict when it is the only decision, else the rewrite of
  // that node alone with every other node held (so the gate can sort
  // decisions node by node); with prove_accepted, proven as a forced one.
  void attribute_accepted(const Graph& g0, const Graph& g1, bool case_sound);
  // The passes under `controls`, then refines() and, with `prove`,
  // proven(); a refutation is written into `d`.
  bool forced_sound(const Graph& g0, const Controls& controls, bool prove, Decision* d);

  // The completeness proof (completeness_stage.cpp). A rewrite that refines
  // the entry graph at every runtime size must also refine it at every
  // proof size (proof_sizes.h) on the case's data, then at the runtime and
  // proof sizes on the second data draw. The entry graph runs exactly at
  // each size, once per case, as the reference; the oracles are asked only
  // which rows are fully masked, when non-finite rows need a declared
  // divergence to explain them. Cheapest sizes first; the first failure
  // ends it.
  struct ProofRun {
    Assignment at;
    std::string why;          // where the size comes from
    bool second_draw = false;
    bool prepared = false;    // tensors and the entry graph's output computed
    bool usable = false;      // the entry graph runs exactly at this size
    bool masks_known = false;  // entry_ref.fully_masked from the oracles
    bool kept = false;         // counted in proof_kept_elements_
    CaseTensors tensors;
    std::map<std::string, Tensor> inputs;
    Golden entry_ref;
    double value_scale = 0.0;
    std::unique_ptr<NodeMemo> memo;  // the exact runs' node results here (dropped with the tensors)
  };
  // The second draw: the case with its data drawn again, the SDPA call its
  // entry graph means, and its module (composite).
  struct SecondDraw {
    Case c, meaning;
    std::optional<Composite> composite;
  };
  // Where the rewritten graph g fails the proof, in words; none when it
  // passes (g already refines g0 at every runtime size).
  std::optional<std::string> refutation(const Graph& g0, const Graph& g);
  bool proven(const Graph& g0, const Graph& g, Decision* d);
  void build_proof();
  const SecondDraw& second();
  bool prepare_proof_run(const Graph& g0, ProofRun& p);
  // Keeps p's tensors for the next forced rewrite while the proof holds
  // fewer than 2^22 elements (32 MiB of doubles); past that, drops them, to
  // be made again if needed.
  void keep_or_release(ProofRun& p);
  bool refines_at(const Graph& g, ProofRun& p);
  std::string proof_run_str(const ProofRun& p);
  // What the proof ran, in words, for the missed-rewrite finding.
  std::string proof_words();

  // The soundness rule without recording a finding: g verifies, keeps the
  // output dtype and the target's invariants, and run exactly matches the
  // entry graph at every run, rows a declared divergence explains aside.
  bool refines(const Graph& g0, const Graph& g);
  const Target& target_;
  const ReferenceModel& ref_;
  const Case& c_;
  const Case meaning_ = target_.meaning(c_);  // the SDPA call the entry graph computes
  CheckOptions opt_;
  ShapeEnv env_;
  std::vector<Assignment> runs_;
  std::vector<CaseTensors> tensors_;
  std::vector<std::map<std::string, Tensor>> inputs_;  // placeholder bindings per run
  std::map<std::pair<size_t, NumericsKey>, ErrorBound> bounds_;
  std::vector<Golden> goldens_;       // what the entry graph's output must match (the module's, for a composite)
  std::optional<Composite> composite_;  // the module around the SDPA call, when the entry form is one
  std::vector<Golden> sdpa_goldens_;  // the oracles' output of the SDPA call
  std::vector<Golden> entry_refs_;  // the entry graph's exact output at each run, or the golden
  bool entry_run_ = true;           // entry_refs_ are g0's exact run (else the golden)
  // The least |difference - bound| over the comparisons made against the golden in its place.
  double closest_to_bound_ = INFINITY;
  CaseResult result_;
  std::vector<int> decision_pass_;  // the pass that made each decision
  double value_scale_ = 0.0;
  // Elements the proof runs' node memos may still hold (2^22, 32 MiB of
  // doubles, per case); declared before proof_, whose memos give theirs
  // back when dropped.
  int64_t memo_budget_ = int64_t{1} << 22;
  bool proof_built_ = false;
  std::vector<ProofRun> proof_;
  int64_t proof_kept_elements_ = 0;  // held by prepared proof runs
  std::unique_ptr<SecondDraw> second_;
};

}  // namespace sdpa::check_internal
