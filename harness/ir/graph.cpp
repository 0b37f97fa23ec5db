#include "harness/ir/graph.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace sdpa {

const Arg* Node::kwarg(const std::string& key) const {
  for (const auto& [k, v] : kwargs)
    if (k == key) return &v;
  return nullptr;
}

namespace {

bool same_double(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

bool same_arg(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) return same_double(*x, std::get<double>(b));
  return a == b;
}

bool same_info(const ValueInfo& a, const ValueInfo& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.qparams == b.qparams;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype || a.shape != b.shape || !(a.qparams == b.qparams) || a.data.size() != b.data.size())
    return false;
  for (size_t i = 0; i < a.data.size(); ++i)
    if (!same_double(a.data[i], b.data[i])) return false;
  return true;
}

bool same_node(const Node& a, const Node& b) {
  if (a.name != b.name || a.op != b.op || a.args.size() != b.args.size() || a.kwargs.size() != b.kwargs.size() ||
      a.outputs.size() != b.outputs.size() || a.subgraphs.size() != b.subgraphs.size())
    return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!same_arg(a.args[i], b.args[i])) return false;
  for (size_t i = 0; i < a.kwargs.size(); ++i)
    if (a.kwargs[i].first != b.kwargs[i].first || !same_arg(a.kwargs[i].second, b.kwargs[i].second)) return false;
  for (size_t i = 0; i < a.outputs.size(); ++i)
    if (!same_info(a.outputs[i], b.outputs[i])) return false;
  for (size_t i = 0; i < a.subgraphs.size(); ++i)
    if (!same_graph(*a.subgraphs[i], *b.subgraphs[i])) return false;
  return true;
}

}  // namespace

bool same_graph(const Graph& a, const Graph& b) {
  if (a.nodes.size() != b.nodes.size() || !(a.outputs == b.outputs) || a.constants.size() != b.constants.size())
    return false;
  for (size_t i = 0; i < a.nodes.size(); ++i)
    if (!same_node(a.nodes[i], b.nodes[i])) return false;
  for (auto i = a.constants.begin(), j = b.constants.begin(); i != a.constants.end(); ++i, ++j)
    if (i->first != j->first || !same_tensor(i->second, j->second)) return false;
  return true;
}

std::string short_op_name(const std::string& op) {
  auto first = op.find('.');
  if (first == std::string::npos) return op;
  auto second = op.find('.', first + 1);
  return op.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
}

std::string Graph::unique_name(const std::string& hint) const {
  if (find(hint) < 0) return hint;
  for (int i = 1;; ++i) {
    std::string n = hint + "_" + std::to_string(i);
    if (find(n) < 0) return n;
  }
}

int Graph::find(const std::string& name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

ValueRef Graph::placeholder(const std::string& input, ValueInfo info) {
  Node n;
  n.name = unique_name(input);
  n.op = "placeholder";
  n.args = {input};
  n.outputs = {std::move(info)};
  nodes.push_back(std::move(n));
  return {static_cast<int>(nodes.size()) - 1, 0};
}

ValueRef Graph::constant(const std::string& name, Tensor value, SymShape shape) {
  Node n;
  n.name = unique_name(name);
  n.op = "get_attr";
  n.args = {n.name};
  n.outputs = {ValueInfo{value.dtype, std::move(shape), value.qparams}};
  constants[n.name] = std::move(value);
  nodes.push_back(std::move(n));
  return {static_cast<int>(nodes.size()) - 1, 0};
}

ValueRef Graph::call(std::string op, std::vector<Arg> args,
                     std::vector<std::pair<std::string, Arg>> kwargs,
                     std::vector<ValueInfo> outputs, const std::string& name_hint) {
  Node n;
  n.name = unique_name(name_hint.empty() ? short_op_name(op) : name_hint);
  n.op = std::move(op);
  n.args = std::move(args);
  n.kwargs = std::move(kwargs);
  n.outputs = std::move(outputs);
  nodes.push_back(std::move(n));
  return {static_cast<int>(nodes.size()) - 1, 0};
}

namespace {
bool reads(const Arg& a, int index) {
  const auto* v = std::get_if<ValueRef>(&a);
  return v && v->node == index;
}
}  // namespace

std::vector<int> Graph::users(int index) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    bool uses = false;
    for (const auto& a : nodes[i].args) uses = uses || reads(a, index);
    for (const auto& [k, a] : nodes[i].kwargs) uses = uses || reads(a, index);
    if (uses) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<std::vector<int>> Graph::users_of_each() const {
  std::vector<std::vector<int>> out(nodes.size());
  auto note = [&](const Arg& a, int user) {
    const auto* v = std::get_if<ValueRef>(&a);
    if (!v || v->node < 0 || v->node >= static_cast<int>(nodes.size())) return;
    std::vector<int>& users = out[static_cast<size_t>(v->node)];
    if (users.empty() || users.back() != user) users.push_back(user);  // once per user, in node order
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& a : nodes[i].args) note(a, static_cast<int>(i));
    for (const auto& [k, a] : nodes[i].kwargs) note(a, static_cast<int>(i));
  }
  return out;
}

int Graph::count(const std::string& op) const {
  int n = 0;
  for (const auto& node : nodes) {
    n += node.op == op;
    for (const auto& g : node.subgraphs) n += g->count(op);
  }
  return n;
}

// A rewrite mostly copies: the new graph has about as many nodes as the old
// (a decomposition adds a dozen or so), so room for them is reserved up front.
GraphRewriter::GraphRewriter(const Graph& source) : source_(source), remap_(source.nodes.size()) {
  out_.constants = source.constants;
  out_.nodes.reserve(source.nodes.size() + 16);
}

ValueRef GraphRewriter::map(ValueRef old) const {
  if (old.node < 0 || old.node >= static_cast<int>(remap_.size()) || old.output < 0 ||
      old.output >= static_cast<int>(remap_[old.node].size()))
    throw std::logic_error("graph rewrite reads node " + std::to_string(old.node) +
                           " before it was copied or replaced");
  return remap_[old.node][old.output];
}

Arg GraphRewriter::map(const Arg& old) const {
  if (const auto* v = std::get_if<ValueRef>(&old)) return map(*v);
  return old;
}

ValueRef GraphRewriter::copy(const Node& n) {
  size_t index = source_index(n);
  Node c;  // every field of Node, set once: the name and arguments are not copied to be overwritten
  c.name = out_.unique_name(n.name);
  c.op = n.op;
  c.args.reserve(n.args.size());
  for (const auto& a : n.args) c.args.push_back(map(a));
  c.kwargs.reserve(n.kwargs.size());
  for (const auto& [k, a] : n.kwargs) c.kwargs.emplace_back(k, map(a));
  c.outputs = n.outputs;
  c.subgraphs = n.subgraphs;
  out_.nodes.push_back(std::move(c));
  int at = static_cast<int>(out_.nodes.size()) - 1;
  std::vector<ValueRef>& outs = remap_[index];
  outs.clear();
  outs.reserve(n.outputs.size());
  for (size_t i = 0; i < n.outputs.size(); ++i) outs.push_back({at, static_cast<int>(i)});
  return outs.empty() ? ValueRef{at, 0} : outs[0];
}

void GraphRewriter::replace(const Node& n, std::vector<ValueRef> outputs) {
  remap_[source_index(n)] = std::move(outputs);
}

size_t GraphRewriter::source_index(const Node& n) const {
  // std::less orders any two pointers, so a node of another graph is refused without undefined behaviour.
  const Node* first = source_.nodes.data();
  const Node* end = first + source_.nodes.size();
  std::less<const Node*> before;
  if (before(&n, first) || !before(&n, end))
    throw std::logic_error("graph rewrite copies or replaces %" + n.name + ", a node not of its source graph");
  return static_cast<size_t>(&n - first);
}

Graph GraphRewriter::finish() {
  out_.outputs.clear();
  for (const auto& o : source_.outputs) out_.outputs.push_back(map(o));
  return std::move(out_);
}

}  // namespace sdpa
