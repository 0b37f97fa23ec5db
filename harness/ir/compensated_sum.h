#pragma once
/// Compensated summation in double: each addition's rounding error is
/// recovered exactly (Knuth's TwoSum, six operations, no branch) and the
/// errors are summed beside the total, so a sum of n doubles comes out
/// within about one rounding of double of the exact sum, plus n^2 u^2 of
/// the sum of the terms' magnitudes (u = 2^-53): more accurate than an x87
/// long double accumulator (n 2^-64 of that sum), and in SSE registers
/// rather than the x87 stack. The oracle and the exact kernels sum with it.
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace sdpa {

/// sum += x, the addition's rounding error added to err (TwoSum: exactly
/// sum + x - (sum + x rounded), when the rounded sum is finite).
inline void two_sum_into(double& sum, double& err, double x) {
  const double t = sum + x;
  const double z = t - sum;
  err += (sum - (t - z)) + (x - z);
  sum = t;
}

/// A total and its error as CompensatedSum::value() combines them.
inline double compensated_value(double sum, double err) {
  return std::isfinite(sum) && err != 0.0 ? sum + err : sum;
}

/// The same total as a double-double: hi as compensated_value gives it, and
/// what its rounding lost in lo (0 for a non-finite total).
inline void compensated_value(double sum, double err, double& hi, double& lo) {
  hi = sum;
  lo = 0.0;
  if (std::isfinite(hi) && err != 0.0) two_sum_into(hi, lo, err);
  if (!std::isfinite(hi)) lo = 0.0;
}

/// a * b rounded, and its rounding error into err, so that a * b = product
/// + err exactly (Dekker's TwoProduct with Veltkamp's split: no FMA
/// needed). err is 0 where the split could overflow (|a| or |b| at or above
/// 2^995) or the product is not finite; below double's normal range it is
/// not exact.
inline double two_product(double a, double b, double& err) {
  const double p = a * b;
  constexpr double kBig = 0x1p995;
  if (!(std::fabs(a) < kBig && std::fabs(b) < kBig) || !std::isfinite(p)) {
    err = 0.0;
    return p;
  }
  constexpr double kSplit = 134217729.0;  // 2^27 + 1: halves of 26 bits
  const double ca = kSplit * a, a_hi = ca - (ca - a), a_lo = a - a_hi;
  const double cb = kSplit * b, b_hi = cb - (cb - b), b_lo = b - b_hi;
  err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo;
  return p;
}

/// p[j] = a[j] * b rounded and err[j] its rounding error, for j < n: the
/// values two_product(a[j], b, err[j]) gives, with b split once and no
/// branch in the loop (the guard a select), so that it vectorizes. p may
/// be a (each element read before it is written).
inline void two_products_by(const double* a, double b, int64_t n, double* p, double* err) {
  constexpr double kBig = 0x1p995, kSplit = 134217729.0;
  if (!(std::fabs(b) < kBig)) {
    for (int64_t j = 0; j < n; ++j) {
      p[j] = a[j] * b;
      err[j] = 0.0;
    }
    return;
  }
  const double cb = kSplit * b, b_hi = cb - (cb - b), b_lo = b - b_hi;
  for (int64_t j = 0; j < n; ++j) {
    const double x = a[j], product = x * b;
    const double ca = kSplit * x, a_hi = ca - (ca - x), a_lo = x - a_hi;
    const double e = ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo;
    // two_product's guard: |a| below 2^995 and a finite product (NaN fails both).
    const bool exact = std::fabs(x) < kBig && std::fabs(product) <= 0x1.fffffffffffffp1023;
    p[j] = product;
    err[j] = exact ? e : 0.0;
  }
}

struct CompensatedSum {
  double sum = 0.0;
  double err = 0.0;  // the rounding errors of the additions so far, summed

  CompensatedSum() = default;
  /// A sum that starts from its first term (keeps a -0 first term's sign).
  explicit CompensatedSum(double first) : sum(first) {}

  void add(double x) { two_sum_into(sum, err, x); }

  /// The total. Non-finite totals are the plain sum's (inf, or NaN for inf
  /// and -inf or a NaN term), whose error terms are NaN; a zero error
  /// leaves the sign of a zero sum as it is.
  double value() const { return compensated_value(sum, err); }
};

/// The compensated sums of a row of n outputs, out_j = sum_t a_t y_t[j] as
/// matmul and P @ V form them: the totals and the errors held in two
/// arrays, so that one term's additions to every output run side by side
/// in vector registers. Each output gets the arithmetic of a CompensatedSum
/// given its terms in the same order: the same bits.
class CompensatedRow {
 public:
  /// n outputs, each a sum from 0.
  void reset(int64_t n) {
    sum_.assign(static_cast<size_t>(n), 0.0);
    err_.assign(static_cast<size_t>(n), 0.0);
  }
  /// n outputs, each starting from its first term a * y[j].
  void start(int64_t n, double a, const double* y) {
    sum_.resize(static_cast<size_t>(n));
    err_.assign(static_cast<size_t>(n), 0.0);
    double* s = sum_.data();
    for (int64_t j = 0; j < n; ++j) s[j] = a * y[j];
  }
  /// Adds a * y[j] to output j, for every j.
  void add_scaled(double a, const double* __restrict y) {
    double* __restrict s = sum_.data();
    double* __restrict e = err_.data();
    const int64_t n = static_cast<int64_t>(sum_.size());
    for (int64_t j = 0; j < n; ++j) two_sum_into(s[j], e[j], a * y[j]);
  }
  /// The n totals into out.
  void values(double* out) const {
    for (size_t j = 0; j < sum_.size(); ++j) out[j] = compensated_value(sum_[j], err_[j]);
  }
  /// The n totals as double-doubles: out[j] as values() gives it, and what
  /// rounding it lost into low[j] (0 for a non-finite total).
  void values(double* out, double* low) const {
    for (size_t j = 0; j < sum_.size(); ++j) compensated_value(sum_[j], err_[j], out[j], low[j]);
  }

 private:
  std::vector<double> sum_, err_;
};

/// From this many outputs on, a row of sums runs side by side (its loops
/// over the outputs vectorize); below, in registers, a few at a time.
constexpr int64_t kSideBySideOutputs = 8;

/// Calls f(j, lanes) for groups of outputs j .. j + lanes - 1 covering 0 ..
/// cols - 1 (cols < kSideBySideOutputs), lanes a std::integral_constant of
/// 4, 2 or 1. A group's sums run interleaved in registers: each output's
/// additions in its own order (the same bits as one at a time), but N
/// chains at once, so an addition does not wait for the previous one's
/// result (four cycles each) as a lone chain does.
template <typename F>
inline void in_lane_groups(int64_t cols, F&& f) {
  int64_t j = 0;
  for (; j + 4 <= cols; j += 4) f(j, std::integral_constant<int, 4>{});
  if (j + 2 <= cols) {
    f(j, std::integral_constant<int, 2>{});
    j += 2;
  }
  if (j < cols) f(j, std::integral_constant<int, 1>{});
}

/// The few-output path of the row products below: for every j < cols,
/// sum_t a[t] rows(t)[j] over t in index order, in lane groups in
/// registers, then done(j, sum, err). From the first term (sum a[0]
/// rows(0)[j], err 0) or from 0 (which keeps -0 and NaN as two_sum gives them).
template <bool kFromFirst, typename Rows, typename Done>
inline void lane_group_products(const double* a, Rows rows, int64_t kk, int64_t cols, Done done) {
  in_lane_groups(cols, [&](int64_t j, auto lanes) {
    constexpr int N = decltype(lanes)::value;
    double sum[N], err[N] = {};
    for (int l = 0; l < N; ++l) sum[l] = kFromFirst ? a[0] * rows(0)[j + l] : 0.0;
    for (int64_t t = kFromFirst ? 1 : 0; t < kk; ++t) {
      const double* y = rows(t);
      for (int l = 0; l < N; ++l) two_sum_into(sum[l], err[l], a[t] * y[j + l]);
    }
    for (int l = 0; l < N; ++l) done(j + l, sum[l], err[l]);
  });
}

/// out[j] = sum_t a[t] y[t * cols + j] for every j < cols, each a
/// CompensatedSum from 0 over its kk terms in index order: the bits of
/// `row`'s reset, add_scaled per t and values. A few outputs are summed in
/// registers, in lane groups (side by side in memory, each step of a short
/// row would wait for the previous step's store and reload); more side by
/// side in `row`, whose loops over j vectorize.
inline void compensated_products(const double* a, const double* y, int64_t kk, int64_t cols, CompensatedRow& row,
                                 double* out) {
  if (cols < kSideBySideOutputs) {
    lane_group_products<false>(
        a, [&](int64_t t) { return y + t * cols; }, kk, cols,
        [&](int64_t j, double sum, double err) { out[j] = compensated_value(sum, err); });
    return;
  }
  row.reset(cols);
  for (int64_t t = 0; t < kk; ++t) row.add_scaled(a[t], y + t * cols);
  row.values(out);
}

/// The same, each sum from its first term a[0] y[j] (kk >= 1), each total
/// also as a double-double (out[j], low[j]): the bits of `row`'s start,
/// add_scaled per later t and values(out, low).
inline void compensated_products_from_first(const double* a, const double* y, int64_t kk, int64_t cols,
                                            CompensatedRow& row, double* out, double* low) {
  if (cols < kSideBySideOutputs) {
    lane_group_products<true>(
        a, [&](int64_t t) { return y + t * cols; }, kk, cols,
        [&](int64_t j, double sum, double err) { compensated_value(sum, err, out[j], low[j]); });
    return;
  }
  row.start(cols, a[0], y);
  for (int64_t t = 1; t < kk; ++t) row.add_scaled(a[t], y + t * cols);
  row.values(out, low);
}

/// out[j] = sum_t a[t] rows[t][j] for every j < cols, each from its first
/// term a[0] rows[0][j] (kk >= 1), over rows given by pointer (any stride
/// between them): the bits of `row`'s start, add_scaled per later t and
/// values(out); a few outputs in registers, in lane groups, more in `row`.
inline void compensated_row_products_from_first(const double* a, const double* const* rows, int64_t kk,
                                                int64_t cols, CompensatedRow& row, double* out) {
  if (cols < kSideBySideOutputs) {
    lane_group_products<true>(
        a, [&](int64_t t) { return rows[t]; }, kk, cols,
        [&](int64_t j, double sum, double err) { out[j] = compensated_value(sum, err); });
    return;
  }
  row.start(cols, a[0], rows[0]);
  for (int64_t t = 1; t < kk; ++t) row.add_scaled(a[t], rows[t]);
  row.values(out);
}

}  // namespace sdpa
