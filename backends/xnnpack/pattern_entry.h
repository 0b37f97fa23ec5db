#pragma once
/// The xnnpack target's entry form: the attention pattern export's edge
/// decomposition of aten SDPA leaves for the XNNPACK partitioner, as in its
/// SDPA pattern graphs (semantics/cortex-m-and-xnnpack.md §3.1): scalar MULs
/// of the scale, permute_copy / expand_copy / view_copy, bmm, add(mask),
/// _safe_softmax (or its decomposition), bmm. Variants move the scale MUL or put another op
/// between a MUL and its bmm (semantics/passes.md §4).
#include <string>
#include <vector>

#include "harness/case/case.h"
#include "harness/ir/graph.h"

namespace sdpa::xnnpack {

// Edge-dialect op names of the pattern graphs.
inline constexpr const char* kMulScalar = "aten.mul.Scalar";
inline constexpr const char* kMulTensor = "aten.mul.Tensor";
inline constexpr const char* kAddTensor = "aten.add.Tensor";
inline constexpr const char* kBmm = "aten.bmm.default";
inline constexpr const char* kExpandCopy = "aten.expand_copy.default";
inline constexpr const char* kViewCopy = "aten.view_copy.default";
inline constexpr const char* kPermuteCopy = "aten.permute_copy.default";
inline constexpr const char* kSafeSoftmax = "aten._safe_softmax.default";
inline constexpr const char* kClone = "aten.clone.default";
inline constexpr const char* kToCopy = "aten._to_copy.default";
inline constexpr const char* kWhereScalar = "aten.where.Scalar";
// The edge form of _safe_softmax where to_edge decomposes it (torch._decomp
// safe_softmax: softmax, then zeros where a row is all -inf; all() as
// logical_not(any(logical_not(.)))).
inline constexpr const char* kSoftmax = "aten._softmax.default";
inline constexpr const char* kEqScalar = "aten.eq.Scalar";
inline constexpr const char* kLogicalNot = "aten.logical_not.default";
inline constexpr const char* kAnyDim = "aten.any.dim";
inline constexpr const char* kFullLike = "aten.full_like.default";
inline constexpr const char* kWhereSelf = "aten.where.self";

/// Where the traced graph multiplies by the scale.
enum class ScaleSite {
  q_and_k,  ///< sqrt(|scale|) on q and on permuted k (the decomposition's split, the pattern graphs)
  q,        ///< the whole scale on q
  scores,   ///< the whole scale on the bmm's scores
};

/// An op placed between a scale MUL and its bmm.
enum class PathOp { none, clone, transpose, to_copy };

/// How the softmax appears in the edge graph (UNVERIFIED which one upstream's
/// PyTorch leaves, semantics §3.1; the pattern graphs are traced the same way
/// as the model, so they hold the same form).
enum class SoftmaxForm {
  safe_softmax,  ///< one _safe_softmax node
  decomposed,    ///< _softmax, eq.Scalar / logical_not / any.dim / logical_not, full_like, where.self
};

struct PatternVariant {
  std::string name;  ///< Case::variant
  ScaleSite site;
  PathOp extra;
  bool noop_expands;  ///< false: the no-op expand_copy nodes removed (as RemoveNoopExpandCopyPass leaves them)
  std::string what;
  SoftmaxForm softmax = SoftmaxForm::safe_softmax;
};

/// Every variant, the upstream pattern form ("qk") first.
const std::vector<PatternVariant>& pattern_variants();
/// The variant a case names ("" is the first); InputError naming case.variant when unknown.
const PatternVariant& pattern_variant(const std::string& name);

/// The scalar literals the tracer writes, in graph order (q's before k's):
/// Python floats, so the graph holds them as doubles, unrounded. A negative
/// scale goes on q's factor, as aten's math decomposition negates the query's.
std::vector<double> scale_literals(const Case& c);
/// A literal as mul.Scalar's op math reads it: ExecuTorch's portable kernel
/// (as aten) casts the Scalar to the compute type, float for f16 and f32.
double op_math_literal(double literal);
/// The scale the traced graph computes with: the product of its literals
/// as the op math reads them.
double traced_scale(const Case& c);

/// The traced graph of call `c` in variant c.variant. Placeholders q, k, v
/// and attn_mask (a bool mask becomes additive 0 / -inf in the call's dtype
/// through where.Scalar before the pattern).
Graph pattern_entry_graph(const Case& c);

}  // namespace sdpa::xnnpack
