#pragma once
/// gen_case: RapidCheck generator of whole attention calls.
#include <rapidcheck.h>

#include <ostream>

#include "generators/gen_policy.h"
#include "harness/case/case.h"
#include "harness/case/case_space.h"

namespace sdpa {

/// Cases inside `space`, drawn by policy `p`, each valid by construction
/// (validate_case with the default SizeLimits accepts it). RapidCheck's size
/// (0..100) scales every size cap: size 0 gives lengths, heads and head dims
/// <= 2 and batch dims 1. Shrinking simplifies structure (smaller sizes,
/// flags off, no mask, scale none, normal data, static dims) and never the
/// data seed. The same rc::Random and size give the same case.
rc::Gen<Case> gen_case(const GenPolicy& p, const CaseSpace& space);

/// How RapidCheck prints a case in a failing property: its JSON.
void showValue(const Case& c, std::ostream& os);

}  // namespace sdpa
