#include "backends/xnnpack/lift_scalars_pass.h"

#include <set>

#include "backends/xnnpack/pattern_entry.h"

namespace sdpa::xnnpack {

bool feeds_bmm_through_copies(const Graph& g, int index, const std::vector<std::vector<int>>& users) {
  std::vector<int> work{index};
  std::set<int> seen{index};
  while (!work.empty()) {
    const int n = work.back();
    work.pop_back();
    for (int user : users[static_cast<size_t>(n)]) {
      const std::string& op = g.nodes[user].op;
      if (op == kBmm) return true;
      if ((op == kExpandCopy || op == kViewCopy) && seen.insert(user).second) work.push_back(user);
    }
  }
  return false;
}

namespace {

// The scalar operand as a number: a float, an int or a bool (numbers.Number).
std::optional<double> number(const Arg& a) {
  if (const auto* d = std::get_if<double>(&a)) return *d;
  if (const auto* i = std::get_if<int64_t>(&a)) return static_cast<double>(*i);
  if (const auto* b = std::get_if<bool>(&a)) return *b ? 1.0 : 0.0;
  return std::nullopt;
}

std::string first_unused_constant(const Graph& g) {
  for (int i = 0;; ++i) {
    std::string name = "_tensor_constant_" + std::to_string(i);
    if (!g.constants.count(name) && g.find(name) < 0) return name;
  }
}

}  // namespace

Pass::Result LiftConstantScalarOperandsPass::run(const Graph& g, const ShapeEnv& env,
                                                 const RewriteControl& control) const {
  Result result;
  std::set<int> lift;
  const std::vector<std::vector<int>> users = g.users_of_each();
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != kMulScalar || n.args.size() != 2 || !std::holds_alternative<ValueRef>(n.args[0]) ||
        !number(n.args[1]))
      continue;
    GuardContext guard(env, "%" + n.name);
    guard.rule("scalar-operand", true, "mul.Scalar(tensor, number)");
    const DType in = g.info(std::get<ValueRef>(n.args[0])).dtype, out = n.outputs[0].dtype;
    bool ok = guard.rule("same-dtype", in == out,
                         std::string("input ") + dtype_name(in) + ", output " + dtype_name(out));
    if (ok && guarded_) {
      const bool feeds = feeds_bmm_through_copies(g, i, users);
      guard.rule("not-feeding-qk-bmm", !feeds,
                 feeds ? "reaches a bmm through expand_copy/view_copy: kept for ConvertToSDPAPass"
                       : "reaches no bmm through expand_copy/view_copy only");
    }
    Decision d = guard.finish();
    d.forced = !d.rewrite && control.rewrites(d);
    result.decisions.push_back(d);
    if (control.rewrites(d)) lift.insert(i);
  }
  GraphRewriter rw(g);
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[i];
    if (!lift.count(i)) {
      rw.copy(n);
      continue;
    }
    const ValueRef x = rw.map(std::get<ValueRef>(n.args[0]));
    const DType t = rw.out().info(x).dtype;
    // torch.tensor(value, dtype=input.dtype): a 0-dim buffer, rounded to the input's dtype.
    const std::string name = first_unused_constant(rw.out());
    ValueRef c = rw.out().constant(name, Tensor(t, {}, round_to(t, *number(n.args[1]))), {});
    rw.replace(n, {rw.out().call(kMulTensor, {x, c}, {}, n.outputs, n.name)});
  }
  result.graph = rw.finish();
  return result;
}

}  // namespace sdpa::xnnpack
