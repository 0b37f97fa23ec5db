#include "harness/ir/tensor.h"

#include <cmath>
#include <stdexcept>

namespace sdpa {

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

Tensor::Tensor(DType t, Shape s, double fill) : dtype(t), shape(std::move(s)) {
  data.assign(static_cast<size_t>(numel_of(shape)), fill);
}

int64_t Tensor::size(int64_t d) const {
  int64_t r = dim();
  if (d < 0) d += r;
  if (d < 0 || d >= r)
    throw std::out_of_range("dimension " + std::to_string(d) + " out of range for rank " +
                            std::to_string(r));
  return shape[d];
}

double Tensor::max_abs() const {
  double m = 0;
  for (double x : data)
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  return m;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t broadcast_offset(const Shape& shape, const std::vector<int64_t>& strides,
                         const std::vector<int64_t>& index) {
  size_t skip = index.size() - shape.size();
  int64_t off = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) off += index[skip + i] * strides[i];
  return off;
}

}  // namespace sdpa
