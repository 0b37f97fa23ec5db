#include "backends/xnnpack/convert_to_sdpa_pass.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "backends/common/sdpa_entry.h"
#include "backends/xnnpack/pattern_entry.h"

namespace sdpa::xnnpack {

std::string mask_rank_message(int64_t rank) {
  return "Mask rank is not 2 (ConvertToSDPAPass's assert_2d_mask raises and aborts the pass; the matched mask has rank " +
         std::to_string(rank) + ")";
}

namespace {

// What get_scale reads from one scale MUL as a Python float: a mul.Scalar's
// float literal, or a mul.Tensor's constant's item() (a one-element float
// tensor's is a float; a mul.Tensor of a literal is passed over).
std::optional<double> float_operand(const Graph& g, const Node& mul) {
  if (mul.op == kMulScalar) {
    const auto* literal = std::get_if<double>(&mul.args[1]);
    return literal ? std::optional<double>(*literal) : std::nullopt;
  }
  const auto* c = std::get_if<ValueRef>(&mul.args[1]);
  if (mul.op != kMulTensor || !c || g.nodes[c->node].op != "get_attr") return std::nullopt;
  const Tensor& value = g.constants.at(std::get<std::string>(g.nodes[c->node].args[0]));
  if (value.numel() != 1 || !is_floating(value.dtype)) return std::nullopt;
  return value.data[0];
}

// The MUL get_scale reads, in the match's order (q's first: the nodes_map
// order is UNVERIFIED; both operands have the same magnitude in the
// pattern graphs).
std::optional<int> scale_source(const Graph& g, const SdpaPatternMatch& m, PatternForms forms) {
  for (int index : m.scale_muls) {
    if (float_operand(g, g.nodes.at(index))) return index;
    if (forms == PatternForms::scalar) return std::nullopt;  // main: get_scale breaks and returns None
  }                                                          // 257ef3a853: the loop goes on
  return std::nullopt;
}

}  // namespace

std::optional<double> recover_scale(const Graph& g, const SdpaPatternMatch& m, ScaleRecovery r, PatternForms forms) {
  const std::optional<int> source = scale_source(g, m, forms);
  if (!source) return std::nullopt;
  const Node& mul = g.nodes[*source];
  // torch.tensor(v, dtype).item() ** 2, in Python double.
  const DType t = mul.outputs[0].dtype;
  const double rounded = round_to(t, *float_operand(g, mul));
  double scale = rounded * rounded;
  if (r == ScaleRecovery::one_ulp_up) scale += ulp(t, scale);
  return scale;
}

namespace {

// Whether every node of match `m` lies in one delegate; the detail names
// the nodes outside every delegate and how many delegates the rest span.
bool inside_one_delegate(const Graph& g, const SdpaPatternMatch& m, const Partitions& p, std::string& detail) {
  std::set<int> delegates;
  std::string outside;
  std::vector<int> nodes = m.nodes;
  std::sort(nodes.begin(), nodes.end());
  for (int n : nodes) {
    if (g.nodes[n].op == "get_attr") continue;  // a constant goes with the delegate that reads it
    if (p.of_node[n] >= 0) {
      delegates.insert(p.of_node[n]);
    } else {
      outside += (outside.empty() ? "" : ", ") + ("%" + g.nodes[n].name) + " (" + g.nodes[n].op + ")";
    }
  }
  const bool one = outside.empty() && delegates.size() == 1;
  if (one) {
    detail = "every matched node lies in delegate " + std::to_string(*delegates.begin());
  } else {
    detail = (outside.empty() ? std::string("every matched node is delegated")
                              : "not delegated: " + outside) +
             "; the delegated nodes of the match lie in " + std::to_string(delegates.size()) +
             " delegate(s): the pass, run on each delegate, never sees the pattern whole";
  }
  return one;
}

}  // namespace

Pass::Result ConvertToSDPAPass::run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const {
  Result result;
  std::vector<std::pair<SdpaPatternMatch, double>> rewrites;
  const Partitions parts = per_delegate() ? partition(g, delegates_) : Partitions{};
  for (const auto& m : match_sdpa_pattern(g, forms_)) {
    const Node& out = g.nodes[m.output];
    GuardContext guard(env, "%" + out.name);
    guard.rule("pattern", true, std::string("sdpa pattern graph: ") + sdpa_pattern_description());
    if (per_delegate()) {
      std::string where;
      if (!guard.rule("inside-one-delegate", inside_one_delegate(g, m, parts, where), where)) {
        Decision d = guard.finish();
        d.forced = control.rewrites(d);
        result.decisions.push_back(d);
        // A forced conversion lands outside any one delegate: nothing lowers it either.
        if (control.rewrites(d)) throw PassUnsupported(kNoSdpaVisitor);
        continue;
      }
    }
    const std::optional<double> scale = recover_scale(g, m, recovery_, forms_);
    if (!scale) throw ConvertToSdpaError("AssertionError: Could not find scale");
    const Node& source = g.nodes[*scale_source(g, m, forms_)];
    guard.rule("scale", true,
               "%" + source.name + (m.lifted ? " lifted constant " : " literal ") +
                   std::to_string(*float_operand(g, source)) + " rounded to " + dtype_name(source.outputs[0].dtype) +
                   " and squared: " + std::to_string(*scale));
    const int64_t rank = static_cast<int64_t>(g.info(m.mask).shape.size());
    if (rank != 2) throw PassUnsupported(mask_rank_message(rank));
    guard.rule("mask-rank-2", true, "the matched mask has rank 2");
    Decision d = guard.finish();
    d.forced = !d.rewrite && control.rewrites(d);
    result.decisions.push_back(d);
    if (control.rewrites(d)) rewrites.push_back({m, *scale});
  }
  // Preprocess serializes each delegate next: no visitor takes the new node.
  if (per_delegate() && !rewrites.empty()) throw PassUnsupported(kNoSdpaVisitor);
  std::set<int> dropped;  // the matched nodes, dead once the output is replaced
  for (const auto& [m, s] : rewrites) dropped.insert(m.nodes.begin(), m.nodes.end());
  GraphRewriter rw(g);
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[i];
    const std::pair<SdpaPatternMatch, double>* r = nullptr;
    for (const auto& x : rewrites)
      if (x.first.output == i) r = &x;
    if (r) {
      const SdpaPatternMatch& m = r->first;
      ValueRef sdpa = rw.out().call(kSdpaOp, {rw.map(m.q), rw.map(m.k), rw.map(m.v), rw.map(m.mask)},
                                    {{"scale", r->second}}, n.outputs, "scaled_dot_product_attention");
      rw.replace(n, {sdpa});
    } else if (!dropped.count(i)) {
      rw.copy(n);
    }
  }
  result.graph = rw.finish();
  return result;
}

}  // namespace sdpa::xnnpack
