#include "harness/io/wire.h"

namespace sdpa {

void WireReader::need(uint64_t n) const {
  if (n > p_.size())
    throw std::runtime_error(what_ + ": truncated (" + std::to_string(n) + " bytes wanted, " +
                             std::to_string(p_.size()) + " left)");
}

bool WireReader::boolean() {
  const uint8_t v = u8();
  if (v > 1) throw std::runtime_error(what_ + ": a boolean byte of " + std::to_string(v));
  return v == 1;
}

std::string WireReader::str() {
  const uint64_t n = u64();
  need(n);
  std::string s(p_.substr(0, n));
  p_.remove_prefix(n);
  return s;
}

size_t WireReader::count(size_t min_item_bytes) {
  const uint64_t n = u64();
  if (min_item_bytes > 0 && n > p_.size() / min_item_bytes)
    throw std::runtime_error(what_ + ": a count of " + std::to_string(n) + " with " + std::to_string(p_.size()) +
                             " bytes left");
  return static_cast<size_t>(n);
}

std::vector<std::string> WireReader::strings() {
  std::vector<std::string> v(count(sizeof(uint64_t)));
  for (auto& s : v) s = str();
  return v;
}

void WireReader::finish() const {
  if (!p_.empty()) throw std::runtime_error(what_ + ": " + std::to_string(p_.size()) + " bytes left over");
}

}  // namespace sdpa
