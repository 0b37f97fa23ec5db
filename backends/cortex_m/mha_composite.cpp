// The error bound of the mha form (derived here; NUMERICS.md's rules for a
// module around SDPA). With q, k, v the exact in-projections, a the exact
// SDPA output and Y = a·w_oᵀ + b_o the golden, a kernel set computes q̂, k̂, v̂
// with per-element errors at most δq, δk, δv, runs SDPA on them, and
// projects the result out:
//  - in-projection, fp32 (portable, index-order accumulation):
//      δ = γ_{D+1}·max_{r,e} (Σ_c |x_rc||w_ec| + |b_e|),  γ_n = n·u/(1 - n·u);
//    int8 (arm_fully_connected_s8, requantize within 1 LSB of round(acc·M)):
//      δ = max_e Σ_c|w_ec|·S_x/2 + max_r Σ_c|x_rc|·S_w/2 + D·S_x·S_w/4
//          + S_x·S_w/2 (bias) + 1.5·S_o;
//  - SDPA on perturbed inputs, query row i: every score moves by at most
//    δs = scale·(δq·max_j |k_j|_1 + |q_i|_1·δk + E·δq·δk), each weight by a
//    factor within e^{±2δs}, so |Δa_i| <= expm1(2δs)·max|v| + δv; plus the
//    kernel set's own SDPA bound (the oracles' error model, computed at q, k, v);
//  - out-projection, row (b, i), output o, with err_h that row's SDPA error
//    in head h: Σ_h err_h·Σ_e |w_o[o, hE+e]| plus its own rounding:
//    fp32 γ_{D+1}·(Σ_c |w_oc|(|a_c| + err_c) + |b_o|); int8 the weight step
//    S_w/2·Σ_c (|a_c| + err_c) + S_a·S_w/2 (bias) + 1.5·S_y, and the f32
//    dequantize 2u·(|Y_o| + that).
// The typical error takes √n·u for γ_n (fp32) and the SDPA's typical error.
#include "backends/cortex_m/mha_composite.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "backends/cortex_m/cortex_m_ops.h"

namespace sdpa::cortex_m {
namespace {

constexpr double kU = 0x1p-24;  // f32 unit roundoff

double gamma(double n) { return n * kU / (1 - n * kU); }

// x [..., D] · wᵀ + b in long double.
Tensor project(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t d = w.shape[0], k = w.shape[1], rows = x.numel() / k;
  Shape s = x.shape;
  s.back() = d;
  Tensor out(DType::f64, s);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < d; ++o) {
      long double acc = b.data[o];
      for (int64_t i = 0; i < k; ++i) acc += static_cast<long double>(x.data[r * k + i]) * w.data[o * k + i];
      out.data[r * d + o] = static_cast<double>(acc);
    }
  return out;
}

// [batch..., L, H·E] -> [batch..., H, L, E]
Tensor to_heads(Tensor t, int64_t heads) {
  const int64_t d = t.shape.back();
  t.shape.back() = heads;
  t.shape.push_back(d / heads);
  return swap_heads_and_seq(t);
}

// How one projection of the graph the kernel set runs rounds.
struct ProjectionNumerics {
  bool int8 = false;
  double s_x = 0, s_w = 0, s_o = 0;  // int8: input, weight and output steps
};

ProjectionNumerics projection_numerics(const Graph& g, const std::string& name) {
  ProjectionNumerics p;
  const int i = g.find(name);
  if (i < 0 || g.nodes[i].op != kQuantizedLinearOp) return p;  // the portable fp32 linear
  const Node& n = g.nodes[i];
  p.int8 = true;
  p.s_x = std::get<double>(*n.kwarg("input_scale"));
  p.s_w = std::get<double>(*n.kwarg("weight_scale"));
  p.s_o = std::get<double>(*n.kwarg("output_scale"));
  return p;
}

// The largest error of one in-projection's elements, as bound and as typical.
std::pair<double, double> in_projection_error(const Tensor& x, const Tensor& w, const Tensor& b,
                                              const ProjectionNumerics& p) {
  const int64_t d = w.shape[0], k = w.shape[1], rows = x.numel() / k;
  double abs_dot = 0, w_l1 = 0, x_l1 = 0;
  for (int64_t o = 0; o < d; ++o) {
    double s = 0;
    for (int64_t i = 0; i < k; ++i) s += std::fabs(w.data[o * k + i]);
    w_l1 = std::max(w_l1, s);
  }
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t i = 0; i < k; ++i) s += std::fabs(x.data[r * k + i]);
    x_l1 = std::max(x_l1, s);
    for (int64_t o = 0; o < d; ++o) {
      double dot = std::fabs(b.data[o]);
      for (int64_t i = 0; i < k; ++i) dot += std::fabs(x.data[r * k + i] * w.data[o * k + i]);
      abs_dot = std::max(abs_dot, dot);
    }
  }
  if (!p.int8) return {gamma(k + 1) * abs_dot, std::sqrt(k + 1.0) * kU * abs_dot};
  const double e = w_l1 * p.s_x / 2 + x_l1 * p.s_w / 2 + k * p.s_x * p.s_w / 4 + p.s_x * p.s_w / 2 + 1.5 * p.s_o;
  return {e, e};
}

// |w|·e where a zero weight carries nothing, even an unbounded (infinite) error.
double carry(double w, double e) { return w == 0 ? 0.0 : w * e; }

double l1(const Tensor& t, int64_t row, int64_t len) {
  double s = 0;
  for (int64_t e = 0; e < len; ++e) s += std::fabs(t.data[row * len + e]);
  return s;
}

class MhaComposite {
 public:
  explicit MhaComposite(const Case& c)
      : c_(c), heads_(c.q_heads), e_(c.head_dim), d_(c.q_heads * c.head_dim), lq_(c.q_len.constant()),
        lkv_(c.kv_len.constant()), inputs_(mha_inputs(c)) {
    for (const char* n : {"w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o"}) p_[n] = mha_parameter(c, n);
  }

  CaseTensors sdpa_tensors() const {
    CaseTensors t;
    t.q = to_heads(project(inputs_.at("query"), p_.at("w_q"), p_.at("b_q")), heads_);
    t.k = to_heads(project(inputs_.at("key"), p_.at("w_k"), p_.at("b_k")), heads_);
    t.v = to_heads(project(inputs_.at("value"), p_.at("w_v"), p_.at("b_v")), heads_);
    return t;
  }

  // [batch..., H, Lq, E] -> [batch..., Lq, D] -> out-projection.
  Tensor output(const Tensor& a) const {
    Tensor merged = swap_heads_and_seq(a);  // [batch..., Lq, H, E]
    merged.shape.pop_back();
    merged.shape.back() = d_;
    return project(merged, p_.at("w_o"), p_.at("b_o"));
  }

  double scale(const CaseTensors& t) const {
    const Tensor &w = p_.at("w_o"), &b = p_.at("b_o");
    double w_l1 = 0;
    for (int64_t o = 0; o < d_; ++o) {
      double s = 0;
      for (int64_t c = 0; c < d_; ++c) s += std::fabs(w.data[o * d_ + c]);
      w_l1 = std::max(w_l1, s);
    }
    // Also every value the module computes with: an exact int8 run stores
    // codes in double, whose rounding scales with them even where the
    // output cancels to 0 (a zero v projection).
    return std::max({w_l1 * t.v.max_abs() + b.max_abs(), t.q.max_abs(), t.k.max_abs(), t.v.max_abs()});
  }

  std::vector<int64_t> rows_of(int64_t row) const {
    const int64_t b = row / lq_, i = row % lq_;
    std::vector<int64_t> out;
    for (int64_t h = 0; h < heads_; ++h) out.push_back((b * heads_ + h) * lq_ + i);
    return out;
  }

  ErrorBound bound(const ErrorBound& sdpa, const CaseTensors& t, const Golden& gold, const Graph& g) const {
    // In-projection errors of q, k, v (bound, typical).
    std::map<std::string, std::pair<double, double>> delta;
    for (const char* n : {"q", "k", "v"}) {
      const std::string x = n == std::string("q") ? "query" : n == std::string("k") ? "key" : "value";
      delta[n] = in_projection_error(inputs_.at(x), p_.at(std::string("w_") + n), p_.at(std::string("b_") + n),
                                     projection_numerics(g, std::string("in_proj_") + n));
    }
    const double scale = std::fabs(c_.effective_scale());
    const int64_t blocks = t.q.numel() / (lq_ * e_);
    // Each SDPA row's error: the kernel set's own plus the inputs' perturbation.
    std::vector<double> err(sdpa.row_bound.size()), typical(sdpa.row_bound.size());
    for (int64_t bh = 0; bh < blocks; ++bh) {
      double k1 = 0, vmax = 0;
      for (int64_t j = 0; j < lkv_; ++j) k1 = std::max(k1, l1(t.k, bh * lkv_ + j, e_));
      for (int64_t j = 0; j < lkv_ * e_; ++j) vmax = std::max(vmax, std::fabs(t.v.data[bh * lkv_ * e_ + j]));
      for (int64_t i = 0; i < lq_; ++i) {
        const int64_t row = bh * lq_ + i;
        const double q1 = l1(t.q, row, e_);
        auto sens = [&](bool typ) {
          const double dq = typ ? delta["q"].second : delta["q"].first, dk = typ ? delta["k"].second : delta["k"].first,
                       dv = typ ? delta["v"].second : delta["v"].first;
          return carry(vmax, std::expm1(2 * scale * (dq * k1 + q1 * dk + e_ * dq * dk))) + dv;
        };
        err[row] = sdpa.row_bound[row] + sens(false);
        typical[row] = sdpa.row_typical[row] + sens(true);
      }
    }
    const ProjectionNumerics out_p = projection_numerics(g, "out_proj");
    const Tensor& w = p_.at("w_o");
    const Tensor& b = p_.at("b_o");
    const Tensor y = output(gold.out);
    ErrorBound eb;
    const int64_t rows = y.numel() / d_;
    double worst = -1, worst_carried = 0, worst_rounding = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<int64_t> inner = rows_of(r);
      double row_bound = 0, row_typ = 0;
      for (int64_t o = 0; o < d_; ++o) {
        double carried = 0, carried_typ = 0, magnitude = std::fabs(b.data[o]), magnitude_typ = magnitude;
        for (int64_t h = 0; h < heads_; ++h)
          for (int64_t e = 0; e < e_; ++e) {
            const double wa = std::fabs(w.data[o * d_ + h * e_ + e]);
            const double a = std::fabs(gold.out.data[inner[h] * e_ + e]);
            carried += carry(wa, err[inner[h]]);
            carried_typ += carry(wa, typical[inner[h]]);
            magnitude += carry(wa, a + err[inner[h]]);
            magnitude_typ += carry(wa, a + typical[inner[h]]);
          }
        double rounding, rounding_typ;
        if (out_p.int8) {
          double a_l1 = 0, a_l1_typ = 0;
          for (int64_t h = 0; h < heads_; ++h)
            for (int64_t e = 0; e < e_; ++e) {
              a_l1 += std::fabs(gold.out.data[inner[h] * e_ + e]) + err[inner[h]];
              a_l1_typ += std::fabs(gold.out.data[inner[h] * e_ + e]) + typical[inner[h]];
            }
          const double fixed = out_p.s_x * out_p.s_w / 2 + 1.5 * out_p.s_o;
          rounding = carry(out_p.s_w / 2, a_l1) + fixed;
          rounding_typ = carry(out_p.s_w / 2, a_l1_typ) + fixed;
          rounding += 2 * kU * (std::fabs(y.data[r * d_ + o]) + carried + rounding);
          rounding_typ += 2 * kU * (std::fabs(y.data[r * d_ + o]) + carried_typ + rounding_typ);
        } else {
          rounding = gamma(d_ + 1) * magnitude;
          rounding_typ = std::sqrt(d_ + 1.0) * kU * magnitude_typ;
        }
        // Every term is >= 0; an unbounded (infinite) one makes the row's bound infinite.
        if (!(carried + rounding <= row_bound)) {
          row_bound = carried + rounding;
          if (!(row_bound <= worst)) worst = row_bound, worst_carried = carried, worst_rounding = rounding;
        }
        if (!(carried_typ + rounding_typ <= row_typ)) row_typ = carried_typ + rounding_typ;
      }
      if (std::isnan(row_bound)) row_bound = INFINITY;
      eb.row_bound.push_back(row_bound);
      eb.row_typical.push_back(std::min(row_typ, row_bound));
    }
    eb.describe = [sdpa = sdpa.describe, int8 = out_p.int8, dq = delta["q"].first, dk = delta["k"].first,
                   dv = delta["v"].first, worst, worst_carried, worst_rounding] {
      return nlohmann::json{{"sdpa", sdpa ? sdpa() : nlohmann::json()},
                            {"projections", int8 ? "int8 (arm_fully_connected_s8)" : "fp32 (portable)"},
                            {"delta_q", dq}, {"delta_k", dk}, {"delta_v", dv},
                            {"largest_row_bound", worst}, {"carried_through_w_o", worst_carried},
                            {"out_projection_rounding", worst_rounding}};
    };
    return eb;
  }

 private:
  Case c_;
  int64_t heads_, e_, d_, lq_, lkv_;
  std::map<std::string, Tensor> inputs_;
  std::map<std::string, Tensor> p_;
};

}  // namespace

Composite mha_composite(const Case& c) {
  auto m = std::make_shared<const MhaComposite>(c);
  Composite out;
  out.sdpa_tensors = [m](const Assignment&) { return m->sdpa_tensors(); };
  out.output = [m](const Tensor& a) { return m->output(a); };
  out.bound = [m](const ErrorBound& s, const CaseTensors& t, const Golden& g, const Graph& graph) {
    return m->bound(s, t, g, graph);
  };
  out.rows_of = [m](int64_t row) { return m->rows_of(row); };
  out.scale = [m](const CaseTensors& t) { return m->scale(t); };
  return out;
}

}  // namespace sdpa::cortex_m
