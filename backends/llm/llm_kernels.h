#pragma once
/// The kernel sets both llm entry forms run: the llama.custom_sdpa model
/// with ATen ops from LibTorch, and its exact twin for the soundness check.
#include <map>
#include <string>

#include "backends/llm/custom_sdpa_kernel.h"
#include "harness/check/numerics.h"
#include "harness/ir/kernel_set.h"

namespace sdpa::llm {

/// ATen ops from LibTorch, llama.custom_sdpa from the model (with `fault`,
/// a self-test's deliberate error), and a kept aten SDPA as ExecuTorch
/// lowers it: its math decomposition on portable kernels. `threads` and
/// `rev`: the threadpool custom_sdpa runs on and the ExecuTorch tree it
/// comes from (custom_sdpa_kernel).
KernelSet custom_ops_kernels(KernelFault fault, int64_t threads = 1, EtRevision rev = {});

/// The reference kernels in exact numerics, with the exact custom_sdpa.
KernelSet exact_custom_ops(int64_t threads = 1, EtRevision rev = {});

/// The llm targets' option "threads" (one of its choices) as a count.
int64_t threads_option(const std::map<std::string, std::string>& options);

/// The self-test kernel mutants: option value of kernel_mutant -> the
/// fault ("none": the upstream kernel).
const std::map<std::string, KernelFault>& kernel_mutants();

/// custom_sdpa (§1.10-1.11) on a graph that holds it: q.k summed in f32, the
/// scale applied once, scores f32, P rounded to `probabilities` before
/// P @ V, which sums in f32; the output stored in the case dtype. A graph
/// without it runs aten SDPA as its math decomposition: f32 throughout.
KernelNumerics custom_sdpa_numerics(const Case& c, const Graph& g, DType probabilities);

}  // namespace sdpa::llm
