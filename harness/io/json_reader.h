#pragma once
/// Strict reading of JSON objects: every error names the field path, and a
/// field nobody asked for is an error (a typo must not change a case).
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>

namespace sdpa {

/// A malformed or invalid input; the message names the field and what was expected.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class JsonObject {
 public:
  /// `path` names this object in messages ("case.mask").
  JsonObject(const nlohmann::json& j, std::string path);

  const nlohmann::json* find(const std::string& key);
  const nlohmann::json& require(const std::string& key);
  bool has(const std::string& key) const { return j_.contains(key); }

  std::string str(const std::string& key);
  int64_t integer(const std::string& key);
  double number(const std::string& key);
  bool boolean(const std::string& key);
  JsonObject object(const std::string& key);

  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;

  /// Throws on the first key that was never read.
  void reject_unknown() const;

 private:
  const nlohmann::json& j_;
  std::string path_;
  std::set<std::string> seen_;
};

/// "a string", "an integer", ...: for messages about a wrong type.
std::string json_kind(const nlohmann::json& j);

/// Parses a JSON file; InputError "PATH: cannot open file" or "PATH: not valid JSON: ...".
nlohmann::json read_json_file(const std::string& path);

}  // namespace sdpa
