#include "harness/ir/node_memo.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace sdpa {
namespace {

template <typename T>
void put(std::string& out, const T& x) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&x), sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put(out, s.size());
  out += s;
}

void put_qparams(std::string& out, const std::optional<QParams>& q) {
  put(out, q.has_value());
  if (!q) return;
  put(out, q->scale);
  put(out, q->zero_point);
  put(out, q->qmin);
  put(out, q->qmax);
}

// One resolved argument; a tensor by its identity (false: it has none).
bool put_value(std::string& out, const Value& v, const std::optional<int>& id) {
  put(out, static_cast<uint8_t>(v.index()));
  if (std::holds_alternative<const Tensor*>(v)) {
    if (!id) return false;
    put(out, *id);
  } else if (const auto* b = std::get_if<bool>(&v)) {
    put(out, *b);
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    put(out, *i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    put(out, *d);  // bit pattern: -0.0 and 0.0, NaN payloads stay apart
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    put_string(out, *s);
  } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&v)) {
    put(out, ints->size());
    for (int64_t x : *ints) put(out, x);
  } else if (const auto* t = std::get_if<DType>(&v)) {
    put(out, *t);
  }
  return true;
}

}  // namespace

// Of the dtype, shape and at most 64 elements spread over the data: equal
// tensors hash equal, and a match is confirmed element by element
// (same_content), so the sample only has to keep most candidates apart.
uint64_t NodeMemo::content_hash(const Tensor& t) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(t.dtype);
  auto mix = [&h](uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
  };
  for (int64_t d : t.shape) mix(static_cast<uint64_t>(d));
  const size_t n = t.data.size(), step = std::max<size_t>(1, n / 64);
  for (size_t i = 0; i < n; i += step) {
    uint64_t bits;
    std::memcpy(&bits, &t.data[i], sizeof bits);
    mix(bits);
  }
  if (n > 0) {
    uint64_t last;
    std::memcpy(&last, &t.data[n - 1], sizeof last);
    mix(last);
  }
  return h;
}

bool NodeMemo::same_content(const Tensor& a, const Tensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.qparams == b.qparams && a.data.size() == b.data.size() &&
         (a.data.empty() || std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(double)) == 0);
}

std::optional<int> NodeMemo::lookup(const Tensor& t, uint64_t h) const {
  auto [lo, hi] = by_hash_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (same_content(*values_[static_cast<size_t>(it->second)], t)) return it->second;
  return std::nullopt;
}

// What a value costs of the budget: the storage its data holds, which a
// kernel that cut a larger buffer down (a slice of a cache) leaves above
// its element count.
int64_t NodeMemo::cost(const Tensor& t) {
  return std::max<int64_t>({int64_t{1}, t.numel(), static_cast<int64_t>(t.data.capacity())});
}

bool NodeMemo::fits(const Tensor& t) const { return budget_ && *budget_ >= cost(t); }

std::optional<int> NodeMemo::store(std::unique_ptr<Tensor> t, uint64_t h) {
  // A value cut from a larger buffer (a kernel's slice of a cache) is kept
  // at its own size: the budget bounds what the memo holds.
  if (t->data.capacity() > t->data.size()) t->data.shrink_to_fit();
  const int64_t n = cost(*t);
  *budget_ -= n;
  elements_ += n;
  const int id = static_cast<int>(values_.size());
  values_.push_back(std::move(t));
  by_hash_.emplace(h, id);
  return id;
}

std::optional<int> NodeMemo::intern(const Tensor& t) {
  const uint64_t h = content_hash(t);
  if (auto id = lookup(t, h)) return id;
  if (!fits(t)) return std::nullopt;
  return store(std::make_unique<Tensor>(t), h);
}

std::optional<int> NodeMemo::intern(Tensor&& t) {
  const uint64_t h = content_hash(t);
  if (auto id = lookup(t, h)) return id;
  if (!fits(t)) return std::nullopt;  // t stays the caller's
  return store(std::make_unique<Tensor>(std::move(t)), h);
}

std::optional<std::string> NodeMemo::key(const Node& n, const KernelArgs& args,
                                         const std::vector<std::optional<int>>& ids_of_args,
                                         const std::vector<std::optional<int>>& ids_of_kwargs) const {
  if (!n.subgraphs.empty()) return std::nullopt;
  std::string k;
  put_string(k, n.op);
  put(k, args.args.size());
  for (size_t i = 0; i < args.args.size(); ++i)
    if (!put_value(k, args.args[i], ids_of_args.at(i))) return std::nullopt;
  put(k, args.kwargs.size());
  for (size_t i = 0; i < args.kwargs.size(); ++i) {
    put_string(k, args.kwargs[i].first);
    if (!put_value(k, args.kwargs[i].second, ids_of_kwargs.at(i))) return std::nullopt;
  }
  // What a kernel reads of its node besides the arguments: the declared
  // outputs. A shape that does not evaluate here leaves the node unkeyed,
  // so it fails as it does without a memo (the kernel first).
  put(k, n.outputs.size());
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    put(k, n.outputs[i].dtype);
    Shape s;
    try {
      s = args.out_shape(i);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    put(k, s.size());
    for (int64_t d : s) put(k, d);
    put_qparams(k, n.outputs[i].qparams);
  }
  return k;
}

const std::vector<int>* NodeMemo::find(const std::string& key) const {
  auto it = nodes_.find(key);
  return it == nodes_.end() ? nullptr : &it->second;
}

void NodeMemo::insert(const std::string& key, std::vector<int> ids) { nodes_.emplace(key, std::move(ids)); }

bool NodeMemo::bound_to(const KernelSet& k, const RunContext& ctx) const {
  return &k == kernels_ && ctx.sizes == ctx_.sizes && ctx.data_seed == ctx_.data_seed;
}

}  // namespace sdpa
