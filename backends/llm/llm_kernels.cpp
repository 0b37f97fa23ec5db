#include "backends/llm/llm_kernels.h"

#include "backends/common/libtorch_kernels.h"
#include "backends/common/sdpa_entry.h"
#include "harness/case/case.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::llm {

KernelSet custom_ops_kernels(KernelFault fault, int64_t threads, EtRevision rev) {
  KernelSet k("custom_ops");
  const KernelSet& aten = libtorch_kernels();
  for (const auto& op : aten.ops()) k.add(op, *aten.find(op));
  KernelSet portable = make_reference_kernels("portable", Numerics::emulated);
  k.add(kSdpaOp, *portable.find(kSdpaOp));
  k.add(kCustomSdpaOp, custom_sdpa_kernel(Numerics::emulated, fault, threads, rev));
  return k;
}

KernelSet exact_custom_ops(int64_t threads, EtRevision rev) {
  KernelSet k = make_reference_kernels("exact", Numerics::exact);
  k.add(kCustomSdpaOp, custom_sdpa_kernel(Numerics::exact, {}, threads, rev));
  return k;
}

int64_t threads_option(const std::map<std::string, std::string>& options) {
  return std::stoll(options.at("threads"));  // the option's choices are all counts
}

const std::map<std::string, KernelFault>& kernel_mutants() {
  static const std::map<std::string, KernelFault> m = [] {
    std::map<std::string, KernelFault> out = {{"none", {}}};
    out["pv-bf16-accumulation"].pv_accumulation = DType::bf16;
    out["nan-to-zero"].nan_to_zero = true;
    out["causal-offset-ignores-start-pos"].causal_offset_ignores_start_pos = true;
    out["num-keys-without-start-pos"].num_keys_without_start_pos = true;
    return out;
  }();
  return m;
}

KernelNumerics custom_sdpa_numerics(const Case& c, const Graph& g, DType probabilities) {
  if (g.count(kCustomSdpaOp) == 0) return KernelNumerics::upcast(c.dtype, /*split_scale=*/true);
  if (!is_floating(c.dtype)) return {};
  return KernelNumerics::floating({c.dtype, DType::f32, DType::f32, DType::f32, probabilities, false});
}

}  // namespace sdpa::llm
