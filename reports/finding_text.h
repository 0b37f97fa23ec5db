#pragma once
/// A written finding as text an attention engineer reads first: the verdict
/// block shared by the JUnit file and the HTML page.
#include <string>

#include "harness/campaign/campaign.h"

namespace sdpa {

/// "sdpacheck replay FILE", or why there is no file to replay.
std::string replay_command(const WrittenFinding& w);

/// "error 1.2e-03, bound 4.5e-06 (ratio 266), 1.3e+04 ulps"; empty when the
/// finding carries no numbers.
std::string error_line(const Finding& f);

/// One "key: value" line each: verdict, check, kernel set, case, detail,
/// error/bound/ulps, first diverging node, violated assumptions, failure
/// class, replay. Lines without a value are left out.
std::string finding_block(const WrittenFinding& w);

}  // namespace sdpa
