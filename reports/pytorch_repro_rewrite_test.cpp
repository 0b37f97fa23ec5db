// repro's run of the rewrite on corpus entries: which findings lie in the
// rewrite, what the model computes there (the checker's rewritten graph on
// the kernels the finding names), and what the script embeds of it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

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

std::string source_dir() {
  const char* src = std::getenv("SDPACHECK_SOURCE_DIR");
  return src ? src : ".";
}

CorpusEntry corpus(const std::string& name) {
  return read_replay_entry(source_dir() + "/corpus/" + name, fixture().registry);
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
  const RewriteRun r = rewrite_of(corpus("llm/llm-unexpected-error-2400c5d7-edbd99af.json"));
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
  const CorpusEntry e = corpus("xnnpack/xnnpack-nan-mismatch-983c1a18-ffcaaae9.json");
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

// Every corpus file's script, written as `repro --pytorch` writes it, runs with
// Debian's python3-torch and ends with a true verdict line
// (reports/check_repro_scripts.py says which line each kind of finding must end with).
TEST(ReproCorpus, EveryCorpusFilesScriptRunsAndEndsWithATrueVerdict) {
  const std::string python = "/usr/bin/python3";
  if (std::system((python + " -c 'import torch' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << python << " has no torch";
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(testing::TempDir()) / ("repro_corpus_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string scripts;
  int in_pipeline = 0, files = 0;
  for (const std::string& file : collect_corpus_files({source_dir() + "/corpus"})) {
    const CorpusEntry e = read_replay_entry(file, fixture().registry);
    const RewriteRun r = rewrite_of(e);
    in_pipeline += r.applies;
    const fs::path script = dir / (fs::path(file).parent_path().filename().string() + "__" +
                                   fs::path(file).stem().string() + ".py");
    std::ofstream(script) << script_of(e, r);
    scripts += " '" + script.string() + "'";
    ++files;
  }
  EXPECT_GT(in_pipeline, 30);           // most corpus findings lie in a target's pipeline
  EXPECT_GT(files - in_pipeline, 10);   // the pass entries and oracle-level findings keep the original call
  std::string output;
  FILE* pipe = popen((python + " " + source_dir() + "/reports/check_repro_scripts.py" + scripts + " 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << output;
  EXPECT_EQ(output.find("FAIL "), std::string::npos) << output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sdpa
