// The PyTorch script rebuilds exactly the tensors sdpacheck draws: its --dump
// output, run with Debian's python3-torch, equals make_case_tensors bit for bit
// for every distribution, dtype, layout, mask pattern and fill.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "harness/case/tensor_data.h"
#include "oracles/dual_oracle.h"
#include "reports/pytorch_repro.h"

namespace sdpa {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

bool python_has_torch() {
  static const bool has =
      std::system((std::string(kPython) + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
  return has;
}

std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  return out;
}

// An aten entry: a small case patched with `patch` (a JSON merge patch of "case").
CorpusEntry entry_with(const std::string& patch) {
  nlohmann::json c = {
      {"dtype", "f32"}, {"layout", "bhsd"}, {"batch", {2}}, {"q_heads", 2}, {"kv_heads", 2},
      {"q_len", 3}, {"kv_len", 5}, {"head_dim", 4}, {"value_dim", 3}, {"enable_gqa", false},
      {"is_causal", false}, {"dropout_p", 0.0}, {"scale", nullptr}, {"start_pos", 0},
      {"mask", nullptr}, {"symbols", nlohmann::json::object()}, {"runtime", nlohmann::json::array()},
      {"data", {{"seed", 7u}, {"distribution", "normal"}, {"magnitude", 1.0}}}};
  c.merge_patch(nlohmann::json::parse(patch));
  nlohmann::json e = {{"format", kCorpusFormat}, {"target", "aten"}, {"options", {{"guard", "upstream"}}},
                      {"expect", "pass"}, {"case", c}};
  return corpus_from_json(e, "test entry");
}

std::string torch_dtype(DType t) {
  switch (t) {
    case DType::f64: return "torch.float64";
    case DType::f16: return "torch.float16";
    case DType::bf16: return "torch.bfloat16";
    case DType::b8: return "torch.bool";
    default: return "torch.float32";
  }
}

std::string shape_text(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

// "dump RUN NAME DTYPE SHAPE VALUES..." lines, keyed by "RUN NAME".
std::map<std::string, std::vector<std::string>> parse_dump(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string tag, run, name, word;
    if (!(words >> tag >> run >> name) || tag != "dump") continue;
    auto& fields = out[run + " " + name];
    while (words >> word) fields.push_back(word);
  }
  return out;
}

void expect_same(const std::vector<std::string>& dumped, const Tensor& t, const std::string& what) {
  ASSERT_GE(dumped.size(), 2u) << what << " is missing from the dump";
  EXPECT_EQ(dumped[0], torch_dtype(t.dtype)) << what;
  EXPECT_EQ(dumped[1], shape_text(t.shape)) << what;
  ASSERT_EQ(dumped.size() - 2, t.data.size()) << what;
  for (size_t i = 0; i < t.data.size(); ++i) {
    const double got = std::strtod(dumped[i + 2].c_str(), nullptr);
    if (std::isnan(t.data[i]))
      EXPECT_TRUE(std::isnan(got)) << what << " element " << i << ": " << dumped[i + 2];
    else
      EXPECT_EQ(got, t.data[i]) << what << " element " << i;
  }
}

class PytorchReproDump : public testing::TestWithParam<const char*> {};

TEST_P(PytorchReproDump, RebuildsTheCaseTensorsExactly) {
  if (!python_has_torch()) GTEST_SKIP() << kPython << " has no torch";
  const CorpusEntry e = entry_with(GetParam());
  const auto reference = make_dual_oracle();
  // One file a process: ctest -j runs the cases side by side.
  const std::string path =
      testing::TempDir() + "pytorch_repro_dump_" + std::to_string(getpid()) + ".py";
  std::ofstream(path) << pytorch_repro_script(e, "test entry", reference->name(),
                                              run_goldens(e.c, *reference));
  const auto dump = parse_dump(run_command(std::string(kPython) + " " + path + " --dump"));
  std::remove(path.c_str());
  auto dumped = [&](const std::string& key) {
    auto it = dump.find(key);
    return it == dump.end() ? std::vector<std::string>{} : it->second;
  };
  const std::vector<Assignment> runs = e.c.runs();
  for (size_t n = 0; n < runs.size(); ++n) {
    const CaseTensors t = make_case_tensors(e.c, runs[n]);
    const std::string run = std::to_string(n) + " ";
    expect_same(dumped(run + "q"), t.q, "run " + run + "q");
    expect_same(dumped(run + "k"), t.k, "run " + run + "k");
    expect_same(dumped(run + "v"), t.v, "run " + run + "v");
    if (t.mask)
      expect_same(dumped(run + "mask"), *t.mask, "run " + run + "mask");
    else
      EXPECT_EQ(dump.count(run + "mask"), 0u);
  }
}

// Each row varies several things at once; together they cover every
// distribution, dtype, layout, mask pattern, mask dtype and fill. Under seeds
// 119 (f16) and 654 (bf16) torch's own float64 -> f16/bf16 conversion, which
// rounds twice through float32, gets an element of q, k or v wrong.
INSTANTIATE_TEST_SUITE_P(
    Cases, PytorchReproDump,
    testing::Values(
        R"({"mask": {"dtype": "bool", "shape": [2, 1, 3, 5], "pattern": "random", "param": 0.5, "fill": "-inf"}})",
        R"({"dtype": "f16", "layout": "bshd", "data": {"distribution": "uniform", "magnitude": 3.0},
            "mask": {"dtype": "f16", "shape": [3, 5], "pattern": "causal", "param": 0, "fill": "min"}})",
        R"({"dtype": "bf16", "data": {"distribution": "integers", "magnitude": 2.5},
            "mask": {"dtype": "bf16", "shape": [1, 3, 5], "pattern": "window", "param": 2, "fill": "-1e4"}})",
        R"({"dtype": "f64", "layout": "bshd", "data": {"distribution": "large", "magnitude": 1.0},
            "mask": {"dtype": "f32", "shape": [2, 2, 3, 5], "pattern": "padding", "param": 3, "fill": "min"}})",
        R"({"data": {"distribution": "integers", "magnitude": 16},
            "mask": {"dtype": "f32", "shape": [3, 5], "pattern": "full-row", "param": 0.7, "fill": "min"}})",
        R"({"dtype": "bf16", "layout": "bshd", "batch": [2, 1],
            "mask": {"dtype": "f32", "shape": [2, 1, 1, 3, 5], "pattern": "full-row", "param": 1.0, "fill": "-1e4"}})",
        R"({"dtype": "f16", "data": {"distribution": "large", "magnitude": 3000.0},
            "mask": {"dtype": "bool", "shape": [5], "pattern": "keep-all", "param": 0, "fill": "-inf"}})",
        R"({"dtype": "f16", "batch": [], "head_dim": 64, "value_dim": 64,
            "data": {"distribution": "uniform", "magnitude": 1e-4},
            "mask": {"dtype": "f16", "shape": [3, 5], "pattern": "padding", "param": 2, "fill": "-1e4"}})",
        R"({"dtype": "bf16", "layout": "bshd", "head_dim": 64, "data": {"distribution": "uniform", "magnitude": 0.001},
            "mask": {"dtype": "bf16", "shape": [3, 5], "pattern": "random", "param": 0.3, "fill": "min"}})",
        // Special values: elements and rows of q, k, v and an additive mask.
        R"({"data": {"special": {"value": "nan", "tensor": "k", "place": "row", "count": 2}}})",
        R"({"dtype": "f16", "data": {"special": {"value": "overflow", "tensor": "q", "place": "elements", "count": 3}}})",
        R"({"dtype": "bf16", "data": {"special": {"value": "huge", "tensor": "v", "place": "elements", "count": 2}}})",
        R"({"data": {"special": {"value": "-inf", "tensor": "mask", "place": "row", "count": 1}},
            "mask": {"dtype": "f32", "shape": [3, 5], "pattern": "random", "param": 0.5, "fill": "-1e4"}})",
        R"({"kv_len": "s0", "symbols": {"s0": {"hint": 5, "min": 1, "max": 8}},
            "runtime": [{"s0": 2}, {"s0": 7}], "data": {"distribution": "uniform", "magnitude": 2.0},
            "mask": {"dtype": "f32", "shape": [3, "s0"], "pattern": "window", "param": 1, "fill": "-inf"}})",
        // Serving masks: left padding, per-batch lengths over one and two batch dims, blocks with
        // partial edges (a symbolic Lkv moves them).
        R"({"mask": {"dtype": "bool", "shape": [3, 5], "pattern": "left-padding", "param": 2, "fill": "-inf"}})",
        R"({"mask": {"dtype": "f32", "shape": [2, 1, 1, 5], "pattern": "per-batch-padding", "param": 4, "fill": "-inf"}})",
        R"({"batch": [2, 2], "mask": {"dtype": "bf16", "shape": [2, 2, 1, 3, 5], "pattern": "per-batch-padding",
            "param": 5, "fill": "min"}, "dtype": "bf16"})",
        R"({"mask": {"dtype": "bool", "shape": [2, 2, 3, 5], "pattern": "block-sparse", "param": 0.5, "fill": "-inf",
            "block_rows": 2, "block_keys": 2}})",
        R"({"kv_len": "s0", "symbols": {"s0": {"hint": 5, "min": 1, "max": 9}}, "runtime": [{"s0": 9}, {"s0": 3}],
            "mask": {"dtype": "f32", "shape": [1, 3, "s0"], "pattern": "block-sparse", "param": 0.6, "fill": "-1e4",
            "block_rows": 1, "block_keys": 4}})",
        R"({"dtype": "f16", "data": {"seed": 119}})",
        R"({"dtype": "bf16", "layout": "bshd", "data": {"seed": 654}})"));

}  // namespace
}  // namespace sdpa
