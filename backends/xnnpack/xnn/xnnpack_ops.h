#pragma once
/// The real XNNPACK library (Debian libxnnpack-dev, the February 2022 operator
/// API: xnn_create_* / xnn_setup_* / xnn_run_operator) behind a small C++ API
/// with no XNNPACK type in it. Every operator runs on the calling thread (no
/// pthreadpool), so results do not depend on a thread count. Operators are
/// created, run and deleted per call; the library is initialized once, on
/// first use, thread-safely.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace sdpa::xnnpack {

/// A dense row-major float tensor.
struct FloatTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// The element type an operator runs in. f16: operands are given as floats
/// and rounded to binary16 (nearest even, half.h) on entry; results are the
/// operator's binary16 outputs, returned exactly as floats.
enum class Precision { f32, f16 };

/// An XNNPACK function returned a status other than xnn_status_success (the
/// real library), or the removed SDPA operator would have (the model in
/// xnnpack_sdpa_model.h, whose `what()` then carries the upstream log text).
struct XnnpackError : std::runtime_error {
  XnnpackError(std::string op, int status, const std::string& detail);
  std::string op;           ///< the xnn_* function that returned the status
  int status;               ///< the enum xnn_status value
  std::string status_name;  ///< e.g. "xnn_status_invalid_parameter"
};

/// The name of an enum xnn_status value ("xnn_status_invalid_parameter");
/// "xnn_status_<n>" for a value xnnpack.h does not declare.
std::string xnn_status_name(int status);

/// The Debian version of libxnnpack-dev this library was configured against.
const char* xnnpack_package_version();

/// Whether this library on this CPU runs fp16 operators. When it does not,
/// an f16 call throws XnnpackError with xnn_status_unsupported_hardware.
bool f16_supported();

// A shape or data-size mismatch in a call (wrong rank, batch or inner
// dimension, data.size() != product of shape, a negative dimension) is a
// misuse of this API and throws std::invalid_argument; sizes XNNPACK itself
// rejects (zero channels, a rank over 6, a non-broadcastable shape) reach
// XNNPACK and come back as XnnpackError.

/// [B, M, K] x [B, K, N] -> [B, M, N]; per batch, xnn_create_fully_connected_nc_{f32,f16}
/// with kernel = b[i] transposed to [N, K] (output_channels N, input_channels K), no bias, clamp [-inf, inf].
FloatTensor bmm(const FloatTensor& a, const FloatTensor& b, Precision precision = Precision::f32);

/// [B, M, K] x [B, N, K]^T -> [B, M, N] (q x k^T); per batch, xnn_create_fully_connected_nc_{f32,f16}
/// with kernel = bt[i] as given ([N, K]), no bias, clamp [-inf, inf].
FloatTensor bmm_transposed_b(const FloatTensor& a, const FloatTensor& bt, Precision precision = Precision::f32);

/// Softmax over the last dimension of a tensor of rank >= 1, in f32; runs
/// xnn_create_softmax_nc_f32 (this XNNPACK version has no f16 softmax).
FloatTensor softmax_last_dim(const FloatTensor& x);

/// a * b with numpy broadcasting (rank <= 6); runs xnn_create_multiply_nd_{f32,f16}, clamp [-inf, inf].
FloatTensor multiply(const FloatTensor& a, const FloatTensor& b, Precision precision = Precision::f32);

}  // namespace sdpa::xnnpack
