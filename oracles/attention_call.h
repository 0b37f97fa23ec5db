#pragma once
/// One attention call's inputs read in double, one (batch, query head)
/// block at a time whatever the layout. The GQA head mapping, the mask
/// broadcast and the causal rule live here once, for the Eigen oracle and
/// the error model. Header-only Eigen: the LibTorch oracle does not use it.
#include <Eigen/Dense>

#include "harness/case/case.h"
#include "harness/case/tensor_data.h"

namespace sdpa {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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

  MatrixD query(int64_t b, int64_t h) const;  // [Lq, E]
  MatrixD key(int64_t b, int64_t h) const;    // [Lkv, E], of query head h's kv head
  MatrixD value(int64_t b, int64_t h) const;  // [Lkv, Ev], of query head h's kv head
  /// (q . k) * scale, then the causal rule and the mask: [Lq, Lkv], -inf
  /// where a key is dropped, the additive mask added elsewhere. The dot
  /// products are compensated sums of q_e k_e (exact products for inputs of
  /// f32 and narrower), scaled once.
  MatrixD scores(int64_t b, int64_t h) const;
  /// The same into `s`, resized (its storage reused across blocks); with
  /// `low`, each score as a double-double, s + low: the dot product times
  /// the scale, without the roundings of the dot product's total and of the
  /// product (large logits keep their differences). An additive mask is
  /// added as aten adds it, in the score's dtype: that score is rounded to
  /// double once, from its double-double, and its low part is 0.
  void scores_into(int64_t b, int64_t h, MatrixD& s, MatrixD* low = nullptr) const;
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
  MatrixD block(const Tensor& t, int64_t heads, int64_t b, int64_t h, int64_t len,
                int64_t dim) const;
  /// Offset of mask element (b, h, i, 0) in the broadcast score tensor.
  int64_t mask_base(int64_t b, int64_t h) const;

  const Case& c_;
  const CaseTensors& t_;
  ConcreteSizes s_;
  std::vector<int64_t> mask_strides_;  // per score dim, 0 where the mask broadcasts
};

/// Softmax of one row of n scores into p (aten._safe_softmax in double, the
/// weights' total a compensated sum), its largest score into `max` (NaN
/// scores ignored, as fmax does); false when every score is -inf (fully
/// masked: p is left untouched). A weight below double's range is 0, as in
/// aten: 0 times an inf of V is NaN.
/// With `low` (scores_into's), each score is scores[j] + low[j].
bool softmax_row(const double* scores, const double* low, int64_t n, double* p, double& max);

}  // namespace sdpa
