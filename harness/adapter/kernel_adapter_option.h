#pragma once
/// How a target opts in to kernel adapters: one of its options (aten's
/// `kernels`) takes `adapter:COMMAND`, it adds kernel_adapter_option_specs()
/// (and adapter_timeout_spec() unless it has adapter_option_specs()) to its
/// options, and makes the set with make_adapter_kernels(). The set, named
/// "adapter", computes in COMMAND every op the adapter declares (or those
/// of `adapter_ops`), and every other op as the target's base set does.
#include <memory>
#include <string>
#include <vector>

#include "harness/adapter/kernel_adapter.h"
#include "harness/check/target.h"

namespace sdpa {

inline constexpr const char* kAdapterKernelSet = "adapter";

/// `adapter_ops`: `all` (every op the adapter declares) or OP,OP,...
std::vector<OptionSpec> kernel_adapter_option_specs();

/// A kernel set run by an adapter, with what the target declares of it.
struct AdapterKernels {
  std::shared_ptr<KernelAdapter> adapter;
  KernelSet kernels{kAdapterKernelSet};
  std::vector<std::string> adapted;  // the ops computed by the adapter

  /// Claims the dtypes the adapter declares, with its numerics.
  const KernelSetInfo& info() const { return info_; }
  KernelSetInfo info_;  // made once: kernel_sets() is asked for every case
};

/// The set `option` selects when its value is adapter:COMMAND, else null.
/// Starts the adapter to read its declaration; throws InputError naming the
/// option for a bad command, an adapter that fails its hello, or an
/// `adapter_ops` entry it does not declare.
std::unique_ptr<AdapterKernels> make_adapter_kernels(const Options& options, const std::string& target,
                                                     const std::string& option, const KernelSet* base);

}  // namespace sdpa
