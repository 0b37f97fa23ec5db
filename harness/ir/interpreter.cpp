#include "harness/ir/interpreter.h"

#include <stdexcept>

#include "harness/ir/graph_printer.h"
#include "harness/ir/node_memo.h"

namespace sdpa {
namespace {

class Interpreter {
 public:
  Interpreter(const Graph& g, const KernelSet& k, const RunContext& ctx, NodeMemo* memo = nullptr)
      : g_(g), kernels_(k), ctx_(ctx), values_(g.nodes.size()), borrowed_(g.nodes.size(), nullptr), memo_(memo) {
    if (memo_) refs_.resize(g.nodes.size()), ids_.resize(g.nodes.size());
  }

  // Placeholders and constants are read where they are (the caller's input,
  // the graph's buffer), not copied; outputs move out of the run.
  Execution run(const std::map<std::string, Tensor>* by_name,
                const std::vector<const Tensor*>* by_position, bool keep) {
    int placeholder = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (n.op == "placeholder") {
        borrowed_[i] = bind(n, by_name, by_position, placeholder++);
        check_meta(n, borrowed_[i], 1);
        if (memo_) ids_[i] = {memo_->intern(*borrowed_[i])};
      } else if (n.op == "get_attr") {
        borrowed_[i] = &g_.constants.at(std::get<std::string>(n.args.at(0)));
        check_meta(n, borrowed_[i], 1);
        if (memo_) ids_[i] = {memo_->intern(*borrowed_[i])};
      } else if (memo_) {
        call_with_memo(i);
      } else {
        values_[i] = call(n);
        check_meta(n, values_[i].data(), values_[i].size());
      }
      release_dead(static_cast<int>(i), keep);
    }
    Execution e;
    for (size_t k = 0; k < g_.outputs.size(); ++k) {
      const ValueRef& o = g_.outputs[k];
      bool again = false;  // a value output twice is copied, not moved
      for (size_t later = k + 1; later < g_.outputs.size(); ++later)
        again = again || (g_.outputs[later].node == o.node && g_.outputs[later].output == o.output);
      if (borrowed_.at(o.node) || memo_ || keep || again) e.outputs.push_back(value(o));
      else e.outputs.push_back(std::move(values_.at(o.node).at(o.output)));
    }
    if (keep) {
      for (size_t i = 0; i < g_.nodes.size(); ++i)
        if (borrowed_[i]) values_[i] = {*borrowed_[i]};
      e.values = std::move(values_);
    }
    return e;
  }

 private:
  const Tensor* bind(const Node& n, const std::map<std::string, Tensor>* by_name,
                     const std::vector<const Tensor*>* by_position, int index) {
    const std::string& input = std::get<std::string>(n.args.at(0));
    if (by_name) {
      auto it = by_name->find(input);
      if (it == by_name->end()) throw GraphError("no input bound to placeholder %" + n.name);
      return &it->second;
    }
    if (index >= static_cast<int>(by_position->size()))
      throw GraphError("no operand for subgraph placeholder %" + n.name);
    return (*by_position)[index];
  }

  // Output o.output of node o.node: a placeholder's or constant's one value, or a computed one.
  const Tensor& value(const ValueRef& o) const {
    if (const Tensor* t = borrowed_.at(o.node)) {
      if (o.output != 0) throw std::out_of_range("%" + g_.nodes[o.node].name + " has one output");
      return *t;
    }
    if (memo_) return *refs_.at(o.node).at(o.output);
    return values_.at(o.node).at(o.output);
  }

  // The node's outputs from the memo where a node of the same key ran at
  // this context; else computed, then offered to the memo (by move: the
  // run reads them there), and the key recorded when every output is held.
  void call_with_memo(size_t i) {
    const Node& n = g_.nodes[i];
    KernelArgs args = resolve_args(n);
    auto id_of = [&](const Arg& a) -> std::optional<int> {
      const auto* v = std::get_if<ValueRef>(&a);
      if (!v) return std::nullopt;
      if (v->node < 0 || v->node >= static_cast<int>(ids_.size()) || v->output >= static_cast<int>(ids_[v->node].size()))
        return std::nullopt;
      return ids_[v->node][v->output];
    };
    std::vector<std::optional<int>> arg_ids, kwarg_ids;
    for (const auto& a : n.args) arg_ids.push_back(id_of(a));
    for (const auto& [k, a] : n.kwargs) kwarg_ids.push_back(id_of(a));
    const std::optional<std::string> key = memo_->key(n, args, arg_ids, kwarg_ids);
    if (const std::vector<int>* hit = key ? memo_->find(*key) : nullptr) {
      memo_->count_hit();
      for (int id : *hit) refs_[i].push_back(&memo_->value(id)), ids_[i].push_back(id);
    } else {
      values_[i] = dispatch(n, args);
      bool held = true;
      for (Tensor& t : values_[i]) {
        std::optional<int> id = memo_->intern(std::move(t));
        held = held && id.has_value();
        ids_[i].push_back(id);
        refs_[i].push_back(id ? &memo_->value(*id) : &t);
      }
      if (key && held) {
        std::vector<int> ids;
        for (const auto& id : ids_[i]) ids.push_back(*id);
        memo_->insert(*key, std::move(ids));
      }
    }
    if (refs_[i].size() != n.outputs.size()) check_meta(n, nullptr, refs_[i].size());
    for (size_t k = 0; k < refs_[i].size(); ++k) check_output(n, k, *refs_[i][k]);
  }

  Value resolve(const Arg& a) const {
    struct R {
      const Interpreter& self;
      Value operator()(const None&) const { return None{}; }
      Value operator()(ValueRef v) const { return &self.value(v); }
      Value operator()(bool b) const { return b; }
      Value operator()(int64_t i) const { return i; }
      Value operator()(double d) const { return d; }
      Value operator()(const std::string& s) const { return s; }
      Value operator()(const SymExpr& e) const { return e.eval(self.ctx_.sizes); }
      Value operator()(const SymShape& s) const { return eval_shape(s, self.ctx_.sizes); }
      Value operator()(DType t) const { return t; }
    };
    return std::visit(R{*this}, a);
  }

  KernelArgs resolve_args(const Node& n) const {
    KernelArgs args(n, ctx_);
    args.args.reserve(n.args.size());
    args.kwargs.reserve(n.kwargs.size());
    for (const auto& a : n.args) args.args.push_back(resolve(a));
    for (const auto& [k, a] : n.kwargs) args.kwargs.emplace_back(k, resolve(a));
    return args;
  }

  std::vector<Tensor> call(const Node& n) { return dispatch(n, resolve_args(n)); }

  std::vector<Tensor> dispatch(const Node& n, const KernelArgs& args) {
    if (n.op == "cond") return run_cond(n, args);
    const KernelFn* fn = kernels_.find(n.op);
    if (!fn)
      throw KernelError(KernelError::Kind::unsupported,
                        "kernel set '" + kernels_.name() + "' has no kernel for " + n.op +
                            " (node %" + n.name + ")");
    try {
      return (*fn)(args);
    } catch (const KernelError& e) {
      // Name the node once; nested interpreters (cond) already did.
      std::string what = e.what();
      if (what.rfind("%", 0) == 0) throw;
      throw KernelError(e.kind, "%" + n.name + " (" + n.op + "): " + what);
    }
  }

  // torch.cond: args (pred, operands...), subgraphs (true_branch, false_branch).
  std::vector<Tensor> run_cond(const Node& n, const KernelArgs& args) {
    const Tensor& pred = args.tensor(0);
    if (pred.numel() != 1 || n.subgraphs.size() != 2)
      throw GraphError("%" + n.name + ": cond needs a one-element predicate and two branches");
    std::vector<const Tensor*> operands;
    for (size_t i = 1; i < args.args.size(); ++i) operands.push_back(&args.tensor(i));
    const Graph& branch = *n.subgraphs[pred.data[0] != 0.0 ? 0 : 1];
    return interpret_positional(branch, kernels_, operands, ctx_).outputs;
  }

  void check_meta(const Node& n, const Tensor* got, size_t count) const {
    if (count != n.outputs.size())
      throw GraphError("%" + n.name + " (" + n.op + "): kernel returned " +
                       std::to_string(count) + " outputs, the node declares " +
                       std::to_string(n.outputs.size()));
    for (size_t i = 0; i < count; ++i) check_output(n, i, got[i]);
  }

  void check_output(const Node& n, size_t i, const Tensor& got) const {
    if (matches(got, n.outputs[i])) return;
    const Shape want = eval_shape(n.outputs[i].shape, ctx_.sizes);
    throw GraphError("%" + n.name + " (" + n.op + "): output " + std::to_string(i) + " is " +
                     dtype_name(got.dtype) + shape_str(got.shape) + ", the node declares " +
                     print_value_info(n.outputs[i]) + " = " + dtype_name(n.outputs[i].dtype) + shape_str(want));
  }

  // The declared dtype and shape, each size evaluated in place: every node's
  // every output is checked, and a Shape built for it would be one more
  // allocation per output.
  bool matches(const Tensor& got, const ValueInfo& declared) const {
    if (got.dtype != declared.dtype || got.shape.size() != declared.shape.size()) return false;
    for (size_t d = 0; d < got.shape.size(); ++d)
      if (got.shape[d] != declared.shape[d].eval(ctx_.sizes)) return false;
    return true;
  }

  // Frees values no later node reads, unless every value is kept.
  void release_dead(int i, bool keep) {
    if (keep) return;
    if (last_use_.empty()) compute_last_use();
    for (int k = dead_begin_[i]; k < dead_begin_[i + 1]; ++k) values_[dead_[k]].clear();
  }

  void compute_last_use() {
    last_use_.assign(g_.nodes.size(), -1);
    auto mark = [&](const Arg& a, int user) {
      if (const auto* v = std::get_if<ValueRef>(&a)) last_use_[v->node] = user;
    };
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const auto& a : g_.nodes[i].args) mark(a, static_cast<int>(i));
      for (const auto& [k, a] : g_.nodes[i].kwargs) mark(a, static_cast<int>(i));
    }
    for (const auto& o : g_.outputs) last_use_[o.node] = static_cast<int>(g_.nodes.size());
    // The values each node is the last to read, node after node in one
    // array (dead_begin_[i] to dead_begin_[i + 1]): a few allocations a run,
    // not one for each node.
    const int nodes = static_cast<int>(g_.nodes.size());
    auto dies = [&](size_t v) { return last_use_[v] >= 0 && last_use_[v] < nodes; };
    dead_begin_.assign(g_.nodes.size() + 1, 0);
    for (size_t v = 0; v < g_.nodes.size(); ++v)
      if (dies(v)) ++dead_begin_[last_use_[v] + 1];
    for (size_t i = 0; i < g_.nodes.size(); ++i) dead_begin_[i + 1] += dead_begin_[i];
    dead_.resize(static_cast<size_t>(dead_begin_.back()));
    std::vector<int> next(dead_begin_.begin(), dead_begin_.end() - 1);
    for (size_t v = 0; v < g_.nodes.size(); ++v)
      if (dies(v)) dead_[next[last_use_[v]]++] = static_cast<int>(v);
  }

  const Graph& g_;
  const KernelSet& kernels_;
  const RunContext& ctx_;
  std::vector<std::vector<Tensor>> values_;
  std::vector<const Tensor*> borrowed_;  // placeholders and constants: not copied
  std::vector<int> last_use_;
  std::vector<int> dead_begin_, dead_;
  NodeMemo* memo_;
  std::vector<std::vector<const Tensor*>> refs_;        // with a memo: where each output is read
  std::vector<std::vector<std::optional<int>>> ids_;   // with a memo: each output's identity there
};

}  // namespace

Execution interpret(const Graph& g, const KernelSet& kernels,
                    const std::map<std::string, Tensor>& inputs, const RunContext& ctx,
                    bool keep_values) {
  return Interpreter(g, kernels, ctx).run(&inputs, nullptr, keep_values);
}

Execution interpret(const Graph& g, const KernelSet& kernels, const std::map<std::string, Tensor>& inputs,
                    const RunContext& ctx, NodeMemo& memo) {
  if (!memo.bound_to(kernels, ctx))
    throw std::logic_error("interpret: the node memo was made for another kernel set or run context");
  return Interpreter(g, kernels, ctx, &memo).run(&inputs, nullptr, false);
}

Execution interpret_positional(const Graph& g, const KernelSet& kernels,
                               const std::vector<const Tensor*>& inputs, const RunContext& ctx,
                               bool keep_values) {
  return Interpreter(g, kernels, ctx).run(nullptr, &inputs, keep_values);
}

}  // namespace sdpa
