#pragma once
/// How an adapter's words go into a finding: the end of its stderr on one
/// line, and a message written as one JSON line.
#include <string>

#include <nlohmann/json.hpp>

namespace sdpa {

/// "; its stderr ends: ..." with the last 400 bytes of `tail` (newlines as
/// '|': a Python traceback ends with the exception), or "" when it is empty.
std::string stderr_words(const std::string& tail);

/// `j` as one line: a name that is not UTF-8 is written with U+FFFD, not thrown on.
std::string one_line(const nlohmann::json& j);

}  // namespace sdpa
