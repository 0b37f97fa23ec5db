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

/// Bounds on every JSON input (corpus and decisions files), checked on the
/// raw text before nlohmann parses it, so that no hostile file reaches a
/// recursive walk of the result (dump, destruction) or a slow string path.
inline constexpr size_t kMaxJsonFileBytes = size_t{16} << 20;   // 16 MiB
inline constexpr int kMaxJsonDepth = 64;                         // nested lists and objects
inline constexpr size_t kMaxJsonStringBytes = size_t{64} << 10;  // 64 KiB, escapes as written

/// Parses JSON text strictly: the bounds above, no duplicate key (nlohmann
/// would keep the last one silently), no number overflow (1e400). Every
/// InputError starts with `source` and names the line and byte or the key path.
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

/// Reads (at most kMaxJsonFileBytes) and parses a JSON file with
/// parse_json_text; InputError "PATH: cannot open file", "PATH: not valid JSON: ...".
nlohmann::json read_json_file(const std::string& path);

/// An integer as int64: InputError "FIELD: ..." for another kind, or an
/// integer outside [-2^63, 2^63) (nlohmann reads 2^63..2^64-1 as unsigned,
/// and a cast would wrap it to a negative size).
int64_t json_int64(const nlohmann::json& v, const std::string& field);

}  // namespace sdpa
