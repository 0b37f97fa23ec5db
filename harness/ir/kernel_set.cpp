#include "harness/ir/kernel_set.h"

#include <algorithm>

namespace sdpa {

void KernelArgs::bad(size_t i, const char* expected) const {
  throw GraphError("%" + node.name + " (" + node.op + "): argument " + std::to_string(i) +
                   " is not " + expected);
}

const Tensor& KernelArgs::tensor(size_t i) const {
  if (i >= args.size()) bad(i, "present");
  if (const auto* t = std::get_if<const Tensor*>(&args[i])) return **t;
  bad(i, "a tensor");
}

const Tensor* KernelArgs::optional_tensor(size_t i) const {
  if (!has(i)) return nullptr;
  return &tensor(i);
}

double KernelArgs::real(size_t i, std::optional<double> fallback) const {
  if (!has(i)) {
    if (fallback) return *fallback;
    bad(i, "present");
  }
  if (const auto* d = std::get_if<double>(&args[i])) return *d;
  if (const auto* n = std::get_if<int64_t>(&args[i])) return static_cast<double>(*n);
  bad(i, "a number");
}

int64_t KernelArgs::integer(size_t i, std::optional<int64_t> fallback) const {
  if (!has(i)) {
    if (fallback) return *fallback;
    bad(i, "present");
  }
  if (const auto* n = std::get_if<int64_t>(&args[i])) return *n;
  bad(i, "an integer");
}

bool KernelArgs::flag(size_t i, std::optional<bool> fallback) const {
  if (!has(i)) {
    if (fallback) return *fallback;
    bad(i, "present");
  }
  if (const auto* b = std::get_if<bool>(&args[i])) return *b;
  bad(i, "a boolean");
}

std::vector<int64_t> KernelArgs::ints(size_t i) const {
  if (i < args.size())
    if (const auto* v = std::get_if<std::vector<int64_t>>(&args[i])) return *v;
  bad(i, "a list of integers");
}

const Value* KernelArgs::kwarg(const std::string& key) const {
  for (const auto& [k, v] : kwargs)
    if (k == key) return &v;
  return nullptr;
}

const KernelArgs& KernelArgs::bound(size_t first, std::initializer_list<const char*> params,
                                    std::optional<KernelArgs>& storage) const {
  const KernelArgs* b = this;
  size_t p = 0;
  for (const char* name : params) {
    const size_t at = first + p++;
    // Compared as they are (kwarg() would build a string per name).
    auto given = std::find_if(b->kwargs.begin(), b->kwargs.end(), [&](const auto& kv) { return kv.first == name; });
    if (given == b->kwargs.end()) continue;
    const Value* v = &given->second;
    if (at < b->args.size())
      throw GraphError("%" + node.name + " (" + node.op + "): got multiple values for argument '" + name +
                       "' (argument " + std::to_string(at) + " and a keyword)");
    const auto index = given - b->kwargs.begin();  // the same in the copy
    if (b == this) b = &storage.emplace(*this);  // copied only for a call that needs it
    KernelArgs& moved = *storage;
    moved.args.resize(at + 1, None{});
    moved.args[at] = *v;
    moved.kwargs.erase(moved.kwargs.begin() + index);
  }
  return *b;
}

std::optional<double> KernelArgs::kwarg_real(const std::string& key) const {
  const Value* v = kwarg(key);
  if (!v || std::holds_alternative<None>(*v)) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* n = std::get_if<int64_t>(v)) return static_cast<double>(*n);
  throw GraphError("%" + node.name + ": keyword " + key + " is not a number");
}

bool KernelArgs::kwarg_flag(const std::string& key, bool fallback) const {
  const Value* v = kwarg(key);
  if (!v || std::holds_alternative<None>(*v)) return fallback;
  if (const auto* b = std::get_if<bool>(v)) return *b;
  throw GraphError("%" + node.name + ": keyword " + key + " is not a boolean");
}

std::optional<DType> KernelArgs::kwarg_dtype(const std::string& key) const {
  const Value* v = kwarg(key);
  if (!v || std::holds_alternative<None>(*v)) return std::nullopt;
  if (const auto* t = std::get_if<DType>(v)) return *t;
  throw GraphError("%" + node.name + ": keyword " + key + " is not a dtype");
}

Shape KernelArgs::out_shape(size_t i) const { return eval_shape(node.outputs.at(i).shape, ctx.sizes); }

const KernelFn* KernelSet::find(const std::string& op) const {
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelSet::ops() const {
  std::vector<std::string> out;
  for (const auto& [op, fn] : kernels_) out.push_back(op);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace sdpa
