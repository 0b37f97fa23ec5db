#pragma once
/// The error model (NUMERICS.md, "Error model"): how far a kernel computing
/// the call in a given dtype may stray from the golden output, per row.
#include "harness/check/reference.h"

namespace sdpa {

/// An absolute bound on |kernel - golden| for each query row of
/// [batch..., Hq, Lq], worst case to first order in the unit roundoffs, so
/// that exceeding it is a real inaccuracy. With u_acc and u_out the unit
/// roundoffs of the accumulation type and of `dtype`, d = E, n the kept keys
/// of the row, qn = |q_i|, kn = max |k_j| and Vmax = max |v_je| over kept j,
/// M = max |s_ij| over the keys within 40 of the row's max score, and f the
/// dropout factor 1/(1-p):
///   logit_err   = |scale| qn kn (d u_acc + 5 u_out) + u_out M
///   softmax_rel = 2 logit_err + (n + 2) u_acc + u_out [+ u_acc + u_out with dropout]
///   bound       = min(softmax_rel Vmax f + n u_acc Vmax f, cap) + ulp(dtype, max_e |G_ie|)
/// where cap = Vmax f (2 + (2n + 3) u_acc + 2 u_out) holds whatever the
/// logit errors, as kernel and golden are both weighted sums of v rows.
/// A fully masked row (n = 0) gets the output rounding alone; a row with a
/// non-finite input or score gets +inf (its NaN/inf positions are checked
/// instead). `inputs` holds every term for the row with the largest bound,
/// and the typical (sqrt(d), sqrt(n)) estimate. Integer dtypes have no float
/// model here: every row gets +inf.
ErrorBound error_bound(const Case& c, const CaseTensors& t, const Golden& g, DType dtype);

}  // namespace sdpa
