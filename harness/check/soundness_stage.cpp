#include <algorithm>

#include "harness/check/case_checker.h"

namespace sdpa {

namespace check_internal {

// The first computing node the rewrite introduced (not a layout or dtype
// move): what an unsound rewrite replaced the original call with.
namespace {

bool is_move(const std::string& op) {
  static const std::set<std::string> moves = {
      "aten.transpose.int", "aten.permute.default", "aten.contiguous.default", "aten.clone.default",
      "aten.reshape.default", "aten.view.default", "aten._unsafe_view.default", "aten.expand.default",
      "aten.unsqueeze.default", "aten.squeeze.dims", "aten._to_copy.default"};
  return moves.count(op) > 0;
}

bool added_by_rewrite(const Graph& g0, const Node& n) {
  const int j = g0.find(n.name);
  return (j < 0 || g0.nodes[j].op != n.op) && n.op != "placeholder" && n.op != "get_attr";
}

std::string node_label(const Node& n) { return "%" + n.name + " (" + n.op + ")"; }

// A computing node the rewrite added that node `i` of g1 reads, directly or
// through added layout moves; "" when it reads none.
std::string added_input(const Graph& g0, const Graph& g1, int i) {
  for (const Arg& a : g1.nodes[i].args) {
    const ValueRef* v = std::get_if<ValueRef>(&a);
    int k = v ? v->node : -1;
    while (k >= 0 && added_by_rewrite(g0, g1.nodes[k]) && is_move(g1.nodes[k].op)) {
      const Node& move = g1.nodes[k];
      const ValueRef* in = move.args.empty() ? nullptr : std::get_if<ValueRef>(&move.args[0]);
      k = in ? in->node : -1;
    }
    if (k >= 0 && added_by_rewrite(g0, g1.nodes[k])) return node_label(g1.nodes[k]);
  }
  return "";
}

}  // namespace

std::string CaseChecker::rewrite_node(const Graph& g0, const Graph& g1) {
  for (const Node& n : g1.nodes)
    if (g0.find(n.name) < 0 && n.op != "placeholder" && n.op != "get_attr" && !is_move(n.op))
      return node_label(n);
  return "";
}

// The first node of the rewritten graph whose exact value differs from
// the node of the same name and op in the entry graph, unless it reads a
// computing node the rewrite added (a slice after a replaced call): the
// difference starts there, and that node is named. When every shared node
// agrees, the first computing node the rewrite added.
std::string CaseChecker::diverging_node(const Graph& g0, const Graph& g1, size_t r, bool& shared_agree) {
  Outcome a = execute(g0, target_.exact_kernels(), r, false, true);
  Outcome b = execute(g1, target_.exact_kernels(), r, true, true);
  if (!a.exec || !b.exec) return rewrite_node(g0, g1);
  for (size_t i = 0; i < g1.nodes.size(); ++i) {
    const Node& n = g1.nodes[i];
    int j = g0.find(n.name);
    if (j < 0 || g0.nodes[j].op != n.op || n.op == "placeholder" || n.op == "get_attr") continue;
    const auto &va = a.exec->values[j], &vb = b.exec->values[i];
    for (size_t o = 0; o < std::min(va.size(), vb.size()); ++o)
      if (!values_agree(va[o], vb[o])) {
        const std::string source = added_input(g0, g1, static_cast<int>(i));
        return source.empty() ? node_label(n) : source;
      }
  }
  shared_agree = true;
  return rewrite_node(g0, g1);
}

bool CaseChecker::values_agree(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) return false;
  const double tol = 1e-9 * std::max(a.max_abs(), 1e-300);
  for (int64_t k = 0; k < a.numel(); ++k) {
    if (std::isnan(a.data[k]) && std::isnan(b.data[k])) continue;
    if (std::isfinite(a.data[k]) != std::isfinite(b.data[k])) return false;
    if (std::isfinite(a.data[k]) ? std::fabs(a.data[k] - b.data[k]) > tol : a.data[k] != b.data[k])
      return false;
  }
  return true;
}

// A constant the rewrite changed (read from both graphs, paired by name
// in order). The finding is rounded-constant only when the change is a
// few ulps of its dtype, keeps the sign, the entry's value is not one of
// that dtype (rounding a value the dtype holds gives it back), and the
// rewritten graph with the entry's values put back refines the entry
// graph: the rounding alone explains the difference. Otherwise the change
// is added to the unsound-rewrite detail.
void CaseChecker::name_changed_constants(Finding& f, const Graph& g0, const Graph& g1) {
  constexpr double kRoundingUlps = 4;
  std::vector<GraphConstant> k0 = target_.constants(g0), k1 = target_.constants(g1);
  std::string changes;
  bool rounding = true;
  Graph restored = g1;
  std::vector<bool> used(k0.size(), false);
  for (const auto& c1 : k1) {
    size_t i = 0;
    while (i < k0.size() && (used[i] || k0[i].name != c1.name)) ++i;
    if (i == k0.size()) continue;
    used[i] = true;
    const GraphConstant& c0 = k0[i];
    if (c0.value == c1.value) continue;
    const double ulps = std::fabs(c1.value - c0.value) / ulp(c0.dtype, c0.value);
    const bool few_ulps = ulps <= kRoundingUlps;
    // A value the dtype holds: rounding it gives it back, so a few ulps off is no rounding.
    const bool held = few_ulps && round_to(c0.dtype, c0.value) == c0.value;
    rounding = rounding && few_ulps && !held && std::signbit(c0.value) == std::signbit(c1.value) &&
               put_back(restored, c1, c0.value);
    const std::string dtype = dtype_name(c0.dtype);
    changes += (changes.empty() ? "" : "; ") + c0.name + " " + number_str(c0.value) + " in the entry, " +
               number_str(c1.value) + " after the rewrite (" + number_str(ulps) + " ulp of " + dtype +
               (held ? ", a value " + dtype + " holds exactly" : "") + ")";
  }
  if (changes.empty()) return;
  if (rounding && refines(g0, restored)) {
    f.verdict = Verdict::rounded_constant;
    f.detail = changes + "; with the entry's value put back the rewrite refines the entry graph; effect: " +
               f.detail;
  } else {
    f.detail = changes + "; " + f.detail;
  }
}

// Sets constant `c` of graph g to `value` where the graph holds it: the
// first site to `value`, every other factor to 1.
bool CaseChecker::put_back(Graph& g, const GraphConstant& c, double value) {
  if (c.sites.empty()) return false;
  for (size_t k = 0; k < c.sites.size(); ++k)
    if (!put_back(g, c.sites[k], k == 0 ? value : 1.0)) return false;
  return true;
}

bool CaseChecker::put_back(Graph& g, const ConstantSite& s, double value) {
  if (!s.buffer.empty()) {
    auto it = g.constants.find(s.buffer);
    if (it == g.constants.end()) return false;
    // Unrounded on purpose: the entry computed with this value.
    std::fill(it->second.data.begin(), it->second.data.end(), value);
    return true;
  }
  int i = g.find(s.node);
  if (i < 0) return false;
  Node& n = g.nodes[i];
  if (!s.kwarg.empty()) {
    for (auto& [key, arg] : n.kwargs)
      if (key == s.kwarg) return arg = value, true;
    return false;
  }
  if (s.arg < 0 || s.arg >= static_cast<int>(n.args.size())) return false;
  n.args[s.arg] = value;
  return true;
}

std::string CaseChecker::number_str(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

// Verifies, checks invariants, and runs the rewrite exactly. False when a
// failure makes the later checks meaningless.
bool CaseChecker::check_rewritten(const Graph& g0, const Graph& g1) {
  if (auto problems = verify_graph(g1); !problems.empty()) {
    result_.findings.push_back(
        finding(Verdict::invalid_rewrite, Check::soundness, "rewritten graph: " + problems[0]));
    return false;
  }
  if (g1.outputs.size() != 1 || g1.info(g1.outputs[0]).dtype != g0.info(g0.outputs[0]).dtype) {
    result_.findings.push_back(finding(Verdict::dtype_mismatch, Check::soundness,
                                       "the rewritten graph's output dtype differs from the original's"));
    return false;
  }
  for (size_t r = 0; r < runs_.size(); ++r) {
    Outcome o = execute(g1, target_.exact_kernels(), r, true);
    if (!o.exec) {
      result_.findings.push_back(o.error);
      return false;
    }
    if (!judge(o.exec->outputs[0], r, "", nullptr, g1)) {
      Finding& f = result_.findings.back();
      bool shared_agree = false;
      f.first_node = diverging_node(g0, g1, r, shared_agree);
      if (shared_agree && !f.first_node.empty())
        f.detail += "; every node the two graphs share agrees: the first computing node the rewrite added is named";
      if (f.verdict == Verdict::unsound_rewrite) name_changed_constants(f, g0, g1);
      return false;
    }
  }
  return true;
}

// The soundness rule without recording a finding: g verifies, keeps the
// output dtype and the target's invariants, and run exactly matches the
// entry graph at every run, rows a declared divergence explains aside.
bool CaseChecker::refines(const Graph& g0, const Graph& g) {
  if (!verify_graph(g).empty() || g.outputs.size() != 1 ||
      g.info(g.outputs[0]).dtype != g0.info(g0.outputs[0]).dtype || !target_.violations(c_, g0, g).structural.empty() ||
      !target_.type_errors(g).empty())
    return false;
  for (size_t r = 0; r < runs_.size(); ++r) {
    Outcome o = execute(g, target_.exact_kernels(), r, true);
    if (!o.exec) return false;
    Comparison cmp = compare_exact(o.exec->outputs[0], entry_refs_[r], value_scale());
    note_margin(cmp);
    if (cmp.within) continue;
    if (!cmp.shape_ok || cmp.max_abs > cmp.bound || cmp.nonfinite_rows.empty()) return false;
    if (!target_.explains_nan(meaning_, tensors_[r], entry_refs_[r], cmp.nonfinite_rows, "exact", g)) return false;
  }
  return true;
}

}  // namespace check_internal

}  // namespace sdpa
