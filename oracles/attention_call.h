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
  /// where a key is dropped, the additive mask added elsewhere. The dot
  /// products sum q_e k_e in long double in index order.
  MatrixL scores(int64_t b, int64_t h) const;
  /// The same into `s`, resized (its storage reused across blocks).
  void scores_into(int64_t b, int64_t h, MatrixL& s) const;
  /// Row l of head h of batch b of q, k or v (their last dim contiguous).
  const double* query_row(int64_t b, int64_t h, int64_t l) const;
  const double* key_row(int64_t b, int64_t h, int64_t l) const;    // of query head h's kv head
  const double* value_row(int64_t b, int64_t h, int64_t l) const;  // of query head h's kv head

 private:
  /// Offset of row l of head h of batch b of a tensor with `heads` heads
  /// and `len` rows per head, in the case's layout, in units of rows.
  int64_t row_index(int64_t heads, int64_t b, int64_t h, int64_t len, int64_t l) const {
    return c_.layout == Layout::bhsd ? (b * heads + h) * len + l : (b * len + l) * heads + h;
  }
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

/// Softmax of one row of n scores into p (aten._safe_softmax in long double),
/// its largest score into `max` (NaN scores ignored, as fmax does); false
/// when every score is -inf (fully masked: p is left untouched). A weight
/// below double's range is 0, as in aten (f64 and narrower): 0 times an inf
/// of V is NaN, where long double's tiny weight would give inf.
bool softmax_row(const long double* scores, int64_t n, long double* p, long double& max);

}  // namespace sdpa
