#include "harness/check/toys/toy_int8/int8_sdpa_kernel.h"

#include <cmath>
#include <limits>

#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::toy_int8 {
namespace {

[[noreturn]] void refuse(const std::string& why) {
  throw KernelError(KernelError::Kind::unsupported, why);
}

const QParams& qparams_of(const Tensor& t) {
  if (t.dtype != DType::i8 || !t.qparams) refuse("int8 SDPA takes quantized int8 tensors");
  return *t.qparams;
}

std::vector<Tensor> quantize(const KernelArgs& a) {
  const Tensor& x = a.tensor(0);
  const double qmax = static_cast<double>(a.integer(1));
  const double scale = x.max_abs() / qmax;  // from the tensor's own data
  Tensor out(DType::i8, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    out.data[i] = scale > 0 ? std::fmax(-qmax, std::fmin(qmax, std::round(x.data[i] / scale))) : 0.0;
  out.qparams = QParams{scale, 0, -static_cast<int64_t>(qmax), static_cast<int64_t>(qmax)};
  return one_output(std::move(out));
}

std::vector<Tensor> dequantize(const KernelArgs& a) {
  const Tensor& x = a.tensor(0);
  const double scale = qparams_of(x).scale;
  Tensor out(DType::f32, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) out.data[i] = round_to(DType::f32, x.data[i] * scale);
  return one_output(std::move(out));
}

struct Int8Sdpa {
  const Tensor &q, &k, &v;
  bool causal = false, gqa = false;
  double scale = 0, score_step = 0, prob_step = 0, out_qmax = 127;
  KernelMutant mutant = KernelMutant::none;

  Tensor run(DType out_dtype) const {
    const int64_t r = q.dim(), Hq = q.size(-3), Hkv = k.size(-3), Lq = q.size(-2), Lkv = k.size(-2),
                  E = q.size(-1), Ev = v.size(-1), batch = q.numel() / (Hq * Lq * E);
    if (r < 3 || k.size(-1) != E) refuse("int8 SDPA takes q, k, v of one rank >= 3 with equal E");
    const QParams &sq = qparams_of(q), &sk = qparams_of(k), &sv = qparams_of(v);
    const double s_o = sv.scale * static_cast<double>(sv.qmax) / out_qmax;
    FixedMultiplier logit = fixed_multiplier(sq.scale * sk.scale * scale / score_step);
    FixedMultiplier output = fixed_multiplier(s_o > 0 ? prob_step * sv.scale / s_o : 0.0);
    if (mutant == KernelMutant::score_shift) --logit.shift;
    if (mutant == KernelMutant::output_shift) --output.shift;
    Shape shape = q.shape;
    shape.back() = Ev;
    Tensor out(out_dtype, shape);
    out.qparams = QParams{s_o, 0, -static_cast<int64_t>(out_qmax), static_cast<int64_t>(out_qmax)};
    std::vector<int64_t> x(Lkv), pq(Lkv);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t hk = Hq == Hkv ? h : (gqa && Hq % Hkv == 0 ? h / (Hq / Hkv) : 0);
        const double* kb = k.data.data() + (b * Hkv + hk) * Lkv * E;
        const double* vb = v.data.data() + (b * Hkv + hk) * Lkv * Ev;
        for (int64_t i = 0; i < Lq; ++i) {
          const double* qr = q.data.data() + ((b * Hq + h) * Lq + i) * E;
          int64_t kept = causal ? std::min(i + 1, Lkv) : Lkv;  // top-left causal keeps j <= i
          int64_t xmax = std::numeric_limits<int64_t>::min();
          for (int64_t j = 0; j < kept; ++j) {
            int64_t acc = 0;
            for (int64_t e = 0; e < E; ++e)
              acc += static_cast<int64_t>(qr[e]) * static_cast<int64_t>(kb[j * E + e]);
            x[j] = requantize(acc, logit);
            xmax = std::max(xmax, x[j]);
          }
          float total = 0;
          std::vector<float> ex(kept);
          for (int64_t j = 0; j < kept; ++j)
            total += ex[j] = std::exp(static_cast<float>(static_cast<double>(x[j] - xmax) * score_step));
          for (int64_t j = 0; j < kept; ++j)
            pq[j] = static_cast<int64_t>(std::lround(static_cast<double>(ex[j] / total) / prob_step));
          double* orow = out.data.data() + ((b * Hq + h) * Lq + i) * Ev;
          for (int64_t e = 0; e < Ev; ++e) {
            int64_t acc = 0;
            for (int64_t j = 0; j < kept; ++j) acc += pq[j] * static_cast<int64_t>(vb[j * Ev + e]);
            orow[e] = static_cast<double>(
                std::max<int64_t>(-out.qparams->qmax, std::min<int64_t>(out.qparams->qmax, requantize(acc, output))));
          }
        }
      }
    return out;
  }
};

std::vector<Tensor> int8_sdpa(const KernelArgs& a, KernelMutant mutant) {
  Int8Sdpa s{a.tensor(0), a.tensor(1), a.tensor(2)};
  s.causal = a.flag(3, false);
  s.scale = a.real(4);
  s.gqa = a.flag(5, false);
  s.score_step = *a.kwarg_real("score_step");
  s.prob_step = *a.kwarg_real("prob_step");
  s.out_qmax = *a.kwarg_real("out_qmax");
  s.mutant = mutant;
  return {s.run(a.out_dtype())};
}

// Exact SDPA on dequantized int8 inputs; the result in units of the output scale.
std::vector<Tensor> exact_sdpa(const KernelArgs& a) {
  const Tensor &q = a.tensor(0), &k = a.tensor(1), &v = a.tensor(2);
  const bool causal = a.flag(3, false), gqa = a.flag(5, false);
  const long double scale = a.real(4), out_qmax = *a.kwarg_real("out_qmax");
  const QParams &sq = qparams_of(q), &sk = qparams_of(k), &sv = qparams_of(v);
  const double s_o = sv.scale * static_cast<double>(sv.qmax) / static_cast<double>(out_qmax);
  const int64_t Hq = q.size(-3), Hkv = k.size(-3), Lq = q.size(-2), Lkv = k.size(-2), E = q.size(-1),
                Ev = v.size(-1), batch = q.numel() / (Hq * Lq * E);
  Shape shape = q.shape;
  shape.back() = Ev;
  Tensor out(a.out_dtype(), shape);
  out.qparams = QParams{s_o, 0, -static_cast<int64_t>(out_qmax), static_cast<int64_t>(out_qmax)};
  std::vector<long double> p(Lkv);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = Hq == Hkv ? h : (gqa && Hq % Hkv == 0 ? h / (Hq / Hkv) : 0);
      const double* kb = k.data.data() + (b * Hkv + hk) * Lkv * E;
      const double* vb = v.data.data() + (b * Hkv + hk) * Lkv * Ev;
      for (int64_t i = 0; i < Lq; ++i) {
        const double* qr = q.data.data() + ((b * Hq + h) * Lq + i) * E;
        const int64_t kept = causal ? std::min(i + 1, Lkv) : Lkv;
        long double mx = -std::numeric_limits<long double>::infinity(), total = 0;
        for (int64_t j = 0; j < kept; ++j) {
          long double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += static_cast<long double>(qr[e]) * sq.scale * kb[j * E + e] * sk.scale;
          mx = std::fmax(mx, p[j] = dot * scale);
        }
        for (int64_t j = 0; j < kept; ++j) total += p[j] = std::exp(p[j] - mx);
        double* orow = out.data.data() + ((b * Hq + h) * Lq + i) * Ev;
        for (int64_t e = 0; e < Ev; ++e) {
          long double acc = 0;
          for (int64_t j = 0; j < kept; ++j) acc += p[j] / total * vb[j * Ev + e] * sv.scale;
          orow[e] = s_o > 0 ? static_cast<double>(acc / s_o) : 0.0;
        }
      }
    }
  return one_output(std::move(out));
}

}  // namespace

KernelSet exact_int8_kernels() {
  KernelSet k = make_reference_kernels("exact", Numerics::exact);
  k.add(kQuantizeOp, [](const KernelArgs& a) {
    Tensor t = a.tensor(0);
    const int64_t qmax = a.integer(1);
    const double s = t.max_abs() / static_cast<double>(qmax);
    for (double& x : t.data) x = s > 0 ? x / s : 0.0;
    t.dtype = DType::i8;
    t.qparams = QParams{s, 0, -qmax, qmax};
    return one_output(std::move(t));
  });
  k.add(kSdpaInt8Op, exact_sdpa);
  k.add(kDequantizeOp, [](const KernelArgs& a) {
    Tensor t = a.tensor(0);
    for (double& x : t.data) x *= qparams_of(a.tensor(0)).scale;
    t.dtype = DType::f32;
    t.qparams.reset();
    return one_output(std::move(t));
  });
  return k;
}

FixedMultiplier fixed_multiplier(double real) {
  FixedMultiplier m;
  if (real == 0 || !std::isfinite(real)) return m;
  m.negative = real < 0;
  int exp = 0;
  const double f = std::frexp(std::fabs(real), &exp);  // |real| = f * 2^exp, f in [0.5, 1)
  m.m0 = std::llround(std::ldexp(f, 31));
  if (m.m0 == (int64_t{1} << 31)) m.m0 /= 2, ++exp;
  m.shift = 31 - exp;
  if (m.shift < 0) refuse("requantization multiplier " + std::to_string(real) + " out of range");
  return m;
}

int64_t requantize(int64_t x, const FixedMultiplier& m) {
  if (m.m0 == 0 || m.shift > 62) return 0;
  // |x| < 2^32 and m0 < 2^31: the product fits in 63 bits.
  const unsigned __int128 p = static_cast<unsigned __int128>(x < 0 ? -x : x) * static_cast<uint64_t>(m.m0);
  if (m.shift < 0) {  // only a mutant's shift: a multiplier >= 2^31
    const int64_t r = static_cast<int64_t>(p << -m.shift);
    return ((x < 0) != m.negative) ? -r : r;
  }
  const unsigned __int128 half = m.shift > 0 ? (static_cast<unsigned __int128>(1) << (m.shift - 1)) : 0;
  const int64_t r = static_cast<int64_t>((p + half) >> m.shift);
  return ((x < 0) != m.negative) ? -r : r;
}

KernelSet int8_kernels(KernelMutant mutant) {
  KernelSet k("int8");
  k.add(kQuantizeOp, quantize);
  k.add(kDequantizeOp, dequantize);
  k.add(kSdpaInt8Op, [mutant](const KernelArgs& a) { return int8_sdpa(a, mutant); });
  return k;
}

}  // namespace sdpa::toy_int8
