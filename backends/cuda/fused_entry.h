#pragma once
/// The entry forms of target `cuda`: what export's CUDA decompositions hand
/// the passes for an SDPA call (semantics/llm-and-cuda.md §3.1-3.6): a fused
/// flash, efficient or cuDNN call, or aten SDPA where no fused variant takes it.
#include <optional>
#include <string>

#include "harness/case/case.h"
#include "harness/ir/graph.h"

namespace sdpa::cuda {

inline constexpr const char* kFlashOp = "aten._scaled_dot_product_flash_attention.default";
inline constexpr const char* kEfficientOp = "aten._scaled_dot_product_efficient_attention.default";
inline constexpr const char* kCudnnOp = "aten._scaled_dot_product_cudnn_attention.default";

/// The op an entry graph holds for a call.
enum class Variant { flash, efficient, cudnn, sdpa };
/// Option `entry`: one fused op called directly, or PyTorch's dispatcher.
enum class EntryForm { flash, efficient, cudnn, dispatch };

std::optional<EntryForm> parse_entry(const std::string& s);
const char* variant_name(Variant v);
bool is_fused_op(const std::string& op);

/// Case::variant values: the plain call; a graph whose output also reads the
/// logsumexp output; a causal-pattern mask passed as bias together with is_causal.
inline constexpr const char* kPlain = "plain";
inline constexpr const char* kLseReader = "lse-reader";
inline constexpr const char* kCausalBias = "causal-bias";
/// The call (plain, or with its logsumexp read) in the true branch of a
/// torch.cond on the graph input `pred`, which the case runs true. The
/// false branch holds aten SDPA: a fused node in a branch the case does not
/// take could be neither checked nor forced with effect.
inline constexpr const char* kCond = "cond";
inline constexpr const char* kCondLseReader = "cond-lse-reader";
bool is_cond_variant(const std::string& variant);

/// The order PyTorch's CUDA dispatcher tries its backends in (§3.6):
/// Context.h's default flash, efficient, math, cuDNN, where math takes every
/// call so cuDNN is never reached; or cuDNN first, as priority_order() puts
/// it on sm90/sm100 with cuDNN >= 9.9 unless TORCH_CUDNN_SDPA_PREFERRED=0.
/// The cuDNN-first orders differ in cuDNN's own limits: head dims up to 128
/// (cuDNN 9.9, or sm100), up to 256 on sm90 with cuDNN >= 9.10, and no
/// dropout at all on cuDNN 9.11 to 9.13.
enum class Priority { default_order, cudnn_first, cudnn_first_sm90_9_10, cudnn_first_sm90_9_11 };
std::optional<Priority> parse_priority(const std::string& s);

/// PyTorch's CUDA backend choice (sdp_utils.cpp select_sdp_backend, §3.6):
/// the first fused variant in `order` that takes the call, else aten SDPA
/// stays (math). Size conditions count only when statically known for
/// every size in range.
Variant dispatch_variant(const Case& c, Priority order = Priority::default_order);
Variant entry_variant(EntryForm e, const Case& c, Priority order = Priority::default_order);

/// Why a direct call of the entry form cannot express this case, or none.
std::optional<std::string> entry_refuses(EntryForm e, const Case& c);

/// Whether the causal-bias variant applies to this case: its mask is a
/// causal pattern over every key, so adding top-left is_causal keeps what it keeps.
bool causal_bias_applies(const Case& c, Variant v);

/// The entry graph: placeholders q, k, v (and attn_mask), the fused node of
/// variant `v` (or aten SDPA), and the variant's reader of logsumexp; for a
/// cond variant, that graph as both branches of a cond on placeholder pred.
/// `dispatched`: the node is the one PyTorch's top-level SDPA emits (entry
/// dispatch), so a flash call has its head dims padded to a multiple of 8,
/// the unpadded call's scale passed explicitly and its output sliced back
/// (attention.cpp's CUDA flash branch, §3.2); a direct call has neither.
Graph fused_entry_graph(const Case& c, Variant v, bool dispatched = false);

/// The pieces of a fused node, read from the argument order of its op.
struct FusedCall {
  Variant variant = Variant::flash;
  ValueRef q, k, v;
  std::optional<ValueRef> bias;
  double dropout_p = 0.0;
  bool is_causal = false;
  std::optional<double> scale;
};
FusedCall read_fused_call(const Node& n);

}  // namespace sdpa::cuda
