#include "harness/ir/graph_printer.h"

#include <cmath>
#include <sstream>

namespace sdpa {

std::string value_name(const Graph& g, ValueRef v) {
  if (v.node < 0 || v.node >= static_cast<int>(g.nodes.size())) return "%<invalid>";
  const Node& n = g.nodes[v.node];
  std::string s = "%" + n.name;
  if (n.outputs.size() > 1) s += "[" + std::to_string(v.output) + "]";
  return s;
}

namespace {
std::string number(double x) {
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (std::isnan(x)) return "nan";
  std::ostringstream o;
  o.precision(9);
  o << x;
  std::string s = o.str();
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

struct ArgPrinter {
  const Graph& g;
  std::string operator()(const None&) const { return "None"; }
  std::string operator()(ValueRef v) const { return value_name(g, v); }
  std::string operator()(bool b) const { return b ? "True" : "False"; }
  std::string operator()(int64_t i) const { return std::to_string(i); }
  std::string operator()(double d) const { return number(d); }
  std::string operator()(const std::string& s) const { return s; }
  std::string operator()(const SymExpr& e) const { return e.str(); }
  std::string operator()(const SymShape& s) const { return shape_str(s); }
  std::string operator()(DType t) const { return std::string("torch.") + dtype_name(t); }
};
}  // namespace

std::string print_arg(const Graph& g, const Arg& a) { return std::visit(ArgPrinter{g}, a); }

std::string print_value_info(const ValueInfo& v) {
  std::string s = std::string(dtype_name(v.dtype)) + shape_str(v.shape);
  if (v.qparams)
    s += "{scale=" + number(v.qparams->scale) + ", zp=" + std::to_string(v.qparams->zero_point) +
         "}";
  return s;
}

std::string print_graph(const Graph& g, const std::string& indent) {
  std::ostringstream o;
  o << indent << "graph():\n";
  for (const Node& n : g.nodes) {
    o << indent << "    %" << n.name << " : ";
    if (n.outputs.size() == 1) {
      o << print_value_info(n.outputs[0]);
    } else {
      o << "(";
      for (size_t i = 0; i < n.outputs.size(); ++i)
        o << (i ? ", " : "") << print_value_info(n.outputs[i]);
      o << ")";
    }
    if (n.op == "placeholder" || n.op == "get_attr") {
      o << " = " << n.op << "[target=" << print_arg(g, n.args.at(0)) << "]\n";
      continue;
    }
    o << " = call_function[target=" << n.op << "](args = (";
    for (size_t i = 0; i < n.args.size(); ++i) o << (i ? ", " : "") << print_arg(g, n.args[i]);
    if (n.args.size() == 1) o << ",";
    o << "), kwargs = {";
    for (size_t i = 0; i < n.kwargs.size(); ++i)
      o << (i ? ", " : "") << n.kwargs[i].first << ": " << print_arg(g, n.kwargs[i].second);
    o << "})\n";
    for (size_t i = 0; i < n.subgraphs.size(); ++i) {
      o << indent << "      subgraph " << i << ":\n";
      o << print_graph(*n.subgraphs[i], indent + "        ");
    }
  }
  o << indent << "    return (";
  for (size_t i = 0; i < g.outputs.size(); ++i) o << (i ? ", " : "") << value_name(g, g.outputs[i]);
  if (g.outputs.size() == 1) o << ",";
  o << ")\n";
  return o.str();
}

}  // namespace sdpa
