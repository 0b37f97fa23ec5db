#include "backends/xnnpack/xnn/xnnpack_ops.h"

#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <utility>

#include "backends/xnnpack/xnn/half.h"

#ifndef SDPA_XNNPACK_PACKAGE_VERSION
#define SDPA_XNNPACK_PACKAGE_VERSION "unknown"
#endif

namespace sdpa::xnnpack {
namespace {

constexpr float kInf = INFINITY;

struct OperatorDeleter {
  void operator()(xnn_operator_t op) const { xnn_delete_operator(op); }
};
using Operator = std::unique_ptr<xnn_operator, OperatorDeleter>;

void check(xnn_status status, const char* op, const std::string& detail = "") {
  if (status != xnn_status_success) throw XnnpackError(op, status, detail);
}

void ensure_initialized() {
  static const xnn_status status = xnn_initialize(/*allocator=*/nullptr);  // once, thread-safe (magic static)
  check(status, "xnn_initialize");
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("xnnpack: negative dimension");
    n *= d;
  }
  return n;
}

void check_data(const FloatTensor& t, const char* what) {
  if (static_cast<int64_t>(t.data.size()) != numel(t.shape))
    throw std::invalid_argument(std::string("xnnpack: ") + what + ": data size does not match its shape");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

// XNNPACK may read up to XNN_EXTRA_BYTES past the end of an input: every
// input goes through a copy with that much zeroed tail.
constexpr size_t kExtraFloats = XNN_EXTRA_BYTES / sizeof(float);
constexpr size_t kExtraHalves = XNN_EXTRA_BYTES / sizeof(uint16_t);

std::vector<float> padded(const std::vector<float>& x) {
  std::vector<float> out(x.size() + kExtraFloats, 0.0f);
  std::copy(x.begin(), x.end(), out.begin());
  return out;
}

std::vector<uint16_t> padded_half(const std::vector<float>& x) {
  std::vector<uint16_t> out(x.size() + kExtraHalves, 0);
  std::transform(x.begin(), x.end(), out.begin(), half_bits_from_float);
  return out;
}

std::vector<float> from_half(const std::vector<uint16_t>& h) {
  std::vector<float> out(h.size());
  std::transform(h.begin(), h.end(), out.begin(), float_from_half_bits);
  return out;
}

// Per batch: out[i] = a[i] ([M, K]) x kernel[i]^T, kernel [B, N, K].
FloatTensor fully_connected_batches(const FloatTensor& a, const std::vector<float>& kernel, int64_t n,
                                    Precision precision) {
  ensure_initialized();
  const int64_t batches = a.shape[0], m = a.shape[1], k = a.shape[2];
  FloatTensor out{{batches, m, n}, std::vector<float>(static_cast<size_t>(batches * m * n))};
  std::ostringstream detail;
  detail << "input_channels (K) " << k << ", output_channels (N) " << n << ", batch_size (M) " << m;
  if (precision == Precision::f32) {
    const std::vector<float> input = padded(a.data);
    const std::vector<float> weights = padded(kernel);
    for (int64_t i = 0; i < batches; ++i) {
      xnn_operator_t raw = nullptr;
      check(xnn_create_fully_connected_nc_f32(k, n, /*input_stride=*/k, /*output_stride=*/n,
                                              weights.data() + i * n * k, /*bias=*/nullptr, -kInf, kInf,
                                              /*flags=*/0, &raw),
            "xnn_create_fully_connected_nc_f32", detail.str());
      Operator op(raw);
      check(xnn_setup_fully_connected_nc_f32(op.get(), m, input.data() + i * m * k, out.data.data() + i * m * n,
                                             /*threadpool=*/nullptr),
            "xnn_setup_fully_connected_nc_f32", detail.str());
      check(xnn_run_operator(op.get(), /*threadpool=*/nullptr), "xnn_run_operator", detail.str());
    }
    return out;
  }
  const std::vector<uint16_t> input = padded_half(a.data);
  const std::vector<uint16_t> weights = padded_half(kernel);
  std::vector<uint16_t> result(out.data.size());
  for (int64_t i = 0; i < batches; ++i) {
    xnn_operator_t raw = nullptr;
    check(xnn_create_fully_connected_nc_f16(k, n, k, n, weights.data() + i * n * k, /*bias=*/nullptr, -kInf, kInf,
                                            /*flags=*/0, &raw),
          "xnn_create_fully_connected_nc_f16", detail.str());
    Operator op(raw);
    check(xnn_setup_fully_connected_nc_f16(op.get(), m, input.data() + i * m * k, result.data() + i * m * n,
                                           /*threadpool=*/nullptr),
          "xnn_setup_fully_connected_nc_f16", detail.str());
    check(xnn_run_operator(op.get(), /*threadpool=*/nullptr), "xnn_run_operator", detail.str());
  }
  out.data = from_half(result);
  return out;
}

void check_rank3(const FloatTensor& t, const char* what) {
  if (t.shape.size() != 3) throw std::invalid_argument(std::string("xnnpack bmm: ") + what + " must have rank 3");
  check_data(t, what);
}

}  // namespace

XnnpackError::XnnpackError(std::string op_, int status_, const std::string& detail)
    : std::runtime_error(op_ + " returned " + xnn_status_name(status_) + (detail.empty() ? "" : ": " + detail)),
      op(std::move(op_)),
      status(status_),
      status_name(xnn_status_name(status_)) {}

std::string xnn_status_name(int status) {
  switch (status) {
    case xnn_status_success: return "xnn_status_success";
    case xnn_status_uninitialized: return "xnn_status_uninitialized";
    case xnn_status_invalid_parameter: return "xnn_status_invalid_parameter";
    case xnn_status_invalid_state: return "xnn_status_invalid_state";
    case xnn_status_unsupported_parameter: return "xnn_status_unsupported_parameter";
    case xnn_status_unsupported_hardware: return "xnn_status_unsupported_hardware";
    case xnn_status_out_of_memory: return "xnn_status_out_of_memory";
    default: return "xnn_status_" + std::to_string(status);
  }
}

const char* xnnpack_package_version() { return SDPA_XNNPACK_PACKAGE_VERSION; }

bool f16_supported() {
  static const bool supported = [] {
    ensure_initialized();
    const uint16_t one = half_bits_from_float(1.0f);
    const uint16_t kernel[1 + kExtraHalves] = {one};
    xnn_operator_t raw = nullptr;
    const xnn_status s = xnn_create_fully_connected_nc_f16(1, 1, 1, 1, kernel, nullptr, -kInf, kInf, 0, &raw);
    Operator op(raw);
    return s == xnn_status_success;
  }();
  return supported;
}

// Runs xnn_create_fully_connected_nc_f32 / _f16 once per batch (kernel = b[i]^T).
FloatTensor bmm(const FloatTensor& a, const FloatTensor& b, Precision precision) {
  check_rank3(a, "a");
  check_rank3(b, "b");
  if (a.shape[0] != b.shape[0] || a.shape[2] != b.shape[1])
    throw std::invalid_argument("xnnpack bmm: [B, M, K] x [B, K, N] needs equal B and K, got " + shape_text(a.shape) +
                                " x " + shape_text(b.shape));
  const int64_t batches = b.shape[0], k = b.shape[1], n = b.shape[2];
  std::vector<float> kernel(b.data.size());  // [B, N, K]
  for (int64_t i = 0; i < batches; ++i)
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n; ++c) kernel[(i * n + c) * k + r] = b.data[(i * k + r) * n + c];
  return fully_connected_batches(a, kernel, n, precision);
}

// Runs xnn_create_fully_connected_nc_f32 / _f16 once per batch (kernel = bt[i]).
FloatTensor bmm_transposed_b(const FloatTensor& a, const FloatTensor& bt, Precision precision) {
  check_rank3(a, "a");
  check_rank3(bt, "bt");
  if (a.shape[0] != bt.shape[0] || a.shape[2] != bt.shape[2])
    throw std::invalid_argument("xnnpack bmm_transposed_b: [B, M, K] x [B, N, K]^T needs equal B and K, got " +
                                shape_text(a.shape) + " x " + shape_text(bt.shape));
  return fully_connected_batches(a, bt.data, bt.shape[1], precision);
}

// Runs xnn_create_softmax_nc_f32 over rows of the last dimension.
FloatTensor softmax_last_dim(const FloatTensor& x) {
  if (x.shape.empty()) throw std::invalid_argument("xnnpack softmax: rank must be >= 1");
  check_data(x, "x");
  ensure_initialized();
  const int64_t channels = x.shape.back();
  const int64_t rows = channels == 0 ? 0 : numel(x.shape) / channels;
  const std::string detail = "channels " + std::to_string(channels) + ", batch_size " + std::to_string(rows);
  xnn_operator_t raw = nullptr;
  check(xnn_create_softmax_nc_f32(channels, channels, channels, /*flags=*/0, &raw), "xnn_create_softmax_nc_f32",
        detail);
  Operator op(raw);
  const std::vector<float> input = padded(x.data);
  FloatTensor out{x.shape, std::vector<float>(x.data.size())};
  check(xnn_setup_softmax_nc_f32(op.get(), rows, input.data(), out.data.data(), nullptr), "xnn_setup_softmax_nc_f32",
        detail);
  check(xnn_run_operator(op.get(), nullptr), "xnn_run_operator", detail);
  return out;
}

// Runs xnn_create_multiply_nd_f32 / _f16 (numpy broadcasting done by XNNPACK).
FloatTensor multiply(const FloatTensor& a, const FloatTensor& b, Precision precision) {
  check_data(a, "a");
  check_data(b, "b");
  ensure_initialized();
  // The output shape for the buffer; XNNPACK's setup rejects shapes that do not broadcast.
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> out_shape(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.shape.size() ? 1 : a.shape[i - (rank - a.shape.size())];
    const int64_t db = i < rank - b.shape.size() ? 1 : b.shape[i - (rank - b.shape.size())];
    out_shape[i] = da == 1 ? db : da;
  }
  const std::vector<size_t> sa(a.shape.begin(), a.shape.end()), sb(b.shape.begin(), b.shape.end());
  const std::string detail = shape_text(a.shape) + " * " + shape_text(b.shape);
  FloatTensor out{out_shape, std::vector<float>(static_cast<size_t>(numel(out_shape)))};
  xnn_operator_t raw = nullptr;
  if (precision == Precision::f32) {
    check(xnn_create_multiply_nd_f32(-kInf, kInf, 0, &raw), "xnn_create_multiply_nd_f32", detail);
    Operator op(raw);
    const std::vector<float> ia = padded(a.data), ib = padded(b.data);
    check(xnn_setup_multiply_nd_f32(op.get(), sa.size(), sa.data(), sb.size(), sb.data(), ia.data(), ib.data(),
                                    out.data.data(), nullptr),
          "xnn_setup_multiply_nd_f32", detail);
    check(xnn_run_operator(op.get(), nullptr), "xnn_run_operator", detail);
    return out;
  }
  check(xnn_create_multiply_nd_f16(-kInf, kInf, 0, &raw), "xnn_create_multiply_nd_f16", detail);
  Operator op(raw);
  const std::vector<uint16_t> ia = padded_half(a.data), ib = padded_half(b.data);
  std::vector<uint16_t> result(out.data.size());
  check(xnn_setup_multiply_nd_f16(op.get(), sa.size(), sa.data(), sb.size(), sb.data(), ia.data(), ib.data(),
                                  result.data(), nullptr),
        "xnn_setup_multiply_nd_f16", detail);
  check(xnn_run_operator(op.get(), nullptr), "xnn_run_operator", detail);
  out.data = from_half(result);
  return out;
}

}  // namespace sdpa::xnnpack
