#pragma once
/// Counter-based tensor data: element i of tensor "name" is a pure function
/// of (data seed, name, i), so any element can be recomputed alone and a few
/// lines of Python rebuild the same tensors (see README, "Tensor data").
#include <cstdint>
#include <string>
#include <vector>

#include "harness/case/case.h"
#include "harness/ir/tensor.h"

namespace sdpa {

/// The stream of one named tensor under one seed.
class CounterStream {
 public:
  CounterStream(uint64_t seed, const std::string& name);
  uint64_t bits(uint64_t index) const;
  double uniform01(uint64_t index) const;  // [0, 1), 53 bits
  /// Standard normal from elements 2i and 2i+1 (Box-Muller).
  double normal(uint64_t index) const;

 private:
  uint64_t key_;
};

uint64_t splitmix64_mix(uint64_t z);
uint64_t fnv1a64(const std::string& s);

/// The inputs of a case at one runtime size, in the entry layout
/// (bhsd or bshd); element indices count in [batch..., H, L, D] order.
struct CaseTensors {
  Tensor q, k, v;
  std::optional<Tensor> mask;  // in the mask's own shape and dtype
  int64_t start_pos = 0;       // the run's start_pos: where a start-pos causal mask sits
};

CaseTensors make_case_tensors(const Case& c, const Assignment& at);

/// Elements of q, k or v in [batch..., H, L, D] order under the case's
/// distribution, rounded to the case dtype.
Tensor make_input(const Case& c, const std::string& name, const Shape& bhsd_shape);

/// The value data.special writes in a tensor of `dtype` (before rounding).
double special_value(SpecialValue v, DType dtype);

/// Writes the case's special values over tensor `name` (q, k, v or mask)
/// when data.special names it: `count` elements at flat indices
/// bits(seed, "special_<name>", n) % numel, or `count` rows of the last dim
/// at bits(...) % rows; then rounds them to the tensor's dtype.
void apply_special(const Case& c, const std::string& name, Tensor& t);

/// Which elements of the case's mask, at concrete shape `shape`, keep their
/// key (flat, row-major), before the fill and any special value: the
/// pattern's rule (README, "Tensor data"). Row i and key j are the last two
/// dims; a per-batch-padding length is per batch element of the dims before
/// the last three; block-sparse blocks are per slice of the dims before the
/// last two.
std::vector<bool> mask_keeps(const Case& c, const Shape& shape);

/// The mask the case describes, at concrete shape `shape`.
Tensor make_mask(const Case& c, const Shape& shape);

/// Dropout keep decision for element `index` of the [batch..., Hq, Lq, Lkv]
/// attention weights: kept with probability 1 - p (stream "dropout").
bool dropout_keep(const CounterStream& stream, uint64_t index, double p);

/// [B..., L, H, D] <-> [B..., H, L, D]: swaps dims -3 and -2.
Tensor swap_heads_and_seq(const Tensor& t);

}  // namespace sdpa
