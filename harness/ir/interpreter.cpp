#include "harness/ir/interpreter.h"

#include <stdexcept>

#include "harness/ir/graph_printer.h"

namespace sdpa {
namespace {

class Interpreter {
 public:
  Interpreter(const Graph& g, const KernelSet& k, const RunContext& ctx)
      : g_(g), kernels_(k), ctx_(ctx), values_(g.nodes.size()), borrowed_(g.nodes.size(), nullptr) {}

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
      } else if (n.op == "get_attr") {
        borrowed_[i] = &g_.constants.at(std::get<std::string>(n.args.at(0)));
        check_meta(n, borrowed_[i], 1);
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
      if (borrowed_.at(o.node) || keep || again) e.outputs.push_back(value(o));
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
    return values_.at(o.node).at(o.output);
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

  std::vector<Tensor> call(const Node& n) {
    KernelArgs args(n, ctx_);
    for (const auto& a : n.args) args.args.push_back(resolve(a));
    for (const auto& [k, a] : n.kwargs) args.kwargs.emplace_back(k, resolve(a));
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
    for (size_t i = 0; i < count; ++i) {
      Shape want = eval_shape(n.outputs[i].shape, ctx_.sizes);
      if (got[i].shape != want || got[i].dtype != n.outputs[i].dtype)
        throw GraphError("%" + n.name + " (" + n.op + "): output " + std::to_string(i) + " is " +
                         dtype_name(got[i].dtype) + shape_str(got[i].shape) +
                         ", the node declares " + print_value_info(n.outputs[i]) + " = " +
                         dtype_name(n.outputs[i].dtype) + shape_str(want));
    }
  }

  // Frees values no later node reads, unless every value is kept.
  void release_dead(int i, bool keep) {
    if (keep) return;
    if (last_use_.empty()) compute_last_use();
    for (int v : dead_after_[i]) values_[v].clear();
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
    dead_after_.assign(g_.nodes.size(), {});
    for (size_t v = 0; v < g_.nodes.size(); ++v)
      if (last_use_[v] >= 0 && last_use_[v] < static_cast<int>(g_.nodes.size()))
        dead_after_[last_use_[v]].push_back(static_cast<int>(v));
  }

  const Graph& g_;
  const KernelSet& kernels_;
  const RunContext& ctx_;
  std::vector<std::vector<Tensor>> values_;
  std::vector<const Tensor*> borrowed_;  // placeholders and constants: not copied
  std::vector<int> last_use_;
  std::vector<std::vector<int>> dead_after_;
};

}  // namespace

Execution interpret(const Graph& g, const KernelSet& kernels,
                    const std::map<std::string, Tensor>& inputs, const RunContext& ctx,
                    bool keep_values) {
  return Interpreter(g, kernels, ctx).run(&inputs, nullptr, keep_values);
}

Execution interpret_positional(const Graph& g, const KernelSet& kernels,
                               const std::vector<const Tensor*>& inputs, const RunContext& ctx,
                               bool keep_values) {
  return Interpreter(g, kernels, ctx).run(nullptr, &inputs, keep_values);
}

}  // namespace sdpa
