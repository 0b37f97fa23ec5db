#include "harness/campaign/rewrite_run.h"

#include <set>

#include "harness/campaign/replay.h"
#include "harness/ir/interpreter.h"

namespace sdpa {
namespace {

// Every op a graph calls, its cond branches' included.
void collect_ops(const Graph& g, std::set<std::string>& ops) {
  for (const Node& n : g.nodes) {
    if (n.op != "placeholder" && n.op != "get_attr" && n.op != "getitem") ops.insert(n.op);
    for (const auto& sub : n.subgraphs) collect_ops(*sub, ops);
  }
}

std::vector<std::string> new_ops(const Graph& before, const Graph& after) {
  std::set<std::string> had, has;
  collect_ops(before, had);
  collect_ops(after, has);
  std::vector<std::string> out;
  for (const auto& op : has)
    if (!had.count(op)) out.push_back(op);
  return out;
}

// A verdict that can lie in the rewrite: a failure or a declared divergence,
// not the oracles' disagreement, the entry form's model or the harness's.
bool rewrite_verdict(const Finding& f) {
  if (!is_failure(f.verdict) && f.verdict != Verdict::known_divergence) return false;
  if (f.verdict == Verdict::oracle_disagree || f.verdict == Verdict::entry_disagree) return false;
  return f.check != Check::oracle && f.check != Check::identity;
}

// The passes changed the graph, or one raised (then there is no rewritten graph).
bool rewrote(const CaseResult& r, const Finding& f) {
  if (!r.rewritten_graph)
    return f.check == Check::robustness && f.verdict == Verdict::unexpected_error;
  for (const auto& d : r.decisions)
    if (d.rewrite) return true;
  return r.graph_after != r.graph_before;
}

const KernelSet* kernels_named(const Target& t, const std::string& name) {
  if (name.empty()) return &t.exact_kernels();
  for (const auto& ks : t.kernel_sets())
    if (ks.kernels->name() == name) return ks.kernels;
  return nullptr;
}

// The rewritten graph on `kernels` at each runtime size, as the checker runs it.
void run_each_size(const Target& t, const Case& c, const Graph& g, const KernelSet& kernels, RewriteRun& out) {
  for (const Assignment& at : c.runs()) {
    RewriteRun::Run run;
    const ConcreteSizes s = concrete_sizes(c, at);
    Shape want = s.batch;
    want.insert(want.end(), {s.Hq, s.Lq, s.Ev});
    try {
      Execution ex = interpret(g, kernels, t.inputs(c, make_case_tensors(c, at)), {at, c.data.seed});
      if (ex.outputs.empty()) run.error = "the rewritten graph returns nothing";
      else if (ex.outputs[0].shape != want)
        run.error = "the rewritten graph returns shape " + shape_str(ex.outputs[0].shape) + ", the call " +
                    shape_str(want);
      else
        run.out = std::move(ex.outputs[0]);
    } catch (const std::exception& e) {
      run.error = e.what();
    }
    out.runs.push_back(std::move(run));
  }
}

}  // namespace

RewriteRun run_rewrite(const CorpusEntry& e, const TargetRegistry& registry, const ReferenceModel& reference,
                       IsolatedCases* isolated) {
  auto [target_options, check] = entry_options(e);
  auto target = registry.make(e.target, target_options);
  RewriteRun out;
  out.upstream = target->upstream_repro();
  if (!check.passes) return out;  // the identity self-check: no rewrite ran
  if (isolated) {
    ReplayOutcome o = replay_entry(e, registry, reference, false, isolated);
    if (isolated->last_died()) {
      // Where the case died is not known: the passes, a kernel, the oracles.
      // Running it here would end this process the same way.
      if (const Finding* f = o.result.primary()) out.finding = *f;
      out.applies = out.rewrote = true;
      out.error = "ended sdpacheck's worker process (" + (out.finding ? out.finding->detail : std::string("?")) +
                  "): the passes, the kernels or the oracles, sdpacheck cannot tell which";
      return out;
    }
  }
  check.keep_graphs = true;
  const CaseResult r = run_case(*target, reference, e.c, check);
  const Finding* f = r.primary();
  if (!f || !rewrite_verdict(*f)) return out;
  out.rewrote = rewrote(r, *f);
  if (!out.rewrote && (f->kernel_set.empty() || !r.rewritten_graph)) return out;
  out.applies = true;
  out.finding = *f;
  if (!out.rewrote) {
    out.upstream.python.clear();  // the upstream pass would keep the call too: nothing of the target to run
    out.upstream.not_run = "the passes kept the call, and the finding is kernel set " + f->kernel_set +
                           "'s on the graph as exported, which the script does not run";
  }
  out.kernel_set = f->kernel_set;
  if (!r.rewritten_graph) {
    out.error = f->detail;  // "pass NAME raised: ..."
    return out;
  }
  out.rewritten_graph = r.graph_after;
  out.new_ops = new_ops(*r.entry_graph, *r.rewritten_graph);
  if (f->verdict == Verdict::dtype_mismatch) {  // the checker does not run a graph the retrace rejects
    out.error = "the pipeline's retrace rejects the rewritten graph: " + f->detail;
    return out;
  }
  if (target->composite(e.c)) {
    out.error = "the entry form is a module around the call, whose output is the module's, not the call's";
    return out;
  }
  const KernelSet* kernels = kernels_named(*target, f->kernel_set);
  if (!kernels) {
    out.error = "the finding names kernel set " + f->kernel_set + ", which target " + e.target + " does not have";
    return out;
  }
  run_each_size(*target, e.c, *r.rewritten_graph, *kernels, out);
  return out;
}

}  // namespace sdpa
