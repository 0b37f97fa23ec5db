#include "harness/ir/graph_verify.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_set>

#include "harness/ir/graph_printer.h"

namespace sdpa {
namespace {

// Ops whose tensor operands must share one dtype (no implicit promotion in
// the exported graphs these model).
constexpr std::array<std::string_view, 7> kSameDtypeOps = {
    "aten.bmm.default", "aten.matmul.default", "aten.mm.default",
    "aten.add.Tensor",  "aten.sub.Tensor",     "aten.mul.Tensor", "aten.div.Tensor"};

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g) { names_.reserve(g.nodes.size()); }

  std::vector<std::string> run() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) check_node(static_cast<int>(i));
    for (const auto& o : g_.outputs) check_ref(o, -1, [] { return std::string("graph output"); });
    if (g_.outputs.empty()) problems_.push_back("graph has no outputs");
    return problems_;
  }

 private:
  void problem(const Node& n, const std::string& what) {
    problems_.push_back("%" + n.name + " (" + n.op + "): " + what);
  }

  // `where` names the reading place ("argument 2"): spelled out only for a problem.
  template <typename Where>
  bool check_ref(ValueRef v, int user, Where where) {
    bool ok = v.node >= 0 && v.node < static_cast<int>(g_.nodes.size()) &&
              (user < 0 || v.node < user) && v.output >= 0 &&
              v.output < static_cast<int>(g_.nodes[v.node].outputs.size());
    if (!ok) {
      std::string msg = where() + " reads a value that is not defined before it (node " +
                        std::to_string(v.node) + ", output " + std::to_string(v.output) + ")";
      if (user >= 0) problem(g_.nodes[user], msg);
      else problems_.push_back(msg);
    }
    return ok;
  }

  void check_node(int i) {
    const Node& n = g_.nodes[i];
    if (!names_.insert(n.name).second) problem(n, "duplicate node name");
    if (n.outputs.empty()) problem(n, "node has no outputs");
    std::vector<const ValueInfo*> tensors;
    for (size_t a = 0; a < n.args.size(); ++a)
      if (const auto* v = std::get_if<ValueRef>(&n.args[a]))
        if (check_ref(*v, i, [a] { return "argument " + std::to_string(a); })) tensors.push_back(&g_.info(*v));
    for (const auto& [key, arg] : n.kwargs)
      if (const auto* v = std::get_if<ValueRef>(&arg)) check_ref(*v, i, [&key = key] { return "keyword " + key; });
    if (n.op == "placeholder" && (n.args.size() != 1 || !std::holds_alternative<std::string>(n.args[0])))
      problem(n, "placeholder needs one string argument");
    if (n.op == "get_attr") check_constant(n);
    if (std::find(kSameDtypeOps.begin(), kSameDtypeOps.end(), n.op) != kSameDtypeOps.end())
      check_same_dtype(n, tensors);
    for (const auto& sub : n.subgraphs)
      for (const auto& p : verify_graph(*sub)) problem(n, "in subgraph: " + p);
  }

  void check_constant(const Node& n) {
    const auto* name = std::get_if<std::string>(&n.args.at(0));
    auto it = name ? g_.constants.find(*name) : g_.constants.end();
    if (it == g_.constants.end()) return problem(n, "reads a constant that does not exist");
    if (it->second.dtype != n.outputs[0].dtype) problem(n, "constant dtype differs from its node");
  }

  void check_same_dtype(const Node& n, const std::vector<const ValueInfo*>& tensors) {
    for (size_t k = 1; k < tensors.size(); ++k)
      if (tensors[k]->dtype != tensors[0]->dtype)
        problem(n, std::string("type error: operands are ") + print_value_info(*tensors[0]) +
                       " and " + print_value_info(*tensors[k]) + "; " + short_op_name(n.op) +
                       " needs one dtype");
  }

  const Graph& g_;
  std::unordered_set<std::string_view> names_;  // the graph's own node names
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> verify_graph(const Graph& g) { return Verifier(g).run(); }

}  // namespace sdpa
