#pragma once
/// exp in long double at long double accuracy, several times cheaper than
/// glibc's expl (which saves and restores the x87 environment per call): the
/// Eigen oracle takes one per attention weight.
namespace sdpa {

/// e^x within a few units in the last place of long double (tested against
/// expl): a table of 2^(j/32) and a degree-7 polynomial on |r| <= ln2/64.
/// NaN gives NaN, -inf 0, +inf inf; outside [-11300, 11300] it is expl.
long double exp_long(long double x);

}  // namespace sdpa
