// Validators for the numeric options: each reads the option's whole text
// before CLI11 converts it, so that "-1" or "1e23" for a seed, a count past
// int64 or "nan" seconds is an error saying what was expected instead of a
// value clamped or wrapped into another campaign.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "cli/commands.h"

namespace sdpa::cli {
namespace {

// What the option takes, for its message: "an integer >= 1", "an integer in [0, 1000]".
std::string integer_range_text(int64_t lo, int64_t hi) {
  if (hi == INT64_MAX) return "an integer >= " + std::to_string(lo);
  return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

// The whole text as a decimal integer of type T, or nothing.
template <class T>
std::optional<T> whole_integer(const std::string& text) {
  T v{};
  const char* end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || stop != end || text.empty()) return std::nullopt;
  return v;
}

}  // namespace

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  const std::string expected = integer_range_text(lo, hi);
  return CLI::Validator(
      [lo, hi, expected](std::string& text) -> std::string {
        std::optional<int64_t> v = whole_integer<int64_t>(text);
        if (!v || *v < lo || *v > hi) return "expected " + expected + ", got '" + text + "'";
        return "";
      },
      "");
}

CLI::Validator seed_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (!whole_integer<uint64_t>(text)) return "expected an integer in [0, 2^64), got '" + text + "'";
        return "";
      },
      "");
}

CLI::Validator seconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0)
          return "expected a number of seconds >= 0, got '" + text + "'";
        return "";
      },
      "");
}

}  // namespace sdpa::cli
