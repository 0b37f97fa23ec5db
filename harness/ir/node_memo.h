#pragma once
/// Node results shared by the exact runs of several graphs on the same
/// inputs. The completeness proof runs the entry graph and each forced
/// rewrite on the exact kernels at one size and data draw; the graphs share
/// most nodes (a forced rewrite changes one op and leaves the rest). A node
/// whose op, resolved arguments (tensors compared by content, bit for bit),
/// keyword arguments and declared outputs equal those of a node already run
/// at this context takes that node's outputs instead of running its kernel:
/// a kernel is a function of exactly these (KernelArgs) and the context
/// (RunContext: sizes and data seed), which the memo is bound to. A
/// computed output equal in content to a stored value gets that value's
/// identity, so nodes downstream of a rewrite that leaves values unchanged
/// are found too. Only for kernel sets whose kernels are pure functions (the
/// exact reference kernels); errors are never stored, so a failing node
/// fails again. Values are kept up to a budget of elements shared by the
/// memos of one owner; past it, new values are neither stored nor looked
/// up (the run computes them, with the same result).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness/ir/graph.h"
#include "harness/ir/kernel_set.h"

namespace sdpa {

class NodeMemo {
 public:
  /// `budget`: elements the memo may still store, decremented as it stores
  /// (shared by several memos when they point at one counter).
  NodeMemo(const KernelSet& kernels, RunContext ctx, int64_t* budget)
      : kernels_(&kernels), ctx_(std::move(ctx)), budget_(budget) {}
  /// Gives its elements back to the budget.
  ~NodeMemo() {
    if (budget_) *budget_ += elements_;
  }
  NodeMemo(const NodeMemo&) = delete;
  NodeMemo& operator=(const NodeMemo&) = delete;

  /// The identity of a value by content, storing a copy under a new one
  /// when none matches and the budget allows; nullopt otherwise.
  std::optional<int> intern(const Tensor& t);
  /// The same for a computed value the memo may take: stored by move (t is
  /// left as it was when nothing is stored).
  std::optional<int> intern(Tensor&& t);

  /// The key of node `n` with its tensor arguments' identities, or nullopt
  /// when an argument has none (or the node has subgraphs: a cond runs its
  /// branches, whose nodes are keyed on their own).
  std::optional<std::string> key(const Node& n, const KernelArgs& args,
                                 const std::vector<std::optional<int>>& ids_of_args,
                                 const std::vector<std::optional<int>>& ids_of_kwargs) const;

  /// The identities of the outputs of the node with `key`, or null.
  const std::vector<int>* find(const std::string& key) const;
  void insert(const std::string& key, std::vector<int> ids);
  const Tensor& value(int id) const { return *values_.at(static_cast<size_t>(id)); }

  /// Whether this memo was made for kernel set `k` at context `ctx`.
  bool bound_to(const KernelSet& k, const RunContext& ctx) const;

  /// Elements held, and how many node results were reused (for tests).
  int64_t elements() const { return elements_; }
  int64_t hits() const { return hits_; }
  void count_hit() { ++hits_; }

 private:
  static uint64_t content_hash(const Tensor& t);
  static bool same_content(const Tensor& a, const Tensor& b);
  std::optional<int> lookup(const Tensor& t, uint64_t h) const;
  static int64_t cost(const Tensor& t);
  bool fits(const Tensor& t) const;
  std::optional<int> store(std::unique_ptr<Tensor> t, uint64_t h);

  const KernelSet* kernels_;
  RunContext ctx_;
  int64_t* budget_;
  std::vector<std::unique_ptr<Tensor>> values_;  // by identity; stable addresses
  std::unordered_multimap<uint64_t, int> by_hash_;
  std::unordered_map<std::string, std::vector<int>> nodes_;
  int64_t elements_ = 0;
  int64_t hits_ = 0;
};

}  // namespace sdpa
