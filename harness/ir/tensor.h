#pragma once
/// A dense, contiguous (row-major) tensor. Elements are stored as double,
/// which holds every value of every dtype here exactly; `dtype` says which
/// values are legal, and kernels round to it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/ir/dtype.h"

namespace sdpa {

/// Per-tensor affine quantization: real = (q - zero_point) * scale.
struct QParams {
  double scale = 1.0;
  int64_t zero_point = 0;
  int64_t qmin = -128;
  int64_t qmax = 127;
  bool operator==(const QParams& o) const {
    return scale == o.scale && zero_point == o.zero_point && qmin == o.qmin && qmax == o.qmax;
  }
};

using Shape = std::vector<int64_t>;
int64_t numel_of(const Shape& s);
std::string shape_str(const Shape& s);
/// Row-major strides of a contiguous tensor.
std::vector<int64_t> strides_of(const Shape& s);

struct Tensor {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<double> data;
  std::optional<QParams> qparams;

  Tensor() = default;
  Tensor(DType t, Shape s, double fill = 0.0);
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  /// Size of dimension d; negative d counts from the end.
  int64_t size(int64_t d) const;
  double max_abs() const;  // over finite elements
};

/// Broadcasts shapes NumPy-style; nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

/// Flat offset into a tensor of `shape` for an index into the broadcast
/// result of rank >= shape.size() (size-1 dims read element 0).
int64_t broadcast_offset(const Shape& shape, const std::vector<int64_t>& strides,
                         const std::vector<int64_t>& index);

}  // namespace sdpa
