#pragma once
/// Case <-> JSON, the "case" object of CORPUS_FORMAT.md. Reading checks
/// field names and types; validate_case (case_validate.h) checks meaning.
#include <nlohmann/json.hpp>

#include "harness/case/case.h"

namespace sdpa {

nlohmann::json case_to_json(const Case& c);

/// Throws InputError naming the field ("case.mask.fill: ...").
Case case_from_json(const nlohmann::json& j, const std::string& path = "case");

}  // namespace sdpa
