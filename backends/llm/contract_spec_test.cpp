// The independent contract spec against the contract guard: they agree rule
// by rule on generated cases, and a guard that evaluates one rule wrongly,
// or has one switched off, disagrees with the spec on that rule.
#include "backends/llm/contract_spec.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "backends/all_targets.h"
#include "backends/llm/replace_sdpa_pass.h"
#include "generators/case_gen.h"

namespace sdpa::llm {
namespace {

std::vector<Case> generated_cases(int n, uint64_t seed) {
  TargetRegistry registry;
  register_all_targets(registry);
  CaseSpace space = registry.make("llm", {})->case_space();
  auto gen = gen_case(GenPolicy::defaults(), space);
  std::vector<Case> out;
  for (int i = 0; i < n; ++i) {
    rc::Random random(seed * 1000003 + static_cast<uint64_t>(i));
    out.push_back(gen(random, i % 101).value());
  }
  return out;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = generated_cases(3000, 77);
  return c;
}

std::vector<RuleOutcome> guard_rules(const Case& c, const PassConfig& cfg) {
  Graph g = sdpa_entry_graph(c);
  ReplaceSdpaWithCustomSdpaPass pass(cfg);
  for (const Node& n : g.nodes)
    if (n.op == kSdpaOp) return pass.contract_guard(g, n, c.shape_env()).rules;
  return {};
}

std::string outcomes(const std::vector<RuleOutcome>& rules) {
  std::string s;
  for (const auto& r : rules) s += r.rule + (r.passed ? " holds; " : " FAILS (" + r.detail + "); ");
  return s;
}

// Rules on which the guard and the spec differ, by name and outcome.
std::set<std::string> disagreements(const Case& c, const PassConfig& cfg) {
  auto spec = contract_spec(c, cfg.assume_causal_mask, cfg.revision);
  auto guard = guard_rules(c, cfg);
  std::set<std::string> out;
  std::map<std::string, bool> g;
  for (const auto& r : guard) g[r.rule] = r.passed;
  for (const auto& r : spec) {
    auto it = g.find(r.rule);
    if (it == g.end() || it->second != r.passed) out.insert(r.rule);
    if (it != g.end()) g.erase(it);
  }
  for (const auto& [rule, passed] : g) out.insert(rule);  // evaluated by the guard only
  return out;
}

PassConfig contract(bool assume_causal = false) {
  PassConfig cfg;
  cfg.policy = GuardPolicy::contract;
  cfg.assume_causal_mask = assume_causal;
  return cfg;
}

TEST(ContractSpec, AgreesWithTheContractGuardRuleByRule) {
  int breaking = 0;
  for (bool assume_causal : {false, true})
    for (const Case& c : cases()) {
      auto d = disagreements(c, contract(assume_causal));
      EXPECT_TRUE(d.empty()) << case_summary(c) << "\n spec:  " << outcomes(contract_spec(c, assume_causal))
                             << "\n guard: " << outcomes(guard_rules(c, contract(assume_causal)));
      for (const auto& r : contract_spec(c, assume_causal)) breaking += !r.passed;
      if (HasFailure()) return;
    }
  EXPECT_GT(breaking, 1000);  // the sample breaks rules, not only passes them
}

// Each ExecuTorch tree: the dtype rule follows its custom_sdpa, in the
// spec and the guard alike, and an earlier tree's spec breaks it on the
// half-precision calls main takes.
TEST(ContractSpec, AgreesWithTheGuardOnEveryExecuTorchTree) {
  for (const auto& [name, revision] : et_revisions()) {
    PassConfig cfg = contract();
    cfg.revision = revision;
    int half = 0, half_refused = 0;
    for (const Case& c : cases()) {
      auto d = disagreements(c, cfg);
      EXPECT_TRUE(d.empty()) << name << ": " << case_summary(c);
      if (HasFailure()) return;
      if (c.dtype != DType::f16 && c.dtype != DType::bf16) continue;
      ++half;
      for (const auto& r : contract_spec(c, false, revision)) half_refused += r.rule == "dtype" && !r.passed;
    }
    ASSERT_GT(half, 100) << name;
    EXPECT_EQ(half_refused, revision.float_only ? half : 0) << name;
  }
}

struct Wrong {
  std::string rule;
  PassConfig cfg;
};

// Each wrong guard disagrees with the spec on its own rule, and only there.
TEST(ContractSpec, SeesAGuardThatEvaluatesARuleWrongly) {
  std::vector<Wrong> wrong;
  for (ContractRule r : {ContractRule::causal_lengths, ContractRule::unmasked_lengths}) {
    PassConfig cfg = contract();
    cfg.misevaluated = r;
    wrong.push_back({r == ContractRule::causal_lengths ? "causal-lengths" : "unmasked-lengths", cfg});
  }
  for (ContractRule r : {ContractRule::dropout, ContractRule::mask_shape}) {
    PassConfig cfg = contract();
    cfg.weakened = r;
    wrong.push_back({r == ContractRule::dropout ? "dropout" : "mask-shape", cfg});
  }
  for (const auto& w : wrong) {
    int seen = 0;
    for (const Case& c : cases()) {
      auto d = disagreements(c, w.cfg);
      seen += d.count(w.rule) > 0;
      d.erase(w.rule);
      EXPECT_TRUE(d.empty()) << w.rule << ": " << case_summary(c);
    }
    EXPECT_GT(seen, 0) << w.rule;
  }
}

TEST(ContractSpec, DecidesSizeRulesAtEverySizeInRangeNotOnTheHint) {
  Case c;
  c.batch = {SymExpr(1)};
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s0") + SymExpr::symbol("sp");
  c.symbols = {{"s0", {2, 1, 8}}, {"sp", {0, 0, 100000}}};  // hint: Lq == Lkv
  auto rules = contract_spec(c, false);
  ASSERT_EQ(rules.back().rule, "unmasked-lengths");
  EXPECT_FALSE(rules.back().passed);
  EXPECT_NE(rules.back().detail.find("sp = 100000"), std::string::npos) << rules.back().detail;
  c.is_causal = true;
  rules = contract_spec(c, false);
  EXPECT_EQ(rules[5].rule, "query-length");
  EXPECT_TRUE(rules[5].passed) << rules[5].detail;  // s0 >= 1 over its range
  EXPECT_EQ(rules[6].rule, "causal-lengths");
  EXPECT_TRUE(rules[6].passed) << rules[6].detail;
  c.symbols["s0"].min = 0;  // Lq = 0 in range: custom_sdpa would divide by zero there
  rules = contract_spec(c, false);
  EXPECT_FALSE(rules[5].passed);
  EXPECT_NE(rules[5].detail.find("s0 = 0"), std::string::npos) << rules[5].detail;
}

TEST(ContractSpec, SizesToTryEnumeratesSmallBoxesAndCornersOfLargeOnes) {
  EXPECT_EQ(sizes_to_try({{"a", {1, 1, 3}}, {"b", {1, 2, 3}}}).size(), 6u);
  auto corners = sizes_to_try({{"a", {1, 1, 5000}}, {"b", {1, 2, 3}}});
  EXPECT_EQ(corners.size(), 4u);
  EXPECT_EQ(sizes_to_try({}).size(), 1u);
}

}  // namespace
}  // namespace sdpa::llm
