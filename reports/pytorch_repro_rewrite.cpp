#include "reports/pytorch_repro_rewrite.h"

#include <sstream>

#include "reports/python_text.h"

namespace sdpa {
namespace {

// Running the target's upstream code: the call as a module, its export,
// the pipeline in a child process. The target's upstream_program follows.
constexpr const char* kUpstreamBody = R"py(

# --- The rewrite: the target's own code where it is installed ---
import os


class Unavailable(Exception):
    """The target's upstream code cannot run here; the message says what is missing."""


class StageFailed(Exception):
    """A step of the upstream pipeline (the export, a pass) raised; the message names it."""


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def package_version(module, distribution):
    try:
        from importlib import metadata
        return metadata.version(distribution)
    except Exception:
        return getattr(module, "__version__", "(version unknown)")


def in_stage(name, step):
    try:
        return step()
    except Unavailable:
        raise
    except Exception as e:
        raise StageFailed(f"{name} raised {type(e).__name__}: {first_line(e)}") from e


def export_call(module, inputs):
    # torch.export came with PyTorch 2.1; strict=True, as ExecuTorch's tests of its passes export.
    if not hasattr(torch, "export"):
        raise Unavailable(f"PyTorch {torch.__version__} has no torch.export (PyTorch 2.1 or later)")
    return in_stage("torch.export.export", lambda: torch.export.export(module, inputs, strict=True))


class SdpaCall(torch.nn.Module):
    # The call as the entry graph holds it: q, k, v (and the mask) in the case layout, transposed
    # to [..., H, L, D] for bshd; attn_mask, dropout_p and is_causal positional, scale and
    # enable_gqa by keyword (they are keyword-only), as export writes the aten node.
    def forward(self, q, k, v, mask=None):
        if LAYOUT == "bshd":
            q, k, v = (t.transpose(-3, -2) for t in (q, k, v))
        extra = {}
        if SCALE is not None:
            extra["scale"] = SCALE
        if ENABLE_GQA:
            extra["enable_gqa"] = True
        return F.scaled_dot_product_attention(q, k, v, mask, DROPOUT_P, IS_CAUSAL, **extra)


def program_ops(program):
    graph = getattr(program, "graph", None)
    if graph is None:
        return None
    ops = []
    for node in graph.nodes:
        if node.op == "call_function" and str(node.target) not in ops:
            ops.append(str(node.target))
    return ops


def run_isolated(program, inputs):
    # The rewritten program runs in a child process, so a kernel that aborts (custom_sdpa's
    # ET_CHECK_MSG checks are fatal) ends the child and not this script.
    # Returns (output, None) or (None, what went wrong).
    import pickle
    import signal

    def call():
        out = program(*inputs)
        return out[0] if isinstance(out, (tuple, list)) else out

    if not hasattr(os, "fork"):
        try:
            return call(), None
        except Exception as e:
            return None, f"the rewritten program raised {type(e).__name__}: {first_line(e)}"
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            out = call()
            reply = ("ok", list(out.shape), str(out.dtype), out.double().flatten().tolist())
        except BaseException as e:
            reply = ("error", f"the rewritten program raised {type(e).__name__}: {first_line(e)}")
        with os.fdopen(write_end, "wb") as f:
            pickle.dump(reply, f)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return None, f"the rewritten program ended its process with {signal.Signals(os.WTERMSIG(status)).name}"
    if not data:
        return None, f"the rewritten program ended its process with exit status {os.WEXITSTATUS(status)}"
    reply = pickle.loads(data)
    if reply[0] == "error":
        return None, reply[1]
    _, shape, dtype, values = reply
    return {"shape": shape, "dtype": dtype, "values": values}, None


def probe_upstream():
    import importlib
    for name in UPSTREAM_PROBES:
        try:
            importlib.import_module(name)
            print(f"  {name}: importable")
        except Exception as e:
            print(f"  {name}: not importable ({type(e).__name__}: {first_line(e)})")


def run_upstream(ran):
    # One result a run: {"what", "out" (or None), "failure" (or None), "ops"}; or None and why not.
    if UPSTREAM_NOT_RUN is not None:
        return None, UPSTREAM_NOT_RUN
    results = []
    for r in ran:
        try:
            what, program = upstream_program(SdpaCall(), r["inputs"])
        except Unavailable as e:
            return None, str(e)
        except StageFailed as e:
            results.append({"what": "the upstream pipeline, before its program ran", "out": None,
                            "failure": str(e), "ops": None})
            continue
        except Exception as e:
            results.append({"what": "the upstream pipeline", "out": None, "ops": None,
                            "failure": f"building the rewritten program raised {type(e).__name__}: {first_line(e)}"})
            continue
        out, failure = run_isolated(program, r["inputs"])
        results.append({"what": what, "out": out, "failure": failure, "ops": program_ops(program)})
    return results, None
)py";

// Comparing: the rewritten program (upstream) or the model with PyTorch's
// call and the golden, element by element, and the verdict.
constexpr const char* kCompareBody = R"py(

# --- The rewrite: comparisons and the verdict ---
SHOWN = 12  # differing elements printed a run, at most


def fmt(x):
    return f"{x:.9g}"


def differs(a, b, tol):
    if math.isfinite(a) and math.isfinite(b):
        return abs(a - b) > tol
    return not (a == b or (math.isnan(a) and math.isnan(b)))


def first_difference(a, b, tol):
    for e in range(min(len(a), len(b))):
        if differs(a[e], b[e], tol):
            return e
    return None


def out_dims(run):
    return run["batch"] + [Q_HEADS, run["q_len"], VALUE_DIM]


def where(n, run, e):
    at = f"output{list(row_index(e, out_dims(run)))}"
    return at + (f" of run {n}" if len(RUNS) > 1 else "")


def value_scale(run, v):
    return max([abs(x) for x in run["golden"] + v.double().flatten().tolist() if math.isfinite(x)] + [1e-300])


def original_names(r):
    # (the call, its column): what call_original ran, so a line never calls a composition PyTorch's call.
    if r["how"].startswith("explicit math composition"):
        return "the original call's float64 composition", "composition"
    return "PyTorch's original call", "PyTorch"


def side_by_side(run, columns, tol):
    # Prints each element where two columns differ (by more than tol where both are finite, or in
    # finiteness), with every column's value.
    n = min(len(values) for _, values in columns)
    rows = [e for e in range(n)
            if any(differs(a[e], b[e], tol) for i, (_, a) in enumerate(columns) for _, b in columns[i + 1:])]
    names = ", ".join(label for label, _ in columns)
    if not rows and n:
        print(f"  {names} agree at every element (within {tol:.3g} where finite); the first:")
    for e in (rows or [0][:n])[:SHOWN]:
        print(f"  output{list(row_index(e, out_dims(run)))}: " +
              ", ".join(f"{label} {fmt(values[e])}" for label, values in columns))
    if len(rows) > SHOWN:
        print(f"  ... {len(rows) - SHOWN} more element(s) where {names} differ")


def golden_difference(n, run, model, v):
    # Where the model differs from the golden by the checker's own rule: the exact run within
    # EXACT_REL of max(|golden|, |v|); a kernel set within the finding's bound at its element.
    # Finiteness is compared exactly either way.
    golden = run["golden"]
    if REWRITE["exact"]:
        return first_difference(model, golden, EXACT_REL * value_scale(run, v))
    e = first_difference(model, golden, math.inf)
    if e is None and n == REWRITE["finding_run"] and REWRITE["finding_index"] is not None:
        flat = 0
        for i, d in zip(REWRITE["finding_index"], out_dims(run)):
            flat = flat * d + i
        if flat < len(golden) and differs(model[flat], golden[flat], REWRITE["finding_bound"]):
            e = flat
    return e


def upstream_verdict(found, ran, results):
    first = None
    for n, (r, u) in enumerate(zip(ran, results)):
        run, (call, column) = RUNS[n], original_names(r)
        print(f"run {n}: {u['what']}")
        if u["ops"] is not None:
            print(f"  the rewritten program calls: {', '.join(u['ops'])}")
        if u["failure"] is not None:
            print(f"  {u['failure']}")
            first = first or (u["failure"] + (f" at run {n}" if len(RUNS) > 1 else "") +
                              f", where {call} returns a result")
            continue
        out = u["out"]
        if out["shape"] != out_dims(run):
            print(f"  the rewritten program returns {out['dtype']} {out['shape']}, the call {out_dims(run)}")
            first = first or f"the rewritten program returns shape {out['shape']}, the call {out_dims(run)}"
            continue
        tol = tolerance(DTYPE) * value_scale(run, r["v"])
        rewritten, original = out["values"], r["out"].double().flatten().tolist()
        columns = [("rewritten", rewritten), (column, original), ("golden", run["golden"])]
        if "output" in MODEL_RUNS[n]:
            columns.append(("model", MODEL_RUNS[n]["output"]))
        print(f"  the rewritten program returns {out['dtype']}; beside {call}, the golden and sdpacheck's model:")
        side_by_side(run, columns, tol)
        for other, values, name in ((column, original, call), ("golden", run["golden"], "sdpacheck's golden")):
            e = first_difference(rewritten, values, tol)
            if e is not None and first is None:
                first = (f"the rewritten program differs from {name} at {where(n, run, e)}: "
                         f"rewritten {fmt(rewritten[e])}, {other} {fmt(values[e])}")
    if first is not None:
        return "REPRODUCED: " + first + original_note(found)
    model = model_summary(ran)
    return ("NOT REPRODUCED: the rewritten program agrees with PyTorch's original call and sdpacheck's golden" +
            (f"; {REWRITE['subject']} {model}" if model else "") +
            original_note(found))


def model_summary(ran):
    # How the model departs from the original call, for a verdict on the upstream run; "" when it does not.
    for n, r in enumerate(ran):
        m = MODEL_RUNS[n] if n < len(MODEL_RUNS) else {}
        if "error" in m:
            return f"fails: {m['error']}"
        if "output" not in m:
            continue
        original = r["out"].double().flatten().tolist()
        e = first_difference(m["output"], original, tolerance(DTYPE) * value_scale(RUNS[n], r["v"]))
        if e is not None:
            return (f"differs from the original call at {where(n, RUNS[n], e)}: model {fmt(m['output'][e])}, "
                    f"{original_names(r)[1]} {fmt(original[e])}")
    return "fails: " + REWRITE["error"] if REWRITE["error"] else ""


def original_note(found):
    return "; PyTorch's original call itself differs from the golden: " + "; ".join(found) if found else ""


def model_verdict(found, ran):
    subject = REWRITE["subject"]
    call = original_names(ran[0])[0] if ran else "PyTorch's original call"
    if REWRITE["error"] is not None:
        print(f"  {subject}: {REWRITE['error']}")
        return f"REPRODUCED IN MODEL: {subject} fails: {REWRITE['error']}, where {call} returns a result" + \
            original_note(found)
    failed = against_call = against_golden = None
    for n, r in enumerate(ran):
        run, m = RUNS[n], MODEL_RUNS[n]
        call, column = original_names(r)
        on = f" on {REWRITE['kernels']}" if REWRITE["rewrote"] else ""
        print(f"run {n}: {subject}{on}, beside {call} and the golden:")
        if "error" in m:
            print(f"  the model fails: {m['error']}")
            failed = failed or f"fails at run {n}: {m['error']}, where {call} returns a result"
            continue
        model, original = m["output"], r["out"].double().flatten().tolist()
        if len(original) != len(model):
            print(f"  {call} returned {len(original)} values, the model {len(model)}: not compared")
            continue
        tol = tolerance(DTYPE) * value_scale(run, r["v"])
        side_by_side(run, [("model", model), (column, original), ("golden", run["golden"])], tol)
        e = first_difference(model, original, tol)
        if e is not None and against_call is None:
            against_call = f"differs from {call} at {where(n, run, e)}: model {fmt(model[e])}, {column} {fmt(original[e])}"
        g = golden_difference(n, run, model, r["v"])
        if g is not None and against_golden is None:
            against_golden = (f"differs from sdpacheck's golden at {where(n, run, g)}: model {fmt(model[g])}, "
                              f"golden {fmt(run['golden'][g])}, {column} {fmt(original[g])}")
    for what in (failed, against_call, against_golden):
        if what is not None:
            return f"REPRODUCED IN MODEL: {subject} {what}" + original_note(found)
    return (f"NOT REPRODUCED IN MODEL: {subject} agrees with {call} and sdpacheck's golden at every element; "
            f"the finding ({REWRITE['finding']}) is not in the output values" + original_note(found))


def rewrite_verdict(found, ran):
    where = "the rewrite" if REWRITE["rewrote"] else "the target's kernels"
    print(f"\nThe finding lies in {where}: {REWRITE['finding']}")
    for line in REWRITE["deviations"]:
        print(f"  note: {line}")
    print("The target's upstream code (sdpacheck's semantics pages):")
    for line in UPSTREAM_ENTRY_POINTS:
        print(f"  - {line}")
    if UPSTREAM_PROBES:
        print("Upstream modules here:")
        probe_upstream()
    results, why = run_upstream(ran)
    if results is not None:
        return upstream_verdict(found, ran, results)
    print(f"{why}: ran the original call only; {REWRITE['stands_for']}")
    return model_verdict(found, ran)
)py";

std::string finding_line(const Finding& f) {
  return std::string(verdict_name(f.verdict)) + " [" + check_name(f.check) + "] on " +
         (f.kernel_set.empty() ? std::string("the exact kernels") : "kernel set " + f.kernel_set) + ", run " +
         std::to_string(f.run) + ": " + one_line(f.detail);
}

void write_graph_comment(std::ostream& o, const std::string& graph) {
  o << "# The rewritten graph, as sdpacheck's checker ran it:\n";
  std::istringstream lines(graph);
  std::string line;
  while (std::getline(lines, line)) o << "#   " << line << "\n";
}

void write_model_runs(std::ostream& o, const RewriteRun& r) {
  o << "# sdpacheck's model of the rewrite at each runtime size ([batch..., Hq, Lq, Ev], flat)\n"
    << "MODEL_RUNS = [\n";
  for (const auto& run : r.runs) {
    if (!run.out) {
      o << "    {\"error\": " << py_str(one_line(run.error)) << "},\n";
      continue;
    }
    const size_t ev = run.out->shape.empty() ? 1 : static_cast<size_t>(std::max<int64_t>(run.out->shape.back(), 1));
    o << "    {\"output\": [";
    for (size_t i = 0; i < run.out->data.size(); ++i)
      o << (i % ev % 4 == 0 ? "\n        " : " ") << py_float(run.out->data[i]) << ",";
    o << "\n    ]},\n";
  }
  o << "]\n";
}

void write_upstream_constants(std::ostream& o, const CorpusEntry& e, const UpstreamRepro& u) {
  o << "UPSTREAM_ENTRY_POINTS = [\n";
  for (const auto& line : u.entry_points) o << "    " << py_str(line) << ",\n";
  if (u.entry_points.empty()) o << "    " << py_str("target " + e.target + " names no upstream entry point") << ",\n";
  o << "]\n"
    << "UPSTREAM_PROBES = " << py_strs(u.probes) << "\n";
  std::string not_run = u.not_run;
  if (u.python.empty() && not_run.empty())
    not_run = "target " + e.target + " names no upstream code for the script to run";
  o << "UPSTREAM_NOT_RUN = " << (u.python.empty() ? py_str(not_run) : "None") << "\n";
}

}  // namespace

void write_rewrite_constants(std::ostream& o, const CorpusEntry& e, const RewriteRun* rewrite) {
  if (!rewrite || !rewrite->applies) {
    o << "REWRITE = None  # the finding is not in a rewrite: the script makes the original call only\n";
    return;
  }
  const RewriteRun& r = *rewrite;
  const UpstreamRepro& u = r.upstream;
  o << "\n# --- The rewrite ---\n"
    << "# The finding lies in the target's pipeline. Where the target's upstream code is installed the\n"
    << "# script exports the call, runs the upstream pass and the rewritten program (in a child process)\n"
    << "# and compares it with PyTorch's original call and the golden. Where it is not, it says so and\n"
    << "# sets sdpacheck's model of the rewrite (its output below, as the checker computed it) beside\n"
    << "# PyTorch's call. Last line: REPRODUCED / NOT REPRODUCED (upstream ran), or REPRODUCED IN MODEL /\n"
    << "# NOT REPRODUCED IN MODEL (it did not).\n";
  if (!r.rewritten_graph.empty()) write_graph_comment(o, r.rewritten_graph);
  const Finding* f = r.finding ? &*r.finding : nullptr;
  const std::string kernels =
      r.kernel_set.empty() ? "the exact kernels (float64)" : "kernel set " + r.kernel_set + " (in the case dtype)";
  std::string model = u.model;
  if (model.empty()) model = r.new_ops.empty() ? std::string("the rewritten graph") : r.new_ops.front();
  // What the model's result stands for, in the script's words.
  const std::string subject = r.rewrote ? "sdpacheck's model of the rewrite (" + model + ")"
                                        : "sdpacheck's run of kernel set " + r.kernel_set + " on the graph the passes kept";
  const std::string stands_for =
      r.rewrote ? "the rewrite's result is sdpacheck's model of " + model
                : "the target's result is kernel set " + r.kernel_set + "'s on the graph the passes kept, as sdpacheck runs it";
  o << "REWRITE = {\n"
    << "    \"finding\": " << py_str(f ? finding_line(*f) : std::string("(none)")) << ",\n"
    << "    \"model\": " << py_str(model) << ",\n"
    << "    \"subject\": " << py_str(subject) << ",\n"
    << "    \"stands_for\": " << py_str(stands_for) << ",\n"
    << "    \"kernels\": " << py_str(kernels) << ",\n"
    << "    \"rewrote\": " << (r.rewrote ? "True" : "False") << ",  # the passes changed the graph (or raised)\n"
    << "    \"exact\": " << (r.kernel_set.empty() ? "True" : "False")
    << ",  # the model ran on the exact kernels (a soundness finding)\n"
    << "    \"error\": " << (r.error.empty() ? "None" : py_str(one_line(r.error)))
    << ",  # why the model has no output at all\n"
    << "    \"finding_run\": " << (f ? f->run : 0) << ",\n"
    << "    \"finding_index\": " << (f && !f->index.empty() ? py_ints(f->index) : "None") << ",\n"
    << "    \"finding_bound\": " << py_float(f ? f->bound : 0.0) << ",  # the checker's bound at that element\n"
    << "    \"new_ops\": " << py_strs(r.new_ops) << ",  # ops the rewrite put in the graph\n"
    << "    \"deviations\": " << py_strs(u.deviations) << ",\n"
    << "}\n"
    << "EXACT_REL = 1e-9  # the checker's soundness rule: |model - golden| <= 1e-9 of max(|golden|, |v|)\n";
  write_model_runs(o, r);
  write_upstream_constants(o, e, u);
}

void write_rewrite_body(std::ostream& o, const RewriteRun* rewrite) {
  if (!rewrite || !rewrite->applies) return;
  o << kUpstreamBody;
  if (!rewrite->upstream.python.empty())
    o << "\n\n# --- The target's upstream pipeline ---\n" << rewrite->upstream.python;
  o << kCompareBody;
}

}  // namespace sdpa
