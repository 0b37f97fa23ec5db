#include "harness/io/json_reader.h"

#include <fstream>

namespace sdpa {

std::string json_kind(const nlohmann::json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "a list";
  return "an object";
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": not valid JSON: " + e.what());
  }
}

JsonObject::JsonObject(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {
  if (!j.is_object())
    throw InputError((path_.empty() ? std::string("top level") : path_) +
                     ": expected an object, got " + json_kind(j));
}

void JsonObject::fail(const std::string& key, const std::string& why) const {
  throw InputError(field(key) + ": " + why);
}

const nlohmann::json* JsonObject::find(const std::string& key) {
  seen_.insert(key);
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

const nlohmann::json& JsonObject::require(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v) fail(key, "missing required field");
  return *v;
}

std::string JsonObject::str(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_string()) fail(key, "expected a string, got " + json_kind(v));
  return v.get<std::string>();
}

int64_t JsonObject::integer(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_number_integer() && !v.is_number_unsigned())
    fail(key, "expected an integer, got " + json_kind(v));
  return v.get<int64_t>();
}

double JsonObject::number(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_number()) fail(key, "expected a number, got " + json_kind(v));
  return v.get<double>();
}

bool JsonObject::boolean(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + json_kind(v));
  return v.get<bool>();
}

JsonObject JsonObject::object(const std::string& key) { return JsonObject(require(key), field(key)); }

void JsonObject::reject_unknown() const {
  for (const auto& [key, value] : j_.items())
    if (!seen_.count(key)) throw InputError(field(key) + ": unknown field");
}

}  // namespace sdpa
