#pragma once
/// A flat binary encoding for what the command and its workers exchange
/// once per case (fuzz --jobs): fixed-width integers and doubles (bit for
/// bit, host order: both ends are the same binary) and length-prefixed
/// strings, written and read in one agreed order with no names and no
/// intermediate object tree. Reading checks every length against what is
/// left before it allocates, and throws on a short or overlong buffer.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sdpa {

class WireWriter {
 public:
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s);
  }
  void strings(const std::vector<std::string>& v) {
    u64(v.size());
    for (const auto& s : v) str(s);
  }
  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

/// Reads what a WireWriter wrote, from bytes it does not own (they must
/// outlive it); `what` names the message in errors.
class WireReader {
 public:
  WireReader(std::string_view bytes, std::string what) : p_(bytes), what_(std::move(what)) {}
  WireReader(std::string&& bytes, std::string what) = delete;  // would outlive its bytes
  uint64_t u64() { return fixed<uint64_t>(); }
  int64_t i64() { return fixed<int64_t>(); }
  double f64() { return fixed<double>(); }
  uint8_t u8() { return fixed<uint8_t>(); }
  bool boolean();
  std::string str();
  std::vector<std::string> strings();
  /// A count of items each at least `min_item_bytes` long, checked against
  /// what is left, so that a corrupt count cannot reserve unbounded memory.
  size_t count(size_t min_item_bytes);
  /// Throws unless every byte was read.
  void finish() const;

 private:
  template <class T>
  T fixed() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_.data(), sizeof v);
    p_.remove_prefix(sizeof v);
    return v;
  }
  void need(uint64_t n) const;
  std::string_view p_;
  std::string what_;
};

}  // namespace sdpa
