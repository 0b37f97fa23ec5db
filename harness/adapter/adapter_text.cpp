#include "harness/adapter/adapter_text.h"

#include <cctype>

namespace sdpa {

std::string stderr_words(const std::string& tail) {
  constexpr size_t kShown = 400;
  std::string t = tail;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  if (t.empty()) return "";
  if (t.size() > kShown) t = "..." + t.substr(t.size() - kShown);
  for (char& ch : t)
    if (ch == '\n' || ch == '\r') ch = '|';
  return "; its stderr ends: " + t;
}

std::string one_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sdpa
