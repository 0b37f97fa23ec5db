#pragma once
/// The error model (NUMERICS.md, "Error model"): how far a kernel set that
/// computes as its KernelNumerics declares may stray from the golden output,
/// per row.
#include <stdexcept>

#include "harness/check/reference.h"

namespace sdpa {

/// An absolute bound on |kernel - golden| for each query row of
/// [batch..., Hq, Lq], worst case to first order in the unit roundoffs, so
/// that exceeding it is a real inaccuracy. Per row: d = E, n the kept keys,
/// qn = |q_i|, kn = max |k_j|, p_j the exact softmax weights, W = max_e
/// sum_j p_j |v_je| (what an output element is averaged from, never above
/// max|V| and unaffected by cancellation), M = max |s_ij| over the keys
/// within 40 of the row's max score, f the dropout factor 1/(1-p).
///
/// Float numerics (u_a, u_op, u_sc, u_p, u_out: the unit roundoffs of the
/// accumulation, operand, score, probability and storage types):
///   logit_err   = |scale| qn kn (d u_a + 2 u_op [+ 2 u_a when the scale is
///                 split]) + u_sc M [twice with an additive mask]
///   softmax_rel = expm1(2 logit_err) + (n + 2) u_a + u_p [+ u_a + u_p with dropout]
///   bound       = min((softmax_rel + n u_a) W f, cap) + ulp(u_out, max_e |G_ie|)
///                 + n Vmax f tiny
/// where cap = Vmax f (2 + (2n + 3) u_a + 2 u_p) holds whatever the logit
/// errors, as kernel and golden are both weighted sums of v rows, and tiny,
/// the larger smallest normal of the accumulation and probability types,
/// is what one weight may lose to underflow (an exp flushed to 0).
///
/// Quantized numerics (steps s_q, s_k, s_v = max|x| / input_qmax of the
/// run's tensors, s_o = max|v| / output_qmax, score_step, prob_step):
///   logit_j     = |scale| (s_q/2 |k_j|_1 + s_k/2 |q_i|_1 + d s_q s_k / 4)
///                 + multiplier_rel |s_ij| + score_step [+ u_f32 |s_ij| with
///                 an additive mask], per kept key j (logit_err: their max)
///   rel_j       = (1 + max(e^logit_j / D_lo - 1, 1 - e^-logit_j / D_hi))
///                 (1 + (n + 2) u_softmax) - 1, with D_lo = sum_k p_k e^-logit_k
///                 and D_hi = sum_k p_k e^logit_k (the kernel's normalizer over
///                 the golden's); softmax_rel: their max, softmax_rel_mean:
///                 sum_j p_j rel_j. Equal logit errors give expm1(2 logit_err)
///                 + (n + 2) u_softmax e^(2 logit_err).
///   bound       = min(max_e [f sum_j rel_j p_j (|v_je| + s_v/2)
///                 + sum_j moved_j (|v_je| + s_v/2)] + f s_v/2 + s_o/2
///                 + (multiplier_rel + 2 u_f32) f (Vmax + s_v), cap)
/// where moved_j = f abs + min(prob_step/2, f (p_j (1 + rel_j) + abs))
/// with abs = softmax_abs (each weight's absolute error), and cap =
/// (f (2 + (n + 2) u_softmax + n softmax_abs) + n prob_step/2)(Vmax + s_v)
/// + s_o/2 holds whatever the logit errors: the kernel's weights are its
/// own softmax's, summing to 1 within its roundings. Where the graph's
/// grids clip (`ranges_clip`), an element's half step becomes its distance
/// outside the range where larger, and a score clipped up from far below
/// a grid of the scores (the masked scores', or before a mask's add the
/// unmasked (q·k)·scale's) weighs at most e^(lo - max + logit_j) (lo plus
/// its mask, for the unmasked grid): that in place of p_j e^logit_j in
/// D_hi, and added to its own term (it only rises: D_lo keeps it). Its typical
/// estimate is the bound itself (no statistical model).
///
/// A fully masked row (n = 0) gets the output rounding alone; a row with a
/// non-finite input or score gets +inf (its NaN/inf positions are checked
/// instead). `inputs` holds every term for the row with the largest bound,
/// and the typical (sqrt(d), sqrt(n)) estimate. Exact numerics are bounded
/// as float numerics in f64. Kind::none has no bound: std::invalid_argument.
ErrorBound error_bound(const Case& c, const CaseTensors& t, const Golden& g,
                       const KernelNumerics& numerics);

/// The bound of a naive kernel in `dtype` (KernelNumerics::naive).
ErrorBound error_bound(const Case& c, const CaseTensors& t, const Golden& g, DType dtype);

}  // namespace sdpa
