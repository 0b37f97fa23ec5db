#include "harness/io/corpus.h"

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "harness/io/atomic_write.h"
#include "harness/case/case_json.h"
#include "harness/io/json_reader.h"
#include "harness/case/tensor_data.h"
#include "harness/check/verdict.h"

namespace sdpa {

nlohmann::json corpus_to_json(const CorpusEntry& e) {
  nlohmann::json j;
  j["format"] = kCorpusFormat;
  j["target"] = e.target;
  j["options"] = nlohmann::json::object();
  for (const auto& [k, v] : e.options) j["options"][k] = v;
  j["expect"] = e.expect;
  j["case"] = case_to_json(e.c);
  j["finding"] = e.finding;
  j["provenance"] = e.provenance;
  return j;
}

namespace {

Options options_from_json(JsonObject& o) {
  Options out;
  const nlohmann::json* opts = o.find("options");
  if (!opts) return out;
  if (!opts->is_object()) o.fail("options", "expected an object, got " + json_kind(*opts));
  for (const auto& [key, value] : opts->items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
    else if (value.is_boolean()) out[key] = value.get<bool>() ? "true" : "false";
    else if (value.is_number()) out[key] = value.dump();
    else o.fail("options." + key, "expected a string, boolean or number, got " + json_kind(value));
  }
  return out;
}

}  // namespace

CorpusEntry corpus_from_json(const nlohmann::json& j, const std::string& source,
                             const SizeLimits& limits) {
  try {
    JsonObject o(j, "");
    CorpusEntry e;
    std::string format = o.str("format");
    if (format != kCorpusFormat)
      o.fail("format", std::string("expected \"") + kCorpusFormat + "\", got \"" + format + "\"");
    e.target = o.str("target");
    e.options = options_from_json(o);
    e.expect = o.str("expect");
    if (!parse_verdict(e.expect)) o.fail("expect", "\"" + e.expect + "\" is not a verdict name");
    e.c = case_from_json(o.require("case"), "case");
    if (const auto* f = o.find("finding")) e.finding = *f;
    if (const auto* p = o.find("provenance")) e.provenance = *p;
    o.reject_unknown();
    validate_case(e.c, limits, "case");
    return e;
  } catch (const InputError& err) {
    throw InputError(source + ": " + err.what());
  } catch (const nlohmann::json::exception& err) {
    // A read this file does not guard (a wrong type at a get): still the file's error.
    throw InputError(source + ": " + err.what());
  }
}

CorpusEntry read_corpus_file(const std::string& path, const SizeLimits& limits) {
  return corpus_from_json(read_json_file(path), path, limits);
}

std::string short_hash(const std::string& text) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(text)));
  return std::string(buf).substr(0, 8);
}

std::string write_corpus_entry(const std::string& dir, const CorpusEntry& e,
                               const std::string& signature) {
  namespace fs = std::filesystem;
  std::string text = corpus_to_json(e).dump(2) + "\n";
  std::string content_hash = short_hash(case_to_json(e.c).dump() + e.target);
  fs::path folder = fs::path(dir) / e.target;
  fs::path final_path = folder / (e.target + "-" + e.expect + "-" + short_hash(e.target + signature) +
                                  "-" + content_hash + ".json");
  write_file_atomically(final_path.string(), text);
  return final_path.string();
}

}  // namespace sdpa
