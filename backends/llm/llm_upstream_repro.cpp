#include "backends/llm/llm_upstream_repro.h"

namespace sdpa::llm {
namespace {

// upstream_program for the script (harness/check/upstream_repro.h): the
// export and the pass as ExecuTorch's own test of the pass runs them
// (extension/llm/export/test/test_export_passes.py: export(m, args,
// strict=True).module(), then the pass on that GraphModule, then the
// GraphModule called on the same inputs).
constexpr const char* kProgram = R"py(
def upstream_program(module, inputs):
    try:
        import executorch
    except ImportError:
        raise Unavailable("ExecuTorch not installed")
    version = package_version(executorch, "executorch")
    try:
        # Registers llama.custom_sdpa: its AOT library (custom_ops_aot_lib) and Meta kernels.
        # The pass imports it too; importing it first names a missing library before the pass runs.
        from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401
        from executorch.extension.llm.export.export_passes import ReplaceSDPAWithCustomSDPAPass
    except Exception as e:
        raise Unavailable(f"ExecuTorch {version} is installed, but its LLM export pass or custom ops "
                          f"do not import ({type(e).__name__}: {first_line(e)})")
    gm = in_stage("torch.export.export", lambda: export_call(module, inputs).module())
    rewritten = in_stage("ReplaceSDPAWithCustomSDPAPass",
                         lambda: ReplaceSDPAWithCustomSDPAPass(ASSUME_CAUSAL_MASK)(gm).graph_module)
    return (f"ExecuTorch {version}: torch.export.export(..., strict=True).module(), "
            f"ReplaceSDPAWithCustomSDPAPass(assume_causal_mask={ASSUME_CAUSAL_MASK}) on it, "
            f"then the rewritten GraphModule called eagerly"), rewritten
)py";

}  // namespace

UpstreamRepro llm_upstream_repro(const Options& o) {
  UpstreamRepro u;
  u.model = "llama.custom_sdpa";
  u.entry_points = {
      "executorch.extension.llm.export.export_passes.ReplaceSDPAWithCustomSDPAPass(assume_causal_mask=False): "
      "an exir ExportPass, public in ExecuTorch main (extension/llm/export/export_passes.py); no guard on "
      "lengths, heads, dropout or mask shape, start_pos always 0 (semantics llm-and-cuda.md section 2.1)",
      "executorch.extension.llm.custom_ops.custom_ops: registers llama.custom_sdpa (op_sdpa_aot.cpp through "
      "the custom_ops_aot_lib library, Meta kernels in custom_ops.py; section 1.1); the pass imports it"};
  u.probes = {"executorch.extension.llm.export.export_passes", "executorch.extension.llm.custom_ops.custom_ops"};
  const bool assume_causal = o.count("assume_causal_mask") && o.at("assume_causal_mask") == "true";
  u.python = std::string("ASSUME_CAUSAL_MASK = ") + (assume_causal ? "True" : "False") +
             "  # the pass's constructor argument (option assume_causal_mask)\n" + kProgram;
  auto option = [&](const std::string& key) { return o.count(key) ? o.at(key) : std::string("none"); };
  // The script's module is the plain call (SdpaCall); another entry form is not built.
  if (o.count("entry") && o.at("entry") != "sdpa") {
    u.python.clear();
    u.not_run = "the script builds the plain aten SDPA call only (entry=sdpa), not entry=" + o.at("entry");
  }
  if (option("guard") == "contract")
    u.deviations.push_back(
        "option guard=contract: sdpacheck's intended guard design (semantics passes.md section 3), which the "
        "upstream pass does not have: upstream rewrites every 4-D call, this one included");
  if (option("call_form") == "keyword")
    u.deviations.push_back("option call_form=keyword: the node passes attn_mask, dropout_p and is_causal by "
                           "keyword, which torch.export never writes: the script's exported node passes them "
                           "by position, so the pass reads them there");
  if (option("executorch") != "none" && option("executorch") != "main")
    u.deviations.push_back("option executorch=" + option("executorch") +
                           ": the model is ExecuTorch's tree of that date (the option's help names the "
                           "commits it lacks); the script runs the ExecuTorch installed, whose version it "
                           "prints: a build of that date shows the model's behaviour");
  for (const char* key : {"weaken", "miseval", "kernel_mutant"})
    if (option(key) != "none")
      u.deviations.push_back(self_test_deviation(key, option(key)));
  return u;
}

}  // namespace sdpa::llm
