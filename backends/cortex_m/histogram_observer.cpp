// Models torch.ao.quantization.observer.HistogramObserver (forward, reset_histogram,
// _non_linear_param_search, _compute_quantization_error, _calculate_qparams) as
// torch >= 2 computes them, each tensor op in float32 and each Python scalar in double.
#include "backends/cortex_m/histogram_observer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace sdpa::cortex_m {
namespace {

constexpr int64_t kBins = 2048;
constexpr int64_t kDstBins = 256;  // 2 ** iinfo(int8).bits
constexpr int64_t kQuantMin = -128, kQuantMax = 127;

// c10::div_floor_floating: Python's floor division of floats.
float div_floor(float a, float b) {
  if (b == 0) return a / b;
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0f;
  if (div == 0) return std::copysign(0.0f, a / b);
  float floordiv = std::floor(div);
  if (div - floordiv > 0.5f) floordiv += 1.0f;
  return floordiv;
}

// density * (end^3 - begin^3) / 3, elementwise in float32.
float l2_norm(float begin, float end, float density) {
  const float norm = (end * end * end - begin * begin * begin) / 3.0f;
  return density * norm;
}

class Search {
 public:
  Search(std::vector<float> histogram, float min_val, float max_val)
      : hist_(std::move(histogram)), min_(min_val), max_(max_val) {}

  // _non_linear_param_search: the start and end bins of the chosen range.
  std::pair<float, float> run() const {
    const float bin_width = (max_ - min_) / static_cast<float>(kBins);
    std::vector<float> csum(kBins);
    float acc = 0;
    for (int64_t i = 0; i < kBins; ++i) csum[i] = acc += hist_[i];  // integer counts: exact
    const double total = acc;
    const double stepsize = 1e-5;
    double alpha = 0.0, beta = 1.0, norm_min = std::numeric_limits<double>::infinity();
    int64_t start_bin = 0, end_bin = kBins - 1;
    while (alpha < beta) {
      const double next_alpha = alpha + stepsize, next_beta = beta - stepsize;
      // cSum[l] < next_alpha * total compares in float32 (a wrapped Python scalar).
      const float lo = static_cast<float>(next_alpha * total), hi = static_cast<float>(next_beta * total);
      int64_t l = start_bin, r = end_bin;
      while (l < end_bin && csum[l] < lo) ++l;
      while (r > start_bin && csum[r] > hi) --r;
      int64_t next_start = start_bin, next_end = end_bin;
      if (l - start_bin > end_bin - r) {
        next_start = l;
        alpha = next_alpha;
      } else {
        next_end = r;
        beta = next_beta;
      }
      if (next_start == start_bin && next_end == end_bin) continue;
      const double norm = quantization_error(next_start, next_end);
      if (norm > norm_min) break;
      norm_min = norm;
      start_bin = next_start;
      end_bin = next_end;
    }
    const float new_min = min_ + bin_width * static_cast<float>(start_bin);
    const float new_max = min_ + bin_width * static_cast<float>(end_bin + 1);
    return {new_min, new_max};
  }

 private:
  // _compute_quantization_error(next_start_bin, next_end_bin).
  double quantization_error(int64_t next_start, int64_t next_end) const {
    const double bin_width = (static_cast<double>(max_) - static_cast<double>(min_)) / kBins;
    const double dst_bin_width = bin_width * static_cast<double>(next_end - next_start + 1) / kDstBins;
    if (dst_bin_width == 0.0) return 0.0;
    const float bw = static_cast<float>(bin_width), dbw = static_cast<float>(dst_bin_width);
    const float half = static_cast<float>(dst_bin_width / 2), minus_half = static_cast<float>(-dst_bin_width / 2);
    // _get_norm(tensor(-w/2), tensor(w/2), density): the 0-dim norm rounds before density multiplies it.
    const float full_bin = (half * half * half - minus_half * minus_half * minus_half) / 3.0f;
    double sum = 0;
    for (int64_t i = 0; i < kBins; ++i) {
      const float src_begin = static_cast<float>(i - next_start) * bw;
      const float src_end = src_begin + bw;
      const float dst_begin = std::clamp(div_floor(src_begin, dbw), 0.0f, static_cast<float>(kDstBins - 1));
      const float dst_begin_center = (dst_begin + 0.5f) * dbw;
      const float dst_end = std::clamp(div_floor(src_end, dbw), 0.0f, static_cast<float>(kDstBins - 1));
      const float density = hist_[i] / bw;
      float norm = 0;
      norm += l2_norm(src_begin - dst_begin_center, half, density);
      norm += (dst_end - dst_begin - 1.0f) * (density * full_bin);
      const float dst_end_center = dst_end * dbw + half;
      norm += l2_norm(minus_half, src_end - dst_end_center, density);
      sum += norm;
    }
    return static_cast<float>(sum);  // norm.sum().item()
  }

  std::vector<float> hist_;
  float min_, max_;
};

// UniformQuantizationObserverBase._calculate_qparams, per_tensor_affine, in float32.
QParams affine_qparams(float min_val, float max_val) {
  const float min_neg = std::min(min_val, 0.0f), max_pos = std::max(max_val, 0.0f);
  float scale = (max_pos - min_neg) / static_cast<float>(kQuantMax - kQuantMin);
  scale = std::max(scale, std::numeric_limits<float>::epsilon());
  const int64_t zp = kQuantMin - static_cast<int64_t>(std::nearbyint(min_neg / scale));
  return QParams{scale, std::clamp(zp, kQuantMin, kQuantMax), kQuantMin, kQuantMax};
}

}  // namespace

QParams histogram_qparams(const Tensor& t) {
  std::vector<float> x;
  x.reserve(t.data.size());
  for (double v : t.data) {
    const float f = static_cast<float>(v);
    if (std::isnan(f)) throw std::runtime_error("RuntimeError: torch.histc: range of [nan, nan] is not finite");
    if (!std::isinf(f)) x.push_back(f);  // "torch.inf detected in input tensor, ignoring input"
  }
  // Nothing observed: calculate_qparams returns its default (1.0, 0).
  if (x.empty()) return QParams{1.0, 0, kQuantMin, kQuantMax};
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const float mn = *lo, mx = *hi;
  // min == max: bin_width is 0, so the search returns (min, min) whatever the histogram.
  if (mn == mx) return affine_qparams(mn, mn);
  std::vector<float> hist(kBins, 0.0f);
  const float range = mx - mn;
  for (float f : x) {
    int64_t pos = static_cast<int64_t>((f - mn) * static_cast<float>(kBins) / range);
    if (pos == kBins) pos = kBins - 1;  // the rightmost bin includes its right edge
    hist[std::clamp<int64_t>(pos, 0, kBins - 1)] += 1.0f;
  }
  const auto [new_min, new_max] = Search(std::move(hist), mn, mx).run();
  return affine_qparams(new_min, new_max);
}

}  // namespace sdpa::cortex_m
