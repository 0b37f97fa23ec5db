#pragma once
/// What the float error model reads of each query row (error_model.cpp):
/// kept keys, norms, the largest score magnitude that counts, and the
/// magnitude an output element averages. The Eigen oracle computes them
/// once per run from its own scores and weights and hands them on in the
/// golden (Golden::cache); the error model computes them the same way for
/// a golden without them.
#include <memory>
#include <vector>

#include "harness/check/reference.h"
#include "oracles/attention_call.h"

namespace sdpa {

/// Per key of one (batch, head) block: |k_j|, max_e |v_je|, and v_j's row
/// (looked up once for the block's rows, not once per row and key).
struct KeyNorms {
  std::vector<double> k, v;
  std::vector<const double*> v_rows;
};
KeyNorms key_norms(const AttentionCall& call, int64_t b, int64_t h);

struct RowFacts {
  int64_t n = 0;  // kept keys
  double qn = 0, kn = 0, M = 0, vmax = 0;
  double W = 0;   // max_e sum_j p_j |v_je|, before dropout
  /// Every kept score and the norms finite (the golden row is the bound's to check).
  bool finite = true;
};

/// Row i of block (b, h): `scores` its Lkv scores (-inf where dropped), `p`
/// its softmax weights before dropout (softmax_row; read only when the row
/// is finite and keeps a key).
RowFacts row_facts(const AttentionCall& call, int64_t b, int64_t h, int64_t i, const double* scores,
                   const double* p, const KeyNorms& norms);

/// Every query row's facts in [batch..., Hq, Lq] order, for the call the
/// golden was computed from.
struct CallFacts : ReferenceCache {
  std::vector<RowFacts> rows;
};

}  // namespace sdpa
