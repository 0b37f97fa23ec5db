// repro's run of the rewrite on corpus entries: which findings lie in the
// rewrite, what the model computes there (the checker's rewritten graph on
// the kernels the finding names), and what the script embeds of it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "backends/all_targets.h"
#include "harness/campaign/replay.h"
#include "harness/campaign/rewrite_run.h"
#include "oracles/dual_oracle.h"
#include "reports/pytorch_repro.h"
#include "reports/python_text.h"

namespace sdpa {
namespace {

struct Fixture {
  TargetRegistry registry;
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  Fixture() { register_all_targets(registry); }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

CorpusEntry corpus(const std::string& name) {
  const char* src = std::getenv("SDPACHECK_SOURCE_DIR");
  return read_replay_entry(std::string(src ? src : ".") + "/corpus/" + name, fixture().registry);
}

RewriteRun rewrite_of(const CorpusEntry& e) {
  return run_rewrite(e, fixture().registry, *fixture().reference, nullptr);
}

std::string script_of(const CorpusEntry& e, const RewriteRun& r) {
  return pytorch_repro_script(e, "test", fixture().reference->name(), run_goldens(e.c, *fixture().reference), &r);
}

// Lq 1, Lkv 2, no mask: custom_sdpa attends key 0 only (start_pos 0 + Lq), so
// its output is v[0] exactly, where aten averages both keys.
TEST(RewriteRunOfCorpus, AnUnsoundLlmRewriteRunsCustomSdpaOnTheExactKernels) {
  const CorpusEntry e = corpus("llm/llm-unsound-rewrite-9c7b702d-88fbd83d.json");
  const RewriteRun r = rewrite_of(e);
  ASSERT_TRUE(r.applies);
  ASSERT_TRUE(r.finding);
  EXPECT_EQ(r.finding->verdict, Verdict::unsound_rewrite);
  EXPECT_TRUE(r.kernel_set.empty());
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_NE(std::find(r.new_ops.begin(), r.new_ops.end(), "llama.custom_sdpa.default"), r.new_ops.end());
  EXPECT_NE(r.rewritten_graph.find("llama.custom_sdpa.default"), std::string::npos);
  ASSERT_EQ(r.runs.size(), 1u);
  ASSERT_TRUE(r.runs[0].out) << r.runs[0].error;
  const CaseTensors t = make_case_tensors(e.c, {});
  ASSERT_EQ(r.runs[0].out->data.size(), 1u);
  EXPECT_EQ(r.runs[0].out->data[0], t.v.data[0]);
  const Golden g = run_goldens(e.c, *fixture().reference)[0];
  EXPECT_GT(std::fabs(r.runs[0].out->data[0] - g.out.data[0]), 0.1);
  EXPECT_EQ(r.upstream.model, "llama.custom_sdpa");
  EXPECT_TRUE(r.upstream.deviations.empty());  // guard=upstream, no self-test option

  const std::string script = script_of(e, r);
  EXPECT_NE(script.find("MODEL_RUNS = ["), std::string::npos);
  EXPECT_NE(script.find(py_float(t.v.data[0])), std::string::npos);
  EXPECT_NE(script.find("def upstream_program(module, inputs):"), std::string::npos);
  EXPECT_NE(script.find("ReplaceSDPAWithCustomSDPAPass(ASSUME_CAUSAL_MASK)"), std::string::npos);
  EXPECT_NE(script.find("UPSTREAM_NOT_RUN = None"), std::string::npos);
  // The rewritten graph, as a comment.
  EXPECT_NE(script.find("\n#       %custom_sdpa : f32[1, 1, 1, 1] = call_function[target=llama.custom_sdpa.default]"),
            std::string::npos);
}

TEST(RewriteRunOfCorpus, NoRewriteFindingMeansTheOriginalCallOnly) {
  for (const char* name : {"aten/aten-pass-gqa-head-mapping.json",
                           "aten/aten-known-divergence-libtorch-fully-masked.json",  // passes off
                           "llm/llm-rejected-contract-key-truncation.json",
                           "cuda/cuda-unsupported-flash-bottom-right-causal.json"}) {
    const CorpusEntry e = corpus(name);
    const RewriteRun r = rewrite_of(e);
    EXPECT_FALSE(r.applies) << name;
    const std::string script = script_of(e, r);
    EXPECT_NE(script.find("REWRITE = None"), std::string::npos) << name;
    EXPECT_EQ(script.find("MODEL_RUNS"), std::string::npos) << name;
    EXPECT_EQ(script.find("def rewrite_verdict"), std::string::npos) << name;
  }
}

TEST(RewriteRunOfCorpus, APassThatRaisesLeavesTheModelNoOutput) {
  const RewriteRun r = rewrite_of(corpus("llm/llm-unexpected-error-599e954b-edbd99af.json"));
  ASSERT_TRUE(r.applies);
  EXPECT_TRUE(r.runs.empty());
  EXPECT_NE(r.error.find("pass replace-sdpa-with-custom-sdpa raised"), std::string::npos) << r.error;
}

// custom_sdpa's fatal "num_keys_for_causal_attention must be <= kvSize"
// (Lkv < start_pos + Lq), modelled as a kernel error: the run's error.
TEST(RewriteRunOfCorpus, AModelledAbortIsTheRunsError) {
  const RewriteRun r = rewrite_of(corpus("llm/llm-crash-4a41dfd9-e5f8985f.json"));
  ASSERT_TRUE(r.applies);
  ASSERT_FALSE(r.runs.empty());
  EXPECT_FALSE(r.runs[0].out);
  EXPECT_NE(r.runs[0].error.find("num_keys_for_causal_attention must be <= kvSize"), std::string::npos)
      << r.runs[0].error;
}

// A nan-mismatch on kernel set xnnpack: the model is that set's output, with
// the non-finite element the finding names, not the exact run's.
TEST(RewriteRunOfCorpus, AnAccuracyFindingRunsTheKernelSetItNames) {
  const CorpusEntry e = corpus("xnnpack/xnnpack-nan-mismatch-3443707f-cf7f925d.json");
  const RewriteRun r = rewrite_of(e);
  ASSERT_TRUE(r.applies);
  EXPECT_EQ(r.kernel_set, "xnnpack");
  ASSERT_EQ(r.runs.size(), e.c.runs().size());
  ASSERT_TRUE(r.runs[0].out) << r.runs[0].error;
  const Golden g = run_goldens(e.c, *fixture().reference)[0];
  bool nonfinite_where_golden_is_finite = false;
  for (size_t i = 0; i < g.out.data.size(); ++i)
    nonfinite_where_golden_is_finite |= std::isfinite(g.out.data[i]) && !std::isfinite(r.runs[0].out->data[i]);
  EXPECT_TRUE(nonfinite_where_golden_is_finite);
  const std::string script = script_of(e, r);
  EXPECT_NE(script.find("UPSTREAM_NOT_RUN = \"the SDPA ConvertToSDPAPass emits"), std::string::npos);
  EXPECT_EQ(script.find("def upstream_program"), std::string::npos);
  EXPECT_NE(script.find("executorch.backends.xnnpack._passes.convert_to_sdpa"), std::string::npos);
}

// A self-test option is named: upstream code is not expected to show the finding.
TEST(RewriteRunOfCorpus, ASelfTestMutantIsNamedAsADeviation) {
  const RewriteRun r = rewrite_of(corpus("aten/aten-unsound-rewrite-f935084d-0796cb77.json"));
  ASSERT_TRUE(r.applies);
  ASSERT_EQ(r.upstream.deviations.size(), 1u);
  EXPECT_NE(r.upstream.deviations[0].find("option mutant=causal-bottom-right"), std::string::npos);
  EXPECT_EQ(r.runs.size(), 2u);  // s0 = 1 and s0 = 2
}

}  // namespace
}  // namespace sdpa
