#include "harness/check/compare.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sdpa {
namespace {

Tensor out_of(std::vector<double> v) {
  Tensor t(DType::f32, {2, static_cast<int64_t>(v.size() / 2)});
  t.data = std::move(v);
  return t;
}

Golden golden_of(std::vector<double> v) {
  Golden g;
  g.out = out_of(std::move(v));
  g.out.dtype = DType::f64;
  g.fully_masked.assign(2, 0);
  return g;
}

TEST(Compare, NonFiniteValuesMatchExactly) {
  const double nan = std::nan("");
  Golden g = golden_of({nan, INFINITY, -INFINITY, 1.0});
  Comparison c = compare_exact(out_of({nan, INFINITY, -INFINITY, 1.0}), g, 1.0);
  EXPECT_TRUE(c.within);
  EXPECT_TRUE(c.nonfinite_rows.empty());
  EXPECT_EQ(c.nonfinite_first, -1);
}

TEST(Compare, EachDifferenceInFinitenessNamesItsFirstElement) {
  const double nan = std::nan("");
  struct Row {
    double got, want;
  };
  // A number against NaN or inf, NaN against inf, and infs of opposite sign.
  for (Row r : {Row{1.0, nan}, Row{nan, 1.0}, Row{INFINITY, 1.0}, Row{nan, INFINITY}, Row{INFINITY, nan},
                Row{-INFINITY, INFINITY}}) {
    Comparison c = compare_exact(out_of({0.5, 0.5, 0.5, r.got}), golden_of({0.5, 0.5, 0.5, r.want}), 1.0);
    EXPECT_FALSE(c.within) << r.got << " vs " << r.want;
    EXPECT_EQ(c.nonfinite_rows, std::vector<int64_t>{1}) << r.got << " vs " << r.want;
    EXPECT_EQ(c.nonfinite_first, 3) << r.got << " vs " << r.want;
    ErrorBound b;
    b.row_bound = b.row_typical = {1.0, 1.0};
    Comparison a = compare_accuracy(out_of({0.5, 0.5, 0.5, r.got}), out_of({0.5, 0.5, 0.5, r.want}),
                                    golden_of({0.5, 0.5, 0.5, r.want}), b, DType::f32);
    EXPECT_FALSE(a.within);
    EXPECT_EQ(a.nonfinite_first, 3);
  }
}

// A golden past the output dtype's largest value rounds to its inf: f16's
// 72782.2 (65504 / 0.9) is +inf there, so an f16 kernel's +inf is right,
// while a -inf, a NaN or the same golden in f32 (where it is finite) is not.
TEST(Compare, AGoldenPastTheDtypesRangeMatchesTheInfItRoundsTo) {
  ErrorBound b;
  b.row_bound = b.row_typical = {1.0, 1.0};
  auto accuracy = [&](double got, double want, DType dtype) {
    return compare_accuracy(out_of({0.5, 0.5, 0.5, got}), out_of({0.5, 0.5, 0.5, got}),
                            golden_of({0.5, 0.5, 0.5, want}), b, dtype);
  };
  EXPECT_TRUE(accuracy(INFINITY, 72782.2222, DType::f16).within);
  EXPECT_TRUE(accuracy(-INFINITY, -72782.2222, DType::f16).within);
  EXPECT_FALSE(accuracy(-INFINITY, 72782.2222, DType::f16).within);
  EXPECT_FALSE(accuracy(std::nan(""), 72782.2222, DType::f16).within);
  EXPECT_FALSE(accuracy(INFINITY, 72782.2222, DType::f32).within);
  EXPECT_FALSE(accuracy(INFINITY, 65504.0, DType::f16).within);  // f16's largest value is finite
}

}  // namespace
}  // namespace sdpa
