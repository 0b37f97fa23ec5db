#pragma once
/// Corpus entries (CORPUS_FORMAT.md): read strictly, written atomically.
#include <string>

#include <nlohmann/json.hpp>

#include "harness/case/case.h"
#include "harness/case/case_validate.h"
#include "harness/check/target.h"

namespace sdpa {

inline constexpr const char* kCorpusFormat = "sdpacheck.case.v1";
inline constexpr const char* kVersion = "0.1.0";
/// The one harness option an entry's `options` may hold besides the
/// target's own: "passes": "off" replays an identity self-check finding.
inline constexpr const char* kPassesOption = "passes";

struct CorpusEntry {
  std::string target;
  Options options;
  std::string expect = "pass";  // a verdict name
  Case c;
  nlohmann::json finding = nlohmann::json::object();
  nlohmann::json provenance = nlohmann::json::object();
};

nlohmann::json corpus_to_json(const CorpusEntry& e);

/// Parses and validates one entry; InputError messages start with `source`
/// (the file name) and name the field.
CorpusEntry corpus_from_json(const nlohmann::json& j, const std::string& source,
                             const SizeLimits& limits = {});
CorpusEntry read_corpus_file(const std::string& path, const SizeLimits& limits = {});

/// Writes `e` under dir/<target>/ as <target>-<verdict>-<signature hash>-<content hash>.json,
/// through a temporary file renamed into place. Returns the path.
std::string write_corpus_entry(const std::string& dir, const CorpusEntry& e,
                               const std::string& signature);

/// 8 hex digits of a 64-bit FNV-1a hash.
std::string short_hash(const std::string& text);

}  // namespace sdpa
