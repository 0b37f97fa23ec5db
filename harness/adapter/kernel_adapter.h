#pragma once
/// Kernels computed in a child process, the kernel adapter (docs/adapters.md,
/// kind "kernel"): PyTorch's own ops in Python, say, as a kernel set of a
/// target, so that the accuracy check, with the bound of the numerics the
/// adapter declares, applies to them.
///
/// The adapter is started once where the target is made, to read its
/// declaration (ops, dtypes, numerics), and stopped; then each process that
/// runs kernels (a worker, the command in process) starts its own on its
/// first kernel call and keeps it; after a fault it is stopped and started
/// again on the next call. A fault (it exits, hangs past the per-call
/// timeout, writes a malformed line, answers outputs unlike the node's, or
/// another declaration at a later start) throws KernelFault with the
/// adapter's words and the end of its stderr; a refusal is a KernelError of
/// the kind it names, as a kernel of the process would throw it.
#include <memory>
#include <string>
#include <vector>

#include "harness/adapter/adapter_pass.h"
#include "harness/adapter/kernel_protocol.h"
#include "harness/isolate/line_child.h"

namespace sdpa {

class KernelAdapter {
 public:
  /// Starts the adapter, reads its hello and stops it. Throws InputError
  /// starting with `where` (the option that named it) when it fails there.
  KernelAdapter(AdapterConfig config, std::string kernel_set, std::string target, Options options,
                const std::string& where);
  KernelAdapter(const KernelAdapter&) = delete;
  KernelAdapter& operator=(const KernelAdapter&) = delete;

  const KernelDeclaration& declaration() const { return declared_; }
  const AdapterConfig& config() const { return config_; }

  /// Computes the node of `a` in the adapter.
  std::vector<Tensor> call(const KernelArgs& a);

  /// Adapter processes this process started (the hello read where the
  /// target was made counts as one).
  int starts() const { return child_.starts(); }

 private:
  void ensure_started(const KernelArgs& a);
  std::string exchange(const std::string& line, double timeout_s, const KernelArgs& a);
  [[noreturn]] void fault(Verdict verdict, const std::string& what, const KernelArgs& a);

  AdapterConfig config_;
  std::string kernel_set_, target_;
  Options options_;
  KernelDeclaration declared_;
  LineChild child_;
  int64_t next_id_ = 1;
};

/// Kernel set `name`: each op of `ops` sent to the adapter, and every other
/// op of `base` (none: no other op) computed as `base` computes it.
KernelSet adapter_kernel_set(const std::shared_ptr<KernelAdapter>& adapter, const std::string& name,
                             const std::vector<std::string>& ops, const KernelSet* base);

/// The numerics the adapter declares for a case's dtype (none where it declares none).
NumericsFn adapter_numerics(const KernelDeclaration& d);

}  // namespace sdpa
