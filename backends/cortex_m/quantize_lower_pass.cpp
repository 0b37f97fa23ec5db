// Models CortexMQuantizer's annotation of bmm / mul / softmax (quantizer_support.py,
// pattern_checkers.py), PT2E calibration with min/max observers, and
// AtenToCortexMPass's substitutions with their AOT parameters (aten_to_cortex_m_pass.py),
// semantics/cortex-m-and-xnnpack.md §1.4, §1.5, §1.7.
#include "backends/cortex_m/quantize_lower_pass.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "backends/cortex_m/calibration.h"
#include "backends/cortex_m/cmsis/lowering_params.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/histogram_observer.h"

namespace sdpa::cortex_m {
namespace {

const std::set<std::string> kSharedQspecOps = {
    "aten.reshape.default", "aten.view.default",      "aten._unsafe_view.default", "aten.transpose.int",
    "aten.permute.default", "aten.contiguous.default", "aten.clone.default",       "aten.unsqueeze.default",
    "aten.squeeze.dims",    "aten.expand.default"};

bool is_softmax(const std::string& op) { return op == "aten._softmax.default" || op == "aten.softmax.int"; }

cmsis::QParams to_cmsis(const QParams& q) { return {q.scale, static_cast<int32_t>(q.zero_point)}; }

const ValueRef* tensor_arg(const Node& n, size_t i) {
  return i < n.args.size() ? std::get_if<ValueRef>(&n.args[i]) : nullptr;
}

// One run of the pass over one graph.
class Lowering {
 public:
  Lowering(const Graph& g, QuantizerConfig cfg) : g_(g), rw_(g), cfg_(cfg) {}

  Graph run() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) visit(static_cast<int>(i));
    for (const auto& o : g_.outputs) ensure_f32(o);
    return rw_.finish();
  }

 private:
  Graph& out() { return rw_.out(); }

  void visit(int i) {
    const Node& n = g_.nodes[i];
    const ValueRef* x = tensor_arg(n, 0);
    const bool int8_input = x && int8_.count(x->node) && !f32_ready_.count(x->node);
    if (kSharedQspecOps.count(n.op) && int8_input) return shared(i);
    if (n.op == "aten.bmm.default" && bmm_annotated(n)) return bmm(i);
    if (n.op == kLinearOp && cfg_.linear != LinearMeta::not_annotated) return linear(i);
    if (n.op == "aten.mul.Scalar" && int8_input && n.args.size() > 1 && std::holds_alternative<double>(n.args[1]))
      return scale_mul(i);
    if (is_softmax(n.op) && softmax_annotated(g_, n, cfg_.upstream_softmax_check)) return softmax(i);
    float_op(i);
  }

  // A node the quantizer does not annotate: fp32, reading int8 values dequantized.
  void float_op(int i) {
    const Node& n = g_.nodes[i];
    for (const auto& a : n.args)
      if (const auto* v = std::get_if<ValueRef>(&a)) ensure_f32(*v);
    for (const auto& [key, a] : n.kwargs)
      if (const auto* v = std::get_if<ValueRef>(&a)) ensure_f32(*v);
    rw_.copy(n);
    f32_ready_.insert(i);
  }

  // The scale MUL under the configured check: its scalar operand as the
  // pre-annotation passes leave it, full((1,)) from ReplaceScalarWithTensorArgPass
  // or the rank-matched buffer of ScalarsToAttributePass.
  bool mul_annotated(const Node& n) const {
    if (cfg_.mul_check == MulCheck::annotate) return true;
    const SymShape& x = g_.info(*tensor_arg(n, 0)).shape;
    return add_mul_check_accepts(x, cfg_.mul_check == MulCheck::upstream ? SymShape{1} : SymShape(x.size(), SymExpr(1)));
  }

  // The scalar operand's shape: under annotate, ReplaceScalarWithTensorArgPass's
  // full((1,)), which no check takes as a channel broadcast, so
  // MaterializeMulBroadcastPass (#22796's head, @00c39938) materializes it
  // at the MUL's shape; under rank_matched, ScalarsToAttributePass's (1,)*R
  // buffer, which that pass leaves (it is no aten.full) and which the check
  // accepts only where quantized_mul takes it as a channel broadcast.
  SymShape scalar_shape(const SymShape& x) const {
    if (cfg_.mul_check == MulCheck::rank_matched || !cfg_.materialize_mul_broadcast)
      return SymShape(x.size(), SymExpr(1));
    return x;
  }

  // CortexMBmmCheck: both inputs rank 3, equal batch, matching inner dims.
  bool bmm_annotated(const Node& n) const {
    const ValueRef *l = tensor_arg(n, 0), *r = tensor_arg(n, 1);
    if (!l || !r) return false;
    const SymShape &a = g_.info(*l).shape, &b = g_.info(*r).shape;
    return a.size() == 3 && b.size() == 3 && a[0] == b[0] && a[2] == b[1];
  }

  // The calibration run of the float graph, made when a first value is observed.
  const Tensor& observed(ValueRef v) {
    if (!calibration_) calibration_ = calibrate(g_);
    return calibration_->values.at(v.node).at(v.output);
  }

  // The qparams the quantizer annotates value `v` with.
  QParams annotation(ValueRef v) {
    const Node& p = g_.nodes.at(v.node);
    if (softmax_.count(v.node)) return QParams{kSoftmaxOutScale, kSoftmaxOutZeroPoint, -128, 127};
    if (shared_.count(v.node)) return annotation(*tensor_arg(p, 0));
    if (cfg_.observer_before_mul && scale_muls_.count(v.node)) return observe(observed(*tensor_arg(p, 0)));
    if (cfg_.derive_mul_output && scale_muls_.count(v.node))
      if (const double c = std::get<double>(p.args.at(1)); c > 0) {
        QParams in = annotation(*tensor_arg(p, 0));
        in.scale *= c;
        return in;
      }
    return observe(observed(v));
  }

  QParams observe(const Tensor& t) const {
    return cfg_.observer == Observer::histogram ? histogram_qparams(t) : minmax_qparams(t);
  }

  // The int8 value of `v`: the lowered one, or a quantize of the float one.
  ValueRef as_int8(ValueRef v) {
    if (auto it = int8_.find(v.node); it != int8_.end()) return it->second;
    const QParams q = annotation(v);
    const ValueRef f = rw_.map(v);
    const ValueRef r = out().call(kQuantizeOp, {f, q.scale, q.zero_point, int64_t{-128}, int64_t{127}, DType::i8}, {},
                                  {{DType::i8, out().info(f).shape, q}}, g_.nodes[v.node].name + "_int8");
    int8_[v.node] = r;
    return r;
  }

  // A float reader of an int8-only value reads it dequantized (with the int8 value's own qparams).
  void ensure_f32(ValueRef v) {
    if (f32_ready_.count(v.node)) return;
    auto it = int8_.find(v.node);
    if (it == int8_.end()) return;  // not yet visited: the rewriter reports it
    const ValueInfo& info = out().info(it->second);
    const QParams q = *info.qparams;
    const ValueRef dq = out().call(kDequantizeOp, {it->second, q.scale, q.zero_point, int64_t{-128}, int64_t{127}, DType::i8},
                                   {}, {{DType::f32, info.shape}}, g_.nodes[v.node].name + "_dequant");
    rw_.replace(g_.nodes[v.node], {dq});
    f32_ready_.insert(v.node);
  }

  void shared(int i) {
    const Node& n = g_.nodes[i];
    std::vector<Arg> args = n.args;
    const ValueRef in = int8_.at(tensor_arg(n, 0)->node);
    args[0] = in;
    ValueInfo o = n.outputs.at(0);
    o.dtype = out().info(in).dtype;  // int8, or what a retraced producer declares
    o.qparams = out().info(in).qparams;
    int8_[i] = out().call(n.op, args, n.kwargs, {o}, n.name);
    shared_.insert(i);
  }

  void bmm(int i) {
    const Node& n = g_.nodes[i];
    const ValueRef l = *tensor_arg(n, 0), r = *tensor_arg(n, 1);
    const QParams ql = annotation(l), qr = annotation(r), qo = annotation({i, 0});
    const ValueRef l8 = as_int8(l), r8 = as_int8(r);
    const SymShape& rs = out().info(r8).shape;
    const ValueRef rt = out().call(kTransposeOp, {r8, SymShape{0, 2, 1}}, {},
                                   {{out().info(r8).dtype, {rs[0], rs[2], rs[1]}, out().info(r8).qparams}}, n.name + "_rhs_t");
    const cmsis::BatchMatmulParams p = cmsis::batch_matmul_params(to_cmsis(ql), to_cmsis(qr), to_cmsis(qo));
    int8_[i] = out().call(kBmmOp,
                          {l8, int64_t{p.input_offset}, rt, int64_t{p.filter_offset}, int64_t{p.output_offset},
                           int64_t{p.multiplier}, int64_t{p.shift}},
                          {{"lhs_scale", ql.scale}, {"rhs_scale", qr.scale}, {"output_scale", qo.scale}},
                          {{DType::i8, n.outputs.at(0).shape, qo}}, n.name);
  }

  // The linear as FoldAndAnnotateQParamsPass leaves it: its input DQ and output
  // Q folded into qparams kwargs, int8 weight and int32 bias constants, and the
  // output dtype the retrace (or the fixed meta) gives it.
  void linear(int i) {
    const Node& n = g_.nodes[i];
    const ValueRef x = *tensor_arg(n, 0), w = *tensor_arg(n, 1);
    const QParams qi = annotation(x), qo = annotation({i, 0});
    const ValueRef x8 = as_int8(x);
    const Tensor& wf = observed(w);
    double wmax = 0;
    for (double v : wf.data) wmax = std::fmax(wmax, std::fabs(v));
    const QParams qw{std::fmax(wmax / 127, std::numeric_limits<float>::epsilon()), 0, -127, 127};
    Tensor w8(DType::i8, wf.shape);
    for (size_t j = 0; j < wf.data.size(); ++j) w8.data[j] = std::clamp(std::nearbyint(wf.data[j] / qw.scale), -127.0, 127.0);
    w8.qparams = qw;
    std::vector<Arg> args{x8, out().constant(n.name + "_weight_int8", w8, g_.info(w).shape)};
    if (const ValueRef* b = tensor_arg(n, 2)) {
      const Tensor& bf = observed(*b);
      const QParams qb{qi.scale * qw.scale, 0, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
      Tensor b32(DType::i32, bf.shape);
      // quantize_per_tensor to int32 clamps to its range (a tiny S_in·S_w can push a bias past it).
      for (size_t j = 0; j < bf.data.size(); ++j)
        b32.data[j] = std::clamp(std::nearbyint(bf.data[j] / qb.scale), static_cast<double>(qb.qmin),
                                 static_cast<double>(qb.qmax));
      b32.qparams = qb;
      args.push_back(out().constant(n.name + "_bias_int32", b32, g_.info(*b).shape));
    }
    if (cfg_.linear == LinearMeta::retraced_int32) {
      // The retrace fails before AtenToCortexMPass: the graph keeps the folded aten.linear.
      int8_[i] = out().call(kLinearOp, args,
                            {{"input_scale", qi.scale}, {"input_zero_point", qi.zero_point}, {"weight_scale", qw.scale},
                             {"output_scale", qo.scale}, {"output_zero_point", qo.zero_point}},
                            {{DType::i32, n.outputs.at(0).shape, qo}}, n.name);
      return;
    }
    // AtenToCortexMPass: cortex_m.quantized_linear (arm_fully_connected_s8).
    if (args.size() < 3) args.push_back(None{});
    const cmsis::FullyConnectedParams p = cmsis::fully_connected_params(to_cmsis(qi), qw.scale, to_cmsis(qo));
    args.insert(args.end(), {int64_t{p.input_offset}, int64_t{p.output_offset}, int64_t{p.multiplier}, int64_t{p.shift}});
    std::vector<std::pair<std::string, Arg>> kwargs{{"input_scale", qi.scale}, {"weight_scale", qw.scale},
                                                    {"output_scale", qo.scale}, {"real_weight", rw_.map(w)}};
    if (const ValueRef* b = tensor_arg(n, 2)) kwargs.push_back({"real_bias", rw_.map(*b)});
    int8_[i] = out().call(kQuantizedLinearOp, args, kwargs, {{DType::i8, n.outputs.at(0).shape, qo}}, n.name);
  }

  // FoldScaleIntoQuantizePass's match (§1.4): c finite and nonzero, S_out
  // isclose S_in·c (rel 1e-6), equal zero points, the MUL's input and the
  // MUL each read by one node, and that reader a quantized softmax.
  bool folds(int i, const QParams& qi, const QParams& qo, double c) const {
    const Node& n = g_.nodes[i];
    if (!cfg_.fold || !std::isfinite(c) || c == 0.0) return false;
    const double want = qi.scale * c;
    if (!(std::fabs(qo.scale - want) <= 1e-6 * std::fmax(std::fabs(qo.scale), std::fabs(want)))) return false;
    if (qo.zero_point != qi.zero_point) return false;
    const std::vector<int> users = g_.users(i);
    if (g_.users(tensor_arg(n, 0)->node).size() != 1 || users.size() != 1) return false;
    const Node& user = g_.nodes[users[0]];
    return is_softmax(user.op) && softmax_annotated(g_, user, cfg_.upstream_softmax_check);
  }

  void scale_mul(int i) {
    const Node& n = g_.nodes[i];
    scale_muls_.insert(i);
    const ValueRef x = *tensor_arg(n, 0);
    const double c = std::get<double>(n.args[1]);
    const QParams qi = annotation(x), qo = annotation({i, 0});
    const ValueRef x8 = as_int8(x);
    if (folds(i, qi, qo, c)) {
      int8_[i] = x8;  // the softmax reads the bmm's codes with the MUL's output qparams
      return;
    }
    // Rejected: an fp32 MUL between dequantize and quantize; its output
    // keeps the annotation (observed or derived) the quantize after it uses.
    if (!mul_annotated(n)) return float_op(i);
    // The scalar's constant, observed as an activation: CortexMQuantizer's
    // pattern annotator gives a MUL input that is no parameter the
    // activation qspec (arm_quantizer_utils.py annotate_match), and
    // MaterializeQuantizedMulConstantsPass quantizes c with the observer's
    // qparams (QuantArgs.quantize_value: round(c / scale) + zp, clamped).
    // On one value MinMax and histogram observers both give
    // _calculate_qparams(min(c, 0), max(c, 0)): scale |c| / 255 floored at
    // eps, so a tiny c is code zp, i.e. 0. Computed in double, as the exact
    // semantics carry c (float32's rounding of c is the float graph's too).
    // A NaN c (no generator draws one) is given the zero point.
    const SymShape shape = scalar_shape(g_.info(x).shape);
    Shape concrete;
    for (const SymExpr& d : shape) concrete.push_back(d.constant());
    const QParams qc = minmax_qparams(Tensor(DType::f64, {1}, c));
    const double code = std::nearbyint(c / qc.scale) + static_cast<double>(qc.zero_point);
    Tensor ct(DType::i8, concrete, std::isnan(code) ? qc.zero_point : std::clamp(code, -128.0, 127.0));
    ct.qparams = qc;
    const ValueRef cv = out().constant(n.name + "_scalar_int8", ct, shape);
    const cmsis::ElementwiseMulParams p = cmsis::elementwise_mul_params(to_cmsis(qi), to_cmsis(qc), to_cmsis(qo));
    int8_[i] = out().call(kMulOp,
                          {x8, qi.zero_point, cv, qc.zero_point, qo.zero_point, int64_t{p.multiplier}, int64_t{p.shift}},
                          {{"a_scale", qi.scale}, {"b_scale", qc.scale}, {"output_scale", qo.scale}},
                          {{DType::i8, n.outputs.at(0).shape, qo}}, n.name);
  }

  void softmax(int i) {
    const Node& n = g_.nodes[i];
    const ValueRef x = *tensor_arg(n, 0);
    const QParams qi = annotation(x);
    const ValueRef x8 = as_int8(x);
    const cmsis::SoftmaxParams p = cmsis::softmax_params(qi.scale);
    softmax_.insert(i);
    int8_[i] = out().call(kSoftmaxOp,
                          {x8, n.args[1], qi.zero_point, kSoftmaxOutZeroPoint, int64_t{p.mult}, int64_t{p.shift},
                           int64_t{p.diff_min}},
                          {{"input_scale", qi.scale}},
                          {{DType::i8, n.outputs.at(0).shape, QParams{kSoftmaxOutScale, kSoftmaxOutZeroPoint, -128, 127}}},
                          n.name);
  }

  const Graph& g_;
  GraphRewriter rw_;
  QuantizerConfig cfg_;
  std::optional<Execution> calibration_;
  std::map<int, ValueRef> int8_;      // old node -> its int8 value in the new graph
  std::set<int> f32_ready_;           // old nodes whose float value the rewriter maps
  std::set<int> shared_, softmax_, scale_muls_;
};

}  // namespace

// The node that produced `v`, seen through view ops and cortex_m.transpose.
const Node& producer(const Graph& g, ValueRef v) {
  const Node* n = &g.nodes.at(v.node);
  while ((kSharedQspecOps.count(n->op) || n->op == kTransposeOp) && tensor_arg(*n, 0))
    n = &g.nodes.at(tensor_arg(*n, 0)->node);
  return *n;
}

std::vector<std::string> retrace_type_errors(const Graph& g) {
  std::vector<std::string> errors;
  for (const Node& n : g.nodes) {
    const bool aten = n.op == "aten.bmm.default";
    if (!aten && n.op != kBmmOp) continue;
    const ValueRef *l = tensor_arg(n, 0), *r = tensor_arg(n, aten ? 1 : 2);
    if (!l || !r) continue;
    const DType lt = g.info(*l).dtype, rt = g.info(*r).dtype;
    if (lt == rt) continue;
    const Node &lp = producer(g, *l), &rp = producer(g, *r);
    errors.push_back("type error at %" + n.name + " (" + n.op + "): expected scalar type torch." + dtype_name(lt) +
                     " but found torch." + dtype_name(rt) + " (lhs " + dtype_name(lt) + " from %" + lp.name + " (" +
                     lp.op + "), rhs " + dtype_name(rt) + " from %" + rp.name + " (" + rp.op + "))");
  }
  return errors;
}

namespace {

bool channels_last(const SymShape& s) {
  return s.size() == 4 && (s[1] == SymExpr(1) || (s[2] == SymExpr(1) && s[3] == SymExpr(1)));
}

// The shape's numel equals its size(1): only where every other dim is 1.
bool channels_only(const SymShape& s) {
  for (size_t d = 0; d < s.size(); ++d)
    if (d != 1 && !(s[d] == SymExpr(1))) return false;
  return s.size() >= 2;
}

}  // namespace

bool add_mul_check_accepts(const SymShape& t1, const SymShape& t2) {
  if (t1 == t2) return true;
  const bool channel_broadcast = t1.size() == t2.size() && channels_last(t1) && channels_last(t2) &&
                                 t1[1] == t2[1] && (channels_only(t1) || channels_only(t2));
  return channel_broadcast && channels_last(t1);
}

bool softmax_annotated(const Graph& g, const Node& n, bool upstream_check) {
  const ValueRef* x = tensor_arg(n, 0);
  if (!x || n.args.size() < 2 || !std::holds_alternative<int64_t>(n.args[1])) return false;
  if (n.op == "aten._softmax.default" && n.args.size() > 2 && std::holds_alternative<bool>(n.args[2]) &&
      std::get<bool>(n.args[2]))
    return false;  // half_to_float
  const SymShape& s = g.info(*x).shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank == 0) return false;
  const int64_t dim = ((std::get<int64_t>(n.args[1]) % rank) + rank) % rank;
  if (upstream_check && channels_last(s)) return dim == 1;  // and the runtime then refuses dim 1
  return dim == rank - 1;
}

Pass::Result QuantizeLowerPass::run(const Graph& g, const ShapeEnv&, const RewriteControl&) const {
  Result r;
  try {
    r.graph = Lowering(g, config_).run();
  } catch (const KernelError&) {
    r.graph = g;  // the float graph cannot run on its example inputs: nothing is calibrated or annotated
  } catch (const GraphError&) {
    r.graph = g;
  }
  return r;
}

}  // namespace sdpa::cortex_m
