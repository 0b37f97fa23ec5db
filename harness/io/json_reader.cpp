#include "harness/io/json_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

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

namespace {

using nlohmann::json;

// "line L, byte B" of an offset into the text (bytes counted from 0).
std::string position(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  return "line " + std::to_string(line) + ", byte " + std::to_string(offset);
}

// Index of the quote closing the string opened at `open` (text.size() when
// it is unterminated: the parser then reports that).
size_t skip_string(const std::string& text, size_t open, const std::string& source) {
  size_t i = open + 1;
  while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
  i = std::min(i, text.size());
  if (i - open - 1 > kMaxJsonStringBytes)
    throw InputError(source + ": " + position(text, open) + ": a string of " + std::to_string(i - open - 1) +
                     " bytes, the limit is " + std::to_string(kMaxJsonStringBytes));
  return i;
}

// One linear pass over the text, before nlohmann's parser runs: nesting
// depth outside strings and string lengths. Malformed text passes through
// to the parser, which names what it expected.
void check_json_bounds(const std::string& text, const std::string& source) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '"') {
      i = skip_string(text, i, source);
    } else if (ch == '[' || ch == '{') {
      if (++depth > kMaxJsonDepth)
        throw InputError(source + ": " + position(text, i) + ": lists and objects nested deeper than " +
                         std::to_string(kMaxJsonDepth) + " levels");
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
}

// Follows the parser's events to know the key path being read ("case.dtype",
// "case.runtime[1].s0"), and rejects a key an object already has.
class KeyPaths {
 public:
  explicit KeyPaths(std::string source) : source_(std::move(source)) {}

  bool on_event(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: frames_.push_back({true}); break;
      case json::parse_event_t::array_start: frames_.push_back({false}); break;
      case json::parse_event_t::key: add_key(parsed.get<std::string>()); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        element_done();
        break;
      case json::parse_event_t::value: element_done(); break;
    }
    return true;
  }

  /// The path of the value being read; "top level" outside any object.
  std::string path() const {
    std::string out;
    for (const auto& f : frames_) {
      if (!f.object) out += "[" + std::to_string(f.index) + "]";
      else if (f.has_key) out += (out.empty() ? "" : ".") + f.key;
    }
    return out.empty() ? "top level" : out;
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;
    bool has_key = false;
    size_t index = 0;
  };

  void add_key(const std::string& key) {
    if (frames_.empty()) return;
    Frame& f = frames_.back();
    f.key = key;
    f.has_key = true;
    if (!f.keys.insert(key).second) throw InputError(source_ + ": " + path() + ": duplicate key");
  }
  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }

  std::string source_;
  std::vector<Frame> frames_;
};

// nlohmann's message without its "[json.exception.KIND.N] " prefix.
std::string bare_message(const json::exception& e) {
  std::string m = e.what();
  size_t end = m.find("] ");
  return end == std::string::npos ? m : m.substr(end + 2);
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
  check_json_bounds(text, source);
  KeyPaths paths(source);
  try {
    return json::parse(text, [&](int, json::parse_event_t event, json& parsed) {
      return paths.on_event(event, parsed);
    });
  } catch (const json::parse_error& e) {
    throw InputError(source + ": not valid JSON (" + position(text, e.byte == 0 ? 0 : e.byte - 1) + ", in " +
                     paths.path() + "): " + bare_message(e));
  } catch (const json::exception& e) {
    // out_of_range 406: a number literal beyond a double (1e400).
    throw InputError(source + ": " + paths.path() + ": " + bare_message(e));
  }
}

// Reads at most kMaxJsonFileBytes + 1 bytes: a huge file (or a device
// that never ends) is refused without reading it all.
std::string read_bounded(const std::string& path) {
  const std::string too_large =
      path + ": larger than the limit of " + std::to_string(kMaxJsonFileBytes >> 20) + " MiB for a JSON file";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  // A FIFO would block the open, a device never end: only regular files are read.
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw InputError(path + ": not a regular file");
  if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(path, ec) > kMaxJsonFileBytes && !ec)
    throw InputError(too_large);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open file");
  std::string text;
  std::vector<char> buf(1 << 16);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    text.append(buf.data(), static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxJsonFileBytes) throw InputError(too_large);
  }
  if (in.bad()) throw InputError(path + ": cannot read file");
  return text;
}

nlohmann::json read_json_file(const std::string& path) { return parse_json_text(read_bounded(path), path); }

int64_t json_int64(const nlohmann::json& v, const std::string& field) {
  const std::string range = "an integer in [-2^63, 2^63)";
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw InputError(field + ": expected " + range + ", got " + v.dump());
  if (v.is_number_integer()) return v.get<int64_t>();
  // nlohmann reads an integer literal beyond 2^64 as a double.
  if (v.is_number_float() && std::abs(v.get<double>()) >= 9.2e18)
    throw InputError(field + ": expected " + range + ", got " + v.dump());
  throw InputError(field + ": expected an integer, got " + json_kind(v));
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
  return json_int64(require(key), field(key));
}

double JsonObject::number(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_number()) fail(key, "expected a number, got " + json_kind(v));
  if (!std::isfinite(v.get<double>())) fail(key, "expected a finite number, got " + v.dump());
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
