// Models calibration with torch.ao's MinMaxObserver (per-tensor affine int8),
// the observer the issue specifies for the Cortex-M quantizer's activations.
#include "backends/cortex_m/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/linear_kernel.h"
#include "harness/io/json_reader.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cortex_m {

namespace {

const std::string kSeedKey = std::string(kExamplePrefix) + "data_seed";

}  // namespace

void attach_example_inputs(Graph& g, const std::map<std::string, Tensor>& inputs, uint64_t data_seed) {
  for (const auto& [name, t] : inputs) g.constants[kExamplePrefix + name] = t;
  // Two 32-bit halves: a double holds each exactly.
  Tensor seed(DType::i64, {2});
  seed.data = {static_cast<double>(data_seed >> 32), static_cast<double>(data_seed & 0xffffffffu)};
  g.constants[kSeedKey] = seed;
}

namespace {

// The exact reference kernels and aten.linear (the mha form's projections).
const KernelSet& calibration_kernels() {
  static const KernelSet k = [] {
    KernelSet s = make_reference_kernels("exact", Numerics::exact);
    add_linear_kernel(s, /*exact=*/true);
    return s;
  }();
  return k;
}

}  // namespace

Execution calibrate(const Graph& g) {
  std::map<std::string, Tensor> inputs;
  for (const Node& n : g.nodes) {
    if (n.op != "placeholder") continue;
    const std::string& input = std::get<std::string>(n.args.at(0));
    auto it = g.constants.find(kExamplePrefix + input);
    if (it == g.constants.end())
      throw InputError("calibration: the graph carries no example input for placeholder %" + n.name);
    inputs[input] = it->second;
  }
  RunContext ctx;
  if (auto it = g.constants.find(kSeedKey); it != g.constants.end() && it->second.data.size() == 2)
    ctx.data_seed = (static_cast<uint64_t>(it->second.data[0]) << 32) | static_cast<uint64_t>(it->second.data[1]);
  return interpret(g, calibration_kernels(), inputs, ctx, /*keep_values=*/true);
}

QParams minmax_qparams(const Tensor& x) {
  double lo = 0, hi = 0;
  for (double v : x.data)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  const double eps = std::numeric_limits<float>::epsilon();
  const double scale = std::max((hi - lo) / 255.0, eps);
  const double zp = std::clamp(-128.0 - std::nearbyint(lo / scale), -128.0, 127.0);
  return QParams{scale, static_cast<int64_t>(zp), -128, 127};
}

}  // namespace sdpa::cortex_m
