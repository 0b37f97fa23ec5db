#include "backends/cortex_m/cmsis_numerics.h"

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "backends/common/sdpa_entry.h"
#include "backends/cortex_m/cortex_m_ops.h"

namespace sdpa::cortex_m {
namespace {

// The grid of int8 codes [-128, 127] with this scale and zero point.
Int8Grid int8_grid(double scale, int64_t zp) {
  return {scale, static_cast<double>(-128 - zp) * scale, static_cast<double>(127 - zp) * scale};
}

// The grid of x·factor for a grid of x (a negative factor swaps the ends).
Int8Grid scaled(const Int8Grid& g, double factor) {
  if (g.step == 0 || factor == 0 || !std::isfinite(factor)) return {};
  const double a = g.lo * factor, b = g.hi * factor;
  return {g.step * std::fabs(factor), std::fmin(a, b), std::fmax(a, b)};
}

// The narrower of two ranges; a grid not read leaves the other.
Int8Grid narrower(const Int8Grid& a, const Int8Grid& b) {
  if (a.step == 0) return b;
  if (b.step == 0) return a;
  return {std::fmin(a.step, b.step), std::fmax(a.lo, b.lo), std::fmin(a.hi, b.hi)};
}

const Node& producer(const Graph& g, const Arg& a) { return g.nodes.at(std::get<ValueRef>(a).node); }

// The node behind `n` once ops that only move, rename or repeat values are
// skipped (the range of the values stays).
const Node& skip_layout(const Graph& g, const Node& n) {
  static const std::set<std::string> layout = {kTransposeOp, "aten.transpose.int", "aten.permute.default",
                                               "aten.view.default", "aten.reshape.default",
                                               "aten._unsafe_view.default", "aten.clone.default",
                                               "aten.contiguous.default", "aten.expand.default",
                                               "aten.repeat_interleave.self_int"};
  const Node* x = &n;
  while (layout.count(x->op)) x = &producer(g, x->args.at(0));
  return *x;
}

// The grid a bmm operand holds in units of runtime input `input`, where a
// quantize reads that input itself, through layout ops and MULs by
// constants (shared-decomp's sqrt(scale)); none where it is computed first
// (the mha form's linears).
Int8Grid input_grid(const Graph& g, const Arg& operand, const std::string& input) {
  const Node& quantize = skip_layout(g, producer(g, operand));
  if (quantize.op != kQuantizeOp) return {};
  double factor = 1;
  const Node* x = &skip_layout(g, producer(g, quantize.args.at(0)));
  while (x->op == "aten.mul.Scalar" && std::holds_alternative<double>(x->args.at(1))) {
    factor *= std::get<double>(x->args.at(1));
    x = &skip_layout(g, producer(g, x->args.at(0)));
  }
  if (x->op != "placeholder" || std::get<std::string>(x->args.at(0)) != input) return {};
  return scaled(int8_grid(std::get<double>(quantize.args.at(1)), std::get<int64_t>(quantize.args.at(2))), 1 / factor);
}

bool is_softmax(const std::string& op) {
  return op == kSoftmaxOp || op == "aten._softmax.default" || op == "aten.softmax.int" ||
         op == "aten._safe_softmax.default";
}

bool is_mul(const std::string& op) { return op == kMulOp || op == "aten.mul.Tensor" || op == "aten.mul.Scalar"; }

// The scale of the int8 value a softmax reads, from the lowered graph: a
// quantized softmax's input_scale, or the dequantize feeding an fp32 one
// (through the fp32 MUL a rejected scale MUL leaves, and the mask adds of
// shared-decomp).
double score_step(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.op == kSoftmaxOp) return std::get<double>(*n.kwarg("input_scale"));
    if (is_softmax(n.op)) {
      const Node* in = &producer(g, n.args.at(0));
      double factor = 1;
      while (in->op == "aten.add.Tensor" || in->op == "aten.mul.Scalar") {
        if (in->op == "aten.mul.Scalar") factor *= std::fabs(std::get<double>(in->args.at(1)));
        in = &producer(g, in->args.at(0));
      }
      if (in->op == kDequantizeOp) return factor * std::get<double>(in->args.at(1));
    }
  }
  return 0;
}

// The scale of the int8 value the graph's output dequantizes, through
// layout ops; 0 when the output is computed in float.
double output_step(const Graph& g) {
  const Node& n = skip_layout(g, g.nodes.at(g.outputs.at(0).node));
  return n.op == kDequantizeOp ? std::get<double>(n.args.at(1)) : 0.0;
}

// The grid a consumer reads an int8 value with, from its own arguments
// (not the producer's metadata: the fold's softmax reads the bmm's codes
// with a scale of its own). Step 0: the node reads none on the path.
Int8Grid reading(const Node& n) {
  if (n.op == kSoftmaxOp) return int8_grid(std::get<double>(*n.kwarg("input_scale")), std::get<int64_t>(n.args.at(2)));
  if (n.op == kMulOp) return int8_grid(std::get<double>(*n.kwarg("a_scale")), std::get<int64_t>(n.args.at(1)));
  if (n.op == kDequantizeOp) return int8_grid(std::get<double>(n.args.at(1)), std::get<int64_t>(n.args.at(2)));
  return {};
}

// The narrowest int8 ranges the scores pass through from the first bmm to
// the softmax, in units of the scaled scores: each reading on the path back
// from the softmax (following first arguments), one behind the scale's MUL
// (the MUL's own reading of its input included) multiplied by the scale.
// Under a mask, a reading behind the mask's add holds the scores without
// the mask: it goes to `unmasked`. Where the path does not reach the bmm,
// or a masked call's path adds no mask (a mutant drops it), only a masked
// call's softmax's own reading: the others would be compared with scores
// the kernel never saw.
void scores_grids(const Case& c, const Graph& g, const Node& softmax, const Node& bmm, Int8Grid& masked,
                  Int8Grid& unmasked) {
  Int8Grid range = reading(softmax), before_add;
  bool past_add = false;
  double factor = 1;  // the scale, once its MUL is passed
  const Node* x = &producer(g, softmax.args.at(0));
  for (int step = 0; step < 64; ++step) {
    if (is_mul(x->op)) factor = c.effective_scale();
    if (past_add)
      before_add = narrower(before_add, scaled(reading(*x), factor));
    else
      range = narrower(range, scaled(reading(*x), factor));
    if (x == &bmm && (past_add || !c.mask)) {
      masked = range;
      unmasked = before_add;
      return;
    }
    if (x == &bmm) break;  // a masked call whose path adds no mask
    if (x->op == "aten.add.Tensor" && c.mask) past_add = true;
    if (x->args.empty() || !std::holds_alternative<ValueRef>(x->args.at(0))) break;
    x = &producer(g, x->args.at(0));
  }
  // The path is not followed: only the softmax's own reading is known to
  // hold the masked scores.
  masked = c.mask ? reading(softmax) : Int8Grid{};
  unmasked = {};
}

// The grids of q, k, v, P, the output and the scores the int8 graph
// declares, each in units of the call's tensors.
void read_grids(const Case& c, const Graph& g, QuantizedNumerics& q) {
  std::vector<const Node*> bmms;
  const Node* softmax = nullptr;
  for (const Node& n : g.nodes) {
    if (n.op == kBmmOp) bmms.push_back(&n);
    if (is_softmax(n.op)) softmax = &n;
  }
  if (bmms.size() != 2) return;
  const Node& qk = *bmms[0];
  const Node& pv = *bmms[1];
  q.q = input_grid(g, qk.args.at(0), "q");
  q.k = input_grid(g, qk.args.at(2), "k");
  q.v = input_grid(g, pv.args.at(2), "v");
  // The bmms' own arguments: P as the P@V bmm reads it (lhs zero point
  // negated), the output as it requantizes it.
  q.prob = int8_grid(std::get<double>(*pv.kwarg("lhs_scale")), -std::get<int64_t>(pv.args.at(1)));
  q.out = int8_grid(std::get<double>(*pv.kwarg("output_scale")), std::get<int64_t>(pv.args.at(4)));
  if (softmax) scores_grids(c, g, *softmax, qk, q.scores, q.unmasked_scores);
}

}  // namespace

// How cmsis-nn computes a case, read from the graph it runs: int8 with
// per-tensor min/max qparams where the graph holds the quantized bmm, the
// portable f32 kernels otherwise (a kept SDPA upcasts like the math backend).
KernelNumerics cmsis_numerics(const Case& c, const Graph& g, bool histogram) {
  if (g.count(kBmmOp) + g.count(kMulOp) + g.count(kSoftmaxOp) == 0) {
    if (g.count(kSdpaOp) > 0) return KernelNumerics::upcast(c.dtype, /*split_scale=*/true);
    KernelNumerics n = KernelNumerics::naive(c.dtype);
    n.fp.split_scale = g.count("aten._safe_softmax.default") > 0;  // shared-decomp's sqrt(scale) MULs
    return n;
  }
  QuantizedNumerics q;
  // Asymmetric min/max over a range holding 0: a step of at most 2·max|x| / 255.
  q.input_qmax = 127;
  q.output_qmax = 127;
  q.score_step = score_step(g);
  // P as the second bmm reads it: the fixed 1/256 of a quantized softmax, or
  // its observer's step. A probability of 1 saturates at 255/256: one full step.
  double prob = g.count(kSoftmaxOp) > 0 ? kSoftmaxOutScale : 0;
  int seen = 0;
  for (const Node& n : g.nodes)
    if (n.op == kBmmOp && ++seen == 2) prob = std::get<double>(*n.kwarg("lhs_scale"));
  q.prob_step = 2 * prob;
  q.multiplier_rel = std::ldexp(1.0, -30);  // a Q31 multiplier >= 2^30, rounded by 1/2
  // arm_softmax_s8 (cortex-m-and-xnnpack.md §2.2): each term of the Q12.19
  // row sum rounds by 2^-20 and the sum is at least 1 (the row's max adds
  // 2^19); the exp's degree-4 polynomial on [-1/4, 0) is within 2^-21.7
  // relatively, the Q5.26 exponent input within 2^-27, the 3-step
  // reciprocal within 2^-26: (n + 2)·2^-20 holds them all. Its absolute
  // terms (the barrel constants' and the Q0.31 products' roundings, the
  // last product's 2^-32) stay under 2^-28 of the largest weight.
  q.softmax_unit = std::ldexp(1.0, -20);
  q.softmax_abs = std::ldexp(1.0, -28);
  q.output_step = output_step(g);
  read_grids(c, g, q);
  q.ranges_clip = histogram;  // HistogramObserver's L2 search clips tails; MinMax's range holds all it saw
  q.step_floor = std::numeric_limits<float>::epsilon();  // both observers' smallest scale
  return KernelNumerics::quantized(q);
}

}  // namespace sdpa::cortex_m
