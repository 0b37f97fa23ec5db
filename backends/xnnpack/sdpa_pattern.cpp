#include "backends/xnnpack/sdpa_pattern.h"

#include <algorithm>
#include <optional>
#include <set>

#include "backends/xnnpack/pattern_entry.h"

namespace sdpa::xnnpack {

const char* sdpa_pattern_description() {
  return "view_copy(bmm(view_copy(expand_copy(_safe_softmax(add(view_copy(bmm(view_copy(expand_copy(mul.Scalar(q))), "
         "view_copy(expand_copy(mul.Scalar(permute_copy(k)))))), mask)))), view_copy(expand_copy(v)))), "
         "_safe_softmax(x) or its decomposition where(logical_not(any.dim(logical_not(eq.Scalar(x)))), "
         "full_like(_softmax(x)), _softmax(x))";
}

namespace {

// Walks the pattern backward from a candidate output, recording each node.
class Walk {
 public:
  Walk(const Graph& g, SdpaPatternMatch& m) : g_(g), m_(m) {}

  // The node that argument `arg` of node `at` reads, when it calls `op`.
  std::optional<int> take(int at, size_t arg, const char* op) {
    const Node& n = g_.nodes[at];
    if (arg >= n.args.size()) return std::nullopt;
    const auto* ref = std::get_if<ValueRef>(&n.args[arg]);
    if (!ref || ref->output != 0 || g_.nodes[ref->node].op != op) return std::nullopt;
    m_.nodes.push_back(ref->node);
    return ref->node;
  }
  // As take, where the node's list argument (dims or sizes) has `len`
  // entries: SubgraphMatcher ignores literals but compares lists entry by
  // entry, so a list of another length never matches the traced one.
  std::optional<int> take_list(int at, size_t arg, const char* op, size_t len) {
    auto node = take(at, arg, op);
    if (!node) return std::nullopt;
    const Node& n = g_.nodes[*node];
    const auto* list = n.args.size() > 1 ? std::get_if<SymShape>(&n.args[1]) : nullptr;
    if (!list || list->size() != len) return std::nullopt;
    return node;
  }
  // A pattern placeholder: binds whatever value argument `arg` reads.
  bool bind(int at, size_t arg, ValueRef& out) {
    const Node& n = g_.nodes[at];
    if (arg >= n.args.size()) return false;
    const auto* ref = std::get_if<ValueRef>(&n.args[arg]);
    if (!ref) return false;
    out = *ref;
    return true;
  }

 private:
  const Graph& g_;
  SdpaPatternMatch& m_;
};

// The pattern graphs are traced on rank-4 [B, H, L, D] tensors
// (semantics §3.1): its permute_copy dims and expand_copy and view_copy
// sizes list 4 entries, and the views into bmm's [B*H, L, D] operands 3.
constexpr size_t kTracedRank = 4;
constexpr size_t kBmmRank = 3;

// view_copy(expand_copy(x)) before a bmm operand; returns the expand_copy.
std::optional<int> operand(Walk& w, int bmm, size_t arg) {
  auto view = w.take_list(bmm, arg, kViewCopy, kBmmRank);
  return view ? w.take_list(*view, 0, kExpandCopy, kTracedRank) : std::nullopt;
}

// Whether argument `arg` of node `at` reads node `node`'s first output.
bool reads(const Graph& g, int at, size_t arg, int node) {
  const Node& n = g.nodes[at];
  const auto* ref = arg < n.args.size() ? std::get_if<ValueRef>(&n.args[arg]) : nullptr;
  return ref && ref->node == node && ref->output == 0;
}

// The softmax over the scores, from the expand_copy that reads it back to
// the add of the mask: _safe_softmax(add), or its decomposition
// where(logical_not(any.dim(logical_not(eq.Scalar(add)))), full_like(sm), sm)
// with sm = _softmax(add). Returns the add.
std::optional<int> softmax_of_add(const Graph& g, Walk& w, int p_expand) {
  if (auto safe = w.take(p_expand, 0, kSafeSoftmax)) return w.take(*safe, 0, kAddTensor);
  auto where = w.take(p_expand, 0, kWhereSelf);
  auto rows = where ? w.take(*where, 0, kLogicalNot) : std::nullopt;
  auto any = rows ? w.take(*rows, 0, kAnyDim) : std::nullopt;
  auto kept = any ? w.take(*any, 0, kLogicalNot) : std::nullopt;
  auto masked = kept ? w.take(*kept, 0, kEqScalar) : std::nullopt;
  auto zeros = masked ? w.take(*where, 1, kFullLike) : std::nullopt;
  auto sm = zeros ? w.take(*where, 2, kSoftmax) : std::nullopt;
  if (!sm || !reads(g, *zeros, 0, *sm)) return std::nullopt;
  auto add = w.take(*sm, 0, kAddTensor);
  if (!add || !reads(g, *masked, 0, *add)) return std::nullopt;
  return add;
}

// Whether MUL node `mul` has the form of the pattern copy: (tensor,
// literal) in the traced one; in the lifted one (tensor, get_attr
// constant), whose constant node joins the match (SubgraphMatcher compares
// get_attr tensors by type alone, and with ignore_literals a literal
// matches a pattern node too), each target node matched once.
bool scale_mul_form(const Graph& g, int mul, bool lifted, SdpaPatternMatch& m) {
  const Node& n = g.nodes[mul];
  if (n.args.size() != 2) return false;
  const auto* c = std::get_if<ValueRef>(&n.args[1]);
  if (!lifted) return !c;  // any literal matches
  if (!c) return true;     // a literal in the constant's place (ignore_literals)
  if (c->output != 0 || g.nodes[c->node].op != "get_attr") return false;
  if (std::find(m.nodes.begin(), m.nodes.end(), c->node) != m.nodes.end()) return false;  // one constant, two MULs
  m.nodes.push_back(c->node);
  return true;
}

std::optional<SdpaPatternMatch> match_at(const Graph& g, int out, bool lifted,
                                         const std::vector<std::vector<int>>& users) {
  const char* mul_op = lifted ? kMulTensor : kMulScalar;
  SdpaPatternMatch m;
  m.output = out;
  m.lifted = lifted;
  const Node& out_node = g.nodes[out];
  const auto* out_sizes = out_node.args.size() > 1 ? std::get_if<SymShape>(&out_node.args[1]) : nullptr;
  if (out_node.op != kViewCopy || !out_sizes || out_sizes->size() != kTracedRank) return std::nullopt;
  m.nodes.push_back(out);
  Walk w(g, m);
  auto pv_bmm = w.take(out, 0, kBmm);
  if (!pv_bmm) return std::nullopt;
  auto p_expand = operand(w, *pv_bmm, 0);
  auto add = p_expand ? softmax_of_add(g, w, *p_expand) : std::nullopt;
  auto scores = add ? w.take_list(*add, 0, kViewCopy, kTracedRank) : std::nullopt;
  auto qk_bmm = scores ? w.take(*scores, 0, kBmm) : std::nullopt;
  auto q_expand = qk_bmm ? operand(w, *qk_bmm, 0) : std::nullopt;
  auto q_mul = q_expand ? w.take(*q_expand, 0, mul_op) : std::nullopt;
  auto k_expand = q_mul ? operand(w, *qk_bmm, 1) : std::nullopt;
  auto k_mul = k_expand ? w.take(*k_expand, 0, mul_op) : std::nullopt;
  auto k_permute = k_mul ? w.take_list(*k_mul, 0, kPermuteCopy, kTracedRank) : std::nullopt;
  auto v_expand = k_permute ? operand(w, *pv_bmm, 1) : std::nullopt;
  if (!v_expand || !w.bind(*q_mul, 0, m.q) || !w.bind(*k_permute, 0, m.k) || !w.bind(*v_expand, 0, m.v) ||
      !w.bind(*add, 1, m.mask))
    return std::nullopt;
  for (int mul : {*q_mul, *k_mul})
    if (!scale_mul_form(g, mul, lifted, m)) return std::nullopt;
  m.scale_muls = {*q_mul, *k_mul};
  // SubgraphMatcher rejects a match whose interior value is read outside it.
  const std::set<int> inside(m.nodes.begin(), m.nodes.end());
  for (int n : m.nodes) {
    if (n == out) continue;
    for (int user : users[static_cast<size_t>(n)])
      if (!inside.count(user)) return std::nullopt;
    for (const auto& o : g.outputs)
      if (o.node == n) return std::nullopt;
  }
  return m;
}

}  // namespace

std::vector<SdpaPatternMatch> match_sdpa_pattern(const Graph& g, PatternForms forms) {
  std::vector<SdpaPatternMatch> out;
  std::set<int> taken;
  const std::vector<std::vector<int>> users = g.users_of_each();
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i)
    for (bool lifted : {false, true}) {
      if (lifted && forms == PatternForms::scalar) continue;
      auto m = match_at(g, i, lifted, users);
      if (!m) continue;
      if (std::any_of(m->nodes.begin(), m->nodes.end(), [&](int n) { return taken.count(n) > 0; })) continue;
      taken.insert(m->nodes.begin(), m->nodes.end());
      out.push_back(*m);
    }
  return out;
}

}  // namespace sdpa::xnnpack
