// HistogramObserver against torch.ao.quantization.HistogramObserver (qint8,
// per_tensor_affine, [-128, 127], one forward call, calculate_qparams), as
// Debian's python3-torch 1.13 computes it on fixed tensors whose min and max
// are integers (1.13 truncates histc's range to int; torch >= 2 does not,
// and on these tensors the two agree).
#include "backends/cortex_m/histogram_observer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cortex_m/calibration.h"

namespace sdpa::cortex_m {
namespace {

Tensor tensor(const std::vector<double>& v) {
  Tensor t(DType::f32, {static_cast<int64_t>(v.size())});
  t.data = v;
  return t;
}

std::vector<double> bulk(int n, int mul, int mod, int shift, double div) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(((i * mul) % mod - shift) / div);
  return v;
}

std::vector<double> joined(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Golden {
  std::string name;
  std::function<std::vector<double>()> values;
  double scale;
  int64_t zero_point;
};

// Each golden's scale and zero point printed by torch 1.13; the tensors are
// Python expressions of doubles rounded to float32, written the same way here.
std::vector<Golden> goldens() {
  return {
      {"ramp", [] { return std::vector<double>{-3.0, -1.25, -0.5, 0.0, 0.3, 0.7, 1.1, 2.5, 4.0, 5.0}; },
       0.03135722875595093, -32},
      {"bulk+outliers", [] { return joined(bulk(2000, 37, 101, 50, 25.0), {-20.0, 60.0}); }, 0.31357231736183167, -64},
      {"skew", [] { return joined(bulk(3000, 53, 97, 0, 97.0), {-1.0, 30.0}); }, 0.12150926887989044, -120},
      {"tri",
       [] {
         std::vector<double> v;
         for (int i = 0; i < 5000; ++i) {
           const int d = (i * 7) % 61 - 30;
           v.push_back(d * std::abs(d) / 300.0);
         }
         return joined(v, {-4.0, 4.0});
       },
       0.03135722875595093, 0},
      // The search clips the upper tail here: the range ends at 18.740234375, not 20.
      {"twotails",
       [] {
         std::vector<double> v = bulk(20000, 37, 1001, 500, 500.0);
         for (int k = 1; k <= 30; ++k) v.push_back(-(1.0 + 9.0 * (k / 30.0) * (k / 30.0)));
         for (int k = 1; k <= 30; ++k) v.push_back(1.0 + 19.0 * (k / 30.0) * (k / 30.0));
         return v;
       },
       0.11270680278539658, -39},
      {"longtail",
       [] {
         std::vector<double> v = bulk(20000, 37, 1001, 0, 1000.0);
         for (int k = 1; k <= 40; ++k) v.push_back(1.0 + 49.0 * (k / 40.0) * (k / 40.0) * (k / 40.0));
         return v;
       },
       0.1959826946258545, -128},
      {"zeros", [] { return std::vector<double>(16, 0.0); }, 1.1920928955078125e-07, -128},
      {"constant", [] { return std::vector<double>(7, 2.5); }, 0.009803921915590763, -128},
  };
}

TEST(HistogramObserver, MatchesTorchOnFixedTensors) {
  for (const Golden& g : goldens()) {
    const QParams q = histogram_qparams(tensor(g.values()));
    EXPECT_EQ(q.scale, g.scale) << g.name;
    EXPECT_EQ(q.zero_point, g.zero_point) << g.name;
    EXPECT_EQ(q.qmin, -128);
    EXPECT_EQ(q.qmax, 127);
  }
}

// The search is what tells it from MinMax: on "twotails" MinMax keeps the
// whole range [-10, 20], the histogram clips the upper tail.
TEST(HistogramObserver, ClipsWhereMinMaxKeepsTheRange) {
  const Tensor t = tensor(goldens()[4].values());
  EXPECT_NEAR(minmax_qparams(t).scale, 30.0 / 255, 1e-12);
  EXPECT_LT(histogram_qparams(t).scale, 0.97 * 30.0 / 255);
}

// Infinities are dropped ("torch.inf detected in input tensor, ignoring
// input"); a tensor of only infinities leaves the default (1.0, 0); NaN
// raises in histc.
TEST(HistogramObserver, InfinitiesAreDroppedAndNanRaises) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = goldens()[0].values();
  const QParams plain = histogram_qparams(tensor(v));
  v.push_back(inf);
  v.push_back(-inf);
  const QParams with_inf = histogram_qparams(tensor(v));
  EXPECT_EQ(with_inf.scale, plain.scale);
  EXPECT_EQ(with_inf.zero_point, plain.zero_point);
  const QParams none = histogram_qparams(tensor({inf, -inf}));
  EXPECT_EQ(none.scale, 1.0);
  EXPECT_EQ(none.zero_point, 0);
  EXPECT_THROW(histogram_qparams(tensor({1.0, std::nan("")})), std::runtime_error);
}

}  // namespace
}  // namespace sdpa::cortex_m
