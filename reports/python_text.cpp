#include "reports/python_text.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace sdpa {

std::string py_float(double x) {
  if (std::isnan(x)) return "float('nan')";
  if (std::isinf(x)) return x > 0 ? "float('inf')" : "float('-inf')";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);  // 17 digits: the double round-trips exactly
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string py_str(const std::string& s) { return nlohmann::json(s).dump(); }

std::string py_ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string py_strs(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + py_str(v[i]);
  return s + "]";
}

std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

}  // namespace sdpa
