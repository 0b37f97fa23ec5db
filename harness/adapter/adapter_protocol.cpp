#include "harness/adapter/adapter_protocol.h"

#include <set>

#include "harness/ir/graph_json.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"

namespace sdpa {
namespace {

using nlohmann::json;

[[noreturn]] void malformed(const std::string& why) {
  throw PassFault(Verdict::unexpected_error, "answered a malformed reply: " + why);
}
[[noreturn]] void wrong(const std::string& why) { throw PassFault(Verdict::invalid_rewrite, why); }

json parse_line(const std::string& line) {
  try {
    json j = parse_json_text(line, "reply");
    if (!j.is_object()) malformed("reply: expected a JSON object, got " + json_kind(j));
    return j;
  } catch (const InputError& e) {
    malformed(e.what());
  }
}

Rel rel_from_json(JsonObject& o, const std::string& key) {
  const std::string r = o.str(key);
  for (Rel rel : {Rel::eq, Rel::ne, Rel::lt, Rel::le, Rel::gt, Rel::ge})
    if (r == rel_str(rel)) return rel;
  o.fail(key, "expected one of ==, !=, <, <=, >, >=, got \"" + r + "\"");
}

Decision decision_from_json(const json& v, const std::string& field) {
  JsonObject o(v, field);
  Decision d;
  d.node = o.str("node");
  d.rewrite = o.boolean("rewrite");
  d.deciding_rule = o.str("deciding_rule");
  if (const json* rules = o.find("rules")) {
    if (!rules->is_array()) o.fail("rules", "expected a list, got " + json_kind(*rules));
    for (size_t i = 0; i < rules->size(); ++i) {
      JsonObject r((*rules)[i], o.field("rules") + "[" + std::to_string(i) + "]");
      RuleOutcome out;
      out.rule = r.str("rule");
      out.passed = r.boolean("passed");
      if (r.find("detail")) out.detail = r.str("detail");
      r.reject_unknown();
      d.rules.push_back(out);
    }
  }
  if (const json* as = o.find("assumptions")) {
    if (!as->is_array()) o.fail("assumptions", "expected a list, got " + json_kind(*as));
    for (size_t i = 0; i < as->size(); ++i) {
      JsonObject a((*as)[i], o.field("assumptions") + "[" + std::to_string(i) + "]");
      Assumption out;
      out.fact.lhs = sym_from_json(a.require("lhs"), a.field("lhs"));
      out.fact.rel = rel_from_json(a, "rel");
      out.fact.rhs = sym_from_json(a.require("rhs"), a.field("rhs"));
      out.rule = a.str("rule");
      a.reject_unknown();
      d.assumptions.push_back(out);
    }
  }
  o.reject_unknown();
  return d;
}

// A decision reads as a guard's: it rewrites exactly when no rule failed,
// and its deciding rule is the first failed one, else "accept".
void check_consistent(const Decision& d, const std::string& field) {
  std::string first_failed;
  for (const auto& r : d.rules)
    if (!r.passed && first_failed.empty()) first_failed = r.rule;
  if (d.rewrite && !first_failed.empty())
    wrong(field + " rewrites " + d.node + " though its rule " + first_failed + " failed");
  if (d.rewrite && d.deciding_rule != "accept")
    wrong(field + " rewrites " + d.node + " with deciding rule \"" + d.deciding_rule + "\" (expected \"accept\")");
  if (!d.rewrite && d.deciding_rule == "accept")
    wrong(field + " keeps " + d.node + " with deciding rule \"accept\"");
  if (!d.rewrite && !first_failed.empty() && d.deciding_rule != first_failed)
    wrong(field + " keeps " + d.node + " on rule \"" + d.deciding_rule + "\", but its first failed rule is " +
          first_failed);
}

// The node a decision names: "%name" of a node of the graph sent.
const Node& decided_node(const Graph& sent, const Decision& d, const std::string& field) {
  const int i = d.node.size() > 1 && d.node[0] == '%' ? sent.find(d.node.substr(1)) : -1;
  if (i < 0) wrong(field + ".node: " + d.node + " is not a node of the graph sent (expected %NAME)");
  return sent.nodes[static_cast<size_t>(i)];
}

// Whether node `n` of `sent` is in `back` as it was: the same name, op and
// literal arguments (a value it reads may have been rewritten before it).
// A rewritten node is gone or changed.
bool same_arg(const Graph& sent, const Arg& a, const Graph& back, const Arg& b) {
  if (std::holds_alternative<ValueRef>(a) || std::holds_alternative<ValueRef>(b))
    return std::holds_alternative<ValueRef>(a) && std::holds_alternative<ValueRef>(b);
  return print_arg(sent, a) == print_arg(back, b);
}

bool unchanged(const Graph& sent, const Node& n, const Graph& back) {
  const int j = back.find(n.name);
  if (j < 0) return false;
  const Node& m = back.nodes[static_cast<size_t>(j)];
  if (m.op != n.op || m.args.size() != n.args.size() || m.kwargs.size() != n.kwargs.size()) return false;
  for (size_t a = 0; a < n.args.size(); ++a)
    if (!same_arg(sent, n.args[a], back, m.args[a])) return false;
  for (size_t k = 0; k < n.kwargs.size(); ++k)
    if (n.kwargs[k].first != m.kwargs[k].first || !same_arg(sent, n.kwargs[k].second, back, m.kwargs[k].second))
      return false;
  return true;
}

void check_control(const Graph& sent, const Graph& back, const std::vector<Decision>& ds,
                   const RewriteControl& control) {
  std::set<std::string> decided;
  for (size_t i = 0; i < ds.size(); ++i) {
    const std::string field = "decisions[" + std::to_string(i) + "]";
    const Node& n = decided_node(sent, ds[i], field);
    if (!decided.insert(ds[i].node).second) wrong(field + ": a second decision for " + ds[i].node);
    const bool still_there = unchanged(sent, n, back);
    const bool rewritten = control.rewrites(ds[i]);
    if (rewritten && still_there)
      wrong(ds[i].node + " (" + n.op + ") is unchanged in the graph returned, though " +
            (ds[i].rewrite ? "its guard accepted it" : "the control forced it"));
    if (!rewritten && !still_there)
      wrong(ds[i].node + " (" + n.op + ") is gone or changed in the graph returned, though " +
            (control.held.count(ds[i].node) ? "the control held it" : "its guard kept it"));
  }
  for (const auto* names : {&control.forced, &control.held})
    for (const auto& name : *names)
      if (!decided.count(name))
        wrong("the control " + std::string(names == &control.forced ? "forces " : "holds ") + name +
              ", but no decision names it");
}

}  // namespace

json adapter_hello(const std::string& pass, const std::string& target, const Options& options) {
  return {{"type", "hello"}, {"protocol", "sdpacheck-adapter"}, {"version", kAdapterProtocolVersion},
          {"kind", "pass"},  {"pass", pass},                    {"target", target},
          {"options", options}};
}

std::string hello_version_mismatch(JsonObject& hello) {
  if (const std::string type = hello.str("type"); type != "hello")
    hello.fail("type", "expected \"hello\", got \"" + type + "\"");
  const int64_t version = hello.integer("version");
  if (version == kAdapterProtocolVersion) return "";
  return "speaks protocol version " + std::to_string(version) + "; this sdpacheck speaks version " +
         std::to_string(kAdapterProtocolVersion);
}

std::string read_adapter_hello(const std::string& line) {
  json j = parse_line(line);
  try {
    JsonObject o(j, "hello");
    if (std::string mismatch = hello_version_mismatch(o); !mismatch.empty())
      throw PassFault(Verdict::unexpected_error, mismatch);
    std::string name = o.find("name") ? o.str("name") : "";
    o.reject_unknown();
    return name;
  } catch (const InputError& e) {
    malformed(e.what());
  }
}

json adapter_run_request(int64_t id, const Graph& g, const ShapeEnv& env, const RewriteControl& control) {
  return {{"type", "run"},
          {"id", id},
          {"graph", graph_to_json(g)},
          {"shape_env", shape_env_to_json(env)},
          {"control",
           {{"force_all", control.force_all}, {"forced", control.forced}, {"held", control.held}}}};
}

AdapterRunReply read_adapter_run_reply(const std::string& line, int64_t id, const Graph& sent,
                                       const RewriteControl& control) {
  json j = parse_line(line);
  AdapterRunReply reply;
  const json* graph = nullptr;
  std::vector<Decision> decisions;
  try {
    JsonObject o(j, "reply");
    const std::string type = o.str("type");
    if (type != "result" && type != "error") o.fail("type", "expected \"result\" or \"error\", got \"" + type + "\"");
    if (const int64_t got = o.integer("id"); got != id)
      o.fail("id", "the reply to request " + std::to_string(id) + " names request " + std::to_string(got));
    if (type == "error") {
      const std::string kind = o.str("error");
      if (kind != "raised" && kind != "unsupported")
        o.fail("error", "expected \"raised\" or \"unsupported\", got \"" + kind + "\"");
      reply.raised = kind == "raised";
      reply.unsupported = kind == "unsupported";
      reply.message = o.str("message");
      o.reject_unknown();
      return reply;
    }
    graph = &o.require("graph");
    const json& ds = o.require("decisions");
    if (!ds.is_array()) o.fail("decisions", "expected a list, got " + json_kind(ds));
    for (size_t i = 0; i < ds.size(); ++i)
      decisions.push_back(decision_from_json(ds[i], "reply.decisions[" + std::to_string(i) + "]"));
    o.reject_unknown();
  } catch (const InputError& e) {
    malformed(e.what());
  }
  try {
    reply.result.graph = graph_from_json(*graph, "reply.graph");
  } catch (const InputError& e) {
    wrong("the graph returned does not read: " + std::string(e.what()));
  }
  if (auto problems = verify_graph(reply.result.graph); !problems.empty())
    wrong("the graph returned does not verify: " + problems[0]);
  for (size_t i = 0; i < decisions.size(); ++i)
    check_consistent(decisions[i], "decisions[" + std::to_string(i) + "]");
  check_control(sent, reply.result.graph, decisions, control);
  for (auto& d : decisions) d.forced = !d.rewrite && control.rewrites(d);
  reply.result.decisions = std::move(decisions);
  return reply;
}

json decision_to_json(const Decision& d) {
  json rules = json::array(), assumptions = json::array();
  for (const auto& r : d.rules) rules.push_back({{"rule", r.rule}, {"passed", r.passed}, {"detail", r.detail}});
  for (const auto& a : d.assumptions)
    assumptions.push_back({{"lhs", sym_to_json(a.fact.lhs)},
                           {"rel", rel_str(a.fact.rel)},
                           {"rhs", sym_to_json(a.fact.rhs)},
                           {"rule", a.rule}});
  return {{"node", d.node},   {"rewrite", d.rewrite},         {"deciding_rule", d.deciding_rule},
          {"rules", rules},   {"assumptions", assumptions}};
}

}  // namespace sdpa
