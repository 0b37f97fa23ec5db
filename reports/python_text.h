#pragma once
/// Python literals for the scripts sdpacheck writes: doubles that round-trip
/// exactly, strings, int lists, and one-line comment text.
#include <cstdint>
#include <string>
#include <vector>

namespace sdpa {

/// 17 significant digits (the double round-trips), float('nan') and float('inf') for the rest.
std::string py_float(double x);
/// A Python string literal (JSON's escaping is valid Python).
std::string py_str(const std::string& s);
std::string py_ints(const std::vector<int64_t>& v);
std::string py_strs(const std::vector<std::string>& v);
/// `s` with its line breaks as spaces, for a comment.
std::string one_line(std::string s);

}  // namespace sdpa
