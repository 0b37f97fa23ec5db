#pragma once
/// An FX-like graph IR: nodes named by their op ("aten.bmm.default"), values
/// with symbolic shapes, dtypes and optional qparams, nodes with several
/// outputs, subgraphs (the branches of a cond) and constant buffers.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "harness/ir/symbolic.h"
#include "harness/ir/tensor.h"

namespace sdpa {

/// Output `output` of node `node` (an index into Graph::nodes).
struct ValueRef {
  int node = -1;
  int output = 0;
  bool operator==(const ValueRef& o) const { return node == o.node && output == o.output; }
};

struct ValueInfo {
  DType dtype = DType::f32;
  SymShape shape;
  std::optional<QParams> qparams;
};

struct None {
  bool operator==(const None&) const { return true; }
};

/// A node argument: a graph value, a literal, a size, a list of sizes or a dtype.
using Arg = std::variant<None, ValueRef, bool, int64_t, double, std::string, SymExpr, SymShape, DType>;

struct Graph;

struct Node {
  std::string name;  // unique in its graph: "q", "mul", "mul_1"
  std::string op;    // "placeholder", "get_attr", "getitem", "cond" or an aten/llama op
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kwargs;
  std::vector<ValueInfo> outputs;
  std::vector<std::shared_ptr<Graph>> subgraphs;

  const Arg* kwarg(const std::string& key) const;
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<ValueRef> outputs;
  std::map<std::string, Tensor> constants;  // get_attr targets: lifted scalars, buffers

  /// Appends a placeholder for runtime input `input`.
  ValueRef placeholder(const std::string& input, ValueInfo info);
  /// Appends a get_attr node reading constant `name` (added to `constants`).
  ValueRef constant(const std::string& name, Tensor value, SymShape shape);
  /// Appends a call of `op`; returns its first output. `name_hint` defaults
  /// to the op's short name ("aten.mul.Scalar" -> "mul").
  ValueRef call(std::string op, std::vector<Arg> args,
                std::vector<std::pair<std::string, Arg>> kwargs, std::vector<ValueInfo> outputs,
                const std::string& name_hint = "");

  const ValueInfo& info(ValueRef v) const { return nodes.at(v.node).outputs.at(v.output); }
  /// Indices of nodes whose args or kwargs read any output of node `index`.
  std::vector<int> users(int index) const;
  /// users(i) of every node i, found in one pass over the graph.
  std::vector<std::vector<int>> users_of_each() const;
  /// Index of the node named `name`, or -1.
  int find(const std::string& name) const;
  /// Number of nodes calling `op`, in this graph and its subgraphs.
  int count(const std::string& op) const;
  /// `hint`, or `hint_1`, `hint_2`, ... if taken.
  std::string unique_name(const std::string& hint) const;
};

/// Every node (name, op, arguments, output types, subgraphs), every output
/// and every constant the same: doubles bit for bit, NaN equal to NaN.
bool same_graph(const Graph& a, const Graph& b);

/// "aten.mul.Scalar" -> "mul", "llama.custom_sdpa.default" -> "custom_sdpa".
std::string short_op_name(const std::string& op);

/// Builds a new graph from an old one node by node: each node is copied or
/// replaced by new nodes, and later references are remapped.
class GraphRewriter {
 public:
  explicit GraphRewriter(const Graph& source);
  Graph& out() { return out_; }
  ValueRef map(ValueRef old) const;
  Arg map(const Arg& old) const;
  /// Copies node `n` of the source graph (arguments remapped).
  ValueRef copy(const Node& n);
  /// Records that the outputs of source node `n` are now `outputs`.
  void replace(const Node& n, std::vector<ValueRef> outputs);
  Graph finish();

 private:
  /// Index of `n` in the source graph's nodes; a logic error if it is not one of them.
  size_t source_index(const Node& n) const;

  const Graph& source_;
  Graph out_;
  /// Per source node, its outputs in out_ (empty: not yet copied or replaced).
  std::vector<std::vector<ValueRef>> remap_;
};

}  // namespace sdpa
