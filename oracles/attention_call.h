#pragma once
/// One attention call's inputs read in long double, one (batch, query head)
/// block at a time whatever the layout. The GQA head mapping, the mask
/// broadcast and the causal rule live here once, for the Eigen oracle and
/// the error model. Header-only Eigen: the LibTorch oracle does not use it.
#include <Eigen/Dense>

#include "harness/case/case.h"
#include "harness/case/tensor_data.h"

namespace sdpa {

using MatrixL = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

class AttentionCall {
 public:
  /// Sizes come from the tensors' shapes, start_pos from t.start_pos. Throws
  /// std::invalid_argument when q, k, v and the mask do not form a call
  /// aten accepts.
  AttentionCall(const Case& c, const CaseTensors& t);

  const ConcreteSizes& sizes() const { return s_; }
  /// Leading dims flattened: blocks are indexed b in [0, batch()).
  int64_t batch() const { return s_.batch_numel(); }
  /// Query rows of [batch..., Hq, Lq], row-major.
  int64_t rows() const { return batch() * s_.Hq * s_.Lq; }

  /// The key/value head query head h reads: h / (Hq / Hkv) with GQA, 0 when
  /// Hkv == 1 (broadcast).
  int64_t kv_head(int64_t h) const;

  MatrixL query(int64_t b, int64_t h) const;  // [Lq, E]
  MatrixL key(int64_t b, int64_t h) const;    // [Lkv, E], of query head h's kv head
  MatrixL value(int64_t b, int64_t h) const;  // [Lkv, Ev], of query head h's kv head
  /// (q . k) * scale, then the causal rule and the mask: [Lq, Lkv], -inf
  /// where a key is dropped, the additive mask added elsewhere.
  MatrixL scores(int64_t b, int64_t h) const;

 private:
  /// Head h of batch b of a tensor with `heads` heads, in the case's layout.
  MatrixL block(const Tensor& t, int64_t heads, int64_t b, int64_t h, int64_t len,
                int64_t dim) const;
  /// Offset of mask element (b, h, i, 0) in the broadcast score tensor.
  int64_t mask_base(int64_t b, int64_t h) const;

  const Case& c_;
  const CaseTensors& t_;
  ConcreteSizes s_;
  std::vector<int64_t> mask_strides_;  // per score dim, 0 where the mask broadcasts
};

}  // namespace sdpa
