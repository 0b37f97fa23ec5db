// The Python adapter library's sizes against sdpacheck's own: on drawn
// expressions and shape environments, python/sdpacheck_adapter prints each
// size, bounds it, and answers "statically known" and "on the hints"
// exactly as harness/ir/symbolic.h and shape_env.h do, so a guard ported
// to Python decides as its C++ model. And its data streams: a kernel in
// Python draws the dropout mask sdpacheck's kernels draw.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "harness/case/tensor_data.h"
#include "harness/ir/graph_json.h"

namespace sdpa {
namespace {

using nlohmann::json;

constexpr const char* kPython = "/usr/bin/python3";

// Reads a JSON list of cases on stdin; prints, for each, [str, [lo, hi], known, on_hint] of its fact.
constexpr const char* kScript = R"(
import json, sys
sys.path.insert(0, sys.argv[1])
import sdpacheck_adapter as sa
from sdpacheck_adapter.graph_json import shape_env_from_json
out = []
for c in json.load(sys.stdin):
    env = shape_env_from_json(c["env"])
    lhs, rhs = sa.SymExpr.parse(c["lhs"]), sa.SymExpr.parse(c["rhs"])
    f = sa.Fact(lhs, c["rel"], rhs)
    out.append([str(lhs), list(env.range(lhs - rhs)), env.statically_known(f), env.on_hint(f)])
print(json.dumps(out))
)";

// Runs `script` (with the library's folder as argv[1]) on `input`; its stdout parsed as JSON.
json run_python(const std::string& script, const json& input) {
  const std::string dir = testing::TempDir(), tag = std::to_string(getpid());
  const std::string in = dir + "/library_in_" + tag + ".json", py = dir + "/library_" + tag + ".py";
  std::ofstream(in) << input.dump();
  std::ofstream(py) << script;
  const char* src = std::getenv("SDPACHECK_SOURCE_DIR");
  const std::string cmd = std::string(kPython) + " " + py + " " + (src ? src : ".") + "/python < " + in;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return nullptr;
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  const int status = pclose(p);
  std::remove(in.c_str());
  std::remove(py.c_str());
  if (status != 0) ADD_FAILURE() << text;
  return status == 0 ? json::parse(text) : json(nullptr);
}

std::string expression(std::mt19937& rng) {
  static const char* atoms[] = {"s0", "s1", "u0", "2", "1", "3*s0", "(s1 - 1)", "s0*s1"};
  static const char* ops[] = {" + ", " - ", " * "};
  std::string e = atoms[rng() % 8];
  for (int i = 0, n = static_cast<int>(rng() % 3); i < n; ++i) e += std::string(ops[rng() % 3]) + atoms[rng() % 8];
  return e;
}

TEST(AdapterLibrary, SizesAndFactsDecideAsSdpacheckDoes) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  std::mt19937 rng(20261208);
  json cases = json::array();
  std::vector<std::pair<Fact, ShapeEnv>> facts;
  for (int i = 0; i < 300; ++i) {
    std::map<std::string, SymbolInfo> symbols;
    for (const char* s : {"s0", "s1", "u0"}) {
      const int64_t lo = static_cast<int64_t>(rng() % 4), hi = lo + static_cast<int64_t>(rng() % 6);
      symbols[s] = {std::string(s) == "u0" ? std::nullopt : std::optional<int64_t>(lo + (hi - lo) / 2), lo, hi};
    }
    const Rel rel = static_cast<Rel>(rng() % 6);
    Fact f{SymExpr::parse(expression(rng)), rel, SymExpr::parse(expression(rng))};
    ShapeEnv env(symbols);
    cases.push_back({{"lhs", f.lhs.str()}, {"rhs", f.rhs.str()}, {"rel", rel_str(rel)}, {"env", shape_env_to_json(env)}});
    facts.emplace_back(f, env);
  }
  const json out = run_python(kScript, cases);
  ASSERT_EQ(out.size(), facts.size());
  int known = 0, on_hint = 0;
  for (size_t i = 0; i < facts.size(); ++i) {
    const auto& [f, env] = facts[i];
    SCOPED_TRACE(f.str() + " over " + shape_env_to_json(env).dump());
    EXPECT_EQ(out[i][0], f.lhs.str());
    const auto [lo, hi] = env.range(f.lhs - f.rhs);
    EXPECT_EQ(out[i][1], json::array({lo, hi}));
    EXPECT_EQ(out[i][2], env.statically_known(f));
    const auto h = env.on_hint(f);
    EXPECT_EQ(out[i][3], h ? json(*h) : json(nullptr));
    known += env.statically_known(f);
    on_hint += h.value_or(false);
  }
  EXPECT_GT(known, 10);  // the draws reach both answers
  EXPECT_GT(on_hint, 10);
}

// Reads [[seed, name, index, p]...]; prints [bits, uniform01, kept] of each.
constexpr const char* kStreamScript = R"(
import json, sys
sys.path.insert(0, sys.argv[1])
import sdpacheck_adapter as sa
out = []
for seed, name, index, p in json.load(sys.stdin):
    s = sa.CounterStream(seed, name)
    out.append([str(s.bits(index)), s.uniform01(index), sa.dropout_keep(s, index, p)])
print(json.dumps(out))
)";

TEST(AdapterLibrary, DropoutStreamDrawsAsSdpacheckDoes) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  std::mt19937_64 rng(20261211);
  json draws = json::array();
  for (int i = 0; i < 400; ++i) {
    const uint64_t seed = i < 4 ? static_cast<uint64_t>(i) * 0x7fffffffffffffffULL : rng();
    const char* name = i % 3 == 0 ? "dropout" : i % 3 == 1 ? "q" : "special_k";
    draws.push_back({seed, name, rng() % 100000, (i % 10) / 10.0});
  }
  const json out = run_python(kStreamScript, draws);
  ASSERT_EQ(out.size(), draws.size());
  int kept = 0;
  for (size_t i = 0; i < draws.size(); ++i) {
    const CounterStream s(draws[i][0].get<uint64_t>(), draws[i][1].get<std::string>());
    const uint64_t index = draws[i][2].get<uint64_t>();
    EXPECT_EQ(out[i][0].get<std::string>(), std::to_string(s.bits(index))) << draws[i].dump();
    EXPECT_EQ(out[i][1].get<double>(), s.uniform01(index)) << draws[i].dump();
    EXPECT_EQ(out[i][2].get<bool>(), dropout_keep(s, index, draws[i][3].get<double>())) << draws[i].dump();
    kept += out[i][2].get<bool>();
  }
  EXPECT_GT(kept, 100);  // both answers are reached
  EXPECT_LT(kept, 380);
}

}  // namespace
}  // namespace sdpa
