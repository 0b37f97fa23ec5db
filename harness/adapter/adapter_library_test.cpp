// The Python adapter library's sizes against sdpacheck's own: on drawn
// expressions and shape environments, python/sdpacheck_adapter prints each
// size, bounds it, and answers "statically known" and "on the hints"
// exactly as harness/ir/symbolic.h and shape_env.h do, so a guard ported
// to Python decides as its C++ model.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

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
  const std::string dir = testing::TempDir(), in = dir + "/sizes_in_" + std::to_string(getpid()) + ".json";
  const std::string script = dir + "/sizes_" + std::to_string(getpid()) + ".py";
  std::ofstream(in) << cases.dump();
  std::ofstream(script) << kScript;
  const char* src = std::getenv("SDPACHECK_SOURCE_DIR");
  const std::string cmd = std::string(kPython) + " " + script + " " + (src ? src : ".") + "/python < " + in;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << text;
  std::remove(in.c_str());
  std::remove(script.c_str());
  const json out = json::parse(text);
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

}  // namespace
}  // namespace sdpa
