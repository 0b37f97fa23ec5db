#pragma once
/// A kernel set: the implementation of each op a target may hold. An op the
/// set lacks is `unsupported`, never computed another way.
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "harness/ir/graph.h"
#include "harness/ir/tensor.h"

namespace sdpa {

/// What a kernel reports when it refuses or fails. `recoverable` models a
/// checked error the runtime returns (ET_KERNEL_CHECK), `fatal` an abort
/// (ET_CHECK_MSG), `unsupported` a declared gap (dtype or op not taken).
class KernelError : public std::runtime_error {
 public:
  enum class Kind { unsupported, recoverable, fatal };
  KernelError(Kind kind, const std::string& message) : std::runtime_error(message), kind(kind) {}
  Kind kind;
};

/// A graph that is inconsistent at run time: a kernel's result differs in
/// shape or dtype from what the node declares, or an argument has the wrong kind.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Everything a run needs besides the inputs: sizes of this run and the
/// seed of the data streams (dropout draws from stream "dropout").
struct RunContext {
  Assignment sizes;
  uint64_t data_seed = 0;
};

/// A resolved argument: sizes are evaluated, values are tensors.
using Value = std::variant<None, const Tensor*, bool, int64_t, double, std::string,
                           std::vector<int64_t>, DType>;

class KernelArgs {
 public:
  KernelArgs(const Node& node, const RunContext& ctx) : node(node), ctx(ctx) {}
  const Node& node;
  const RunContext& ctx;
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;

  bool has(size_t i) const { return i < args.size() && !std::holds_alternative<None>(args[i]); }
  const Tensor& tensor(size_t i) const;
  const Tensor* optional_tensor(size_t i) const;
  double real(size_t i, std::optional<double> fallback = std::nullopt) const;
  int64_t integer(size_t i, std::optional<int64_t> fallback = std::nullopt) const;
  bool flag(size_t i, std::optional<bool> fallback = std::nullopt) const;
  std::vector<int64_t> ints(size_t i) const;

  const Value* kwarg(const std::string& key) const;
  /// The call as PyTorch binds it, into `storage` when it passes one of
  /// `params` by keyword (else this call itself): `params` names the op's
  /// positional-or-keyword parameters at positions first, first + 1, ...;
  /// one given by keyword is read at its position (None fills positions
  /// before it that were not given). A parameter given both ways throws
  /// GraphError, as PyTorch refuses the call ("got multiple values for
  /// argument"). Laxer than PyTorch: a required parameter left out, or a
  /// None keyword for a number or flag, is read as its kernel reads a
  /// missing argument (its default), and an error about a bound keyword
  /// names its position.
  const KernelArgs& bound(size_t first, std::initializer_list<const char*> params,
                          std::optional<KernelArgs>& storage) const;
  std::optional<double> kwarg_real(const std::string& key) const;
  bool kwarg_flag(const std::string& key, bool fallback) const;
  std::optional<DType> kwarg_dtype(const std::string& key) const;

  DType out_dtype(size_t i = 0) const { return node.outputs.at(i).dtype; }
  Shape out_shape(size_t i = 0) const;

 private:
  [[noreturn]] void bad(size_t i, const char* expected) const;
};

using KernelFn = std::function<std::vector<Tensor>(const KernelArgs&)>;

/// A kernel's one result, moved into its output list: a braced list would
/// copy it (an initializer_list's elements are const).
inline std::vector<Tensor> one_output(Tensor t) {
  std::vector<Tensor> out;
  out.push_back(std::move(t));
  return out;
}

class KernelSet {
 public:
  explicit KernelSet(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  void add(const std::string& op, KernelFn fn) { kernels_[op] = std::move(fn); }
  const KernelFn* find(const std::string& op) const;
  /// The op names, sorted.
  std::vector<std::string> ops() const;

 private:
  std::string name_;
  // Hashed: the interpreter finds a kernel for every node it runs.
  std::unordered_map<std::string, KernelFn> kernels_;
};

}  // namespace sdpa
