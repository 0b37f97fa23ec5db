#include "harness/adapter/adapter_protocol.h"

#include <gtest/gtest.h>

#include "harness/ir/graph_json.h"

namespace sdpa {
namespace {

using nlohmann::json;

// q -> neg -> output: a pass decides on %neg and rewrites it to aten.abs.
Graph sent_graph() {
  Graph g;
  SymShape s{SymExpr(2), SymExpr::symbol("s0")};
  ValueRef q = g.placeholder("q", {DType::f32, s});
  g.outputs = {g.call("aten.neg.default", {q}, {}, {{DType::f32, s}})};
  return g;
}

Graph rewritten_graph() {
  Graph g;
  SymShape s{SymExpr(2), SymExpr::symbol("s0")};
  ValueRef q = g.placeholder("q", {DType::f32, s});
  g.outputs = {g.call("aten.abs.default", {q}, {}, {{DType::f32, s}})};
  return g;
}

Decision accepted() {
  Decision d;
  d.node = "%neg";
  d.rewrite = true;
  d.deciding_rule = "accept";
  d.rules = {{"rank", true, "rank 2"}};
  d.assumptions = {{Fact{SymExpr::symbol("s0"), Rel::le, SymExpr(8)}, "rank"}};
  return d;
}

std::string reply(const Graph& g, const std::vector<Decision>& ds, int64_t id = 7) {
  json decisions = json::array();
  for (const auto& d : ds) decisions.push_back(decision_to_json(d));
  return json{{"type", "result"}, {"id", id}, {"graph", graph_to_json(g)}, {"decisions", decisions}}.dump();
}

// The verdict and message of the PassFault reading `line` throws.
std::pair<Verdict, std::string> fault_of(const std::string& line, const RewriteControl& control = {}) {
  try {
    read_adapter_run_reply(line, 7, sent_graph(), control);
  } catch (const PassFault& e) {
    return {e.verdict, e.what()};
  }
  return {Verdict::pass, "no fault"};
}

TEST(AdapterProtocol, ReadsAResultAndSetsForcedFromTheControl) {
  AdapterRunReply r = read_adapter_run_reply(reply(rewritten_graph(), {accepted()}), 7, sent_graph(), {});
  ASSERT_EQ(r.result.decisions.size(), 1u);
  const Decision& d = r.result.decisions[0];
  EXPECT_TRUE(d.rewrite);
  EXPECT_FALSE(d.forced);
  ASSERT_EQ(d.assumptions.size(), 1u);
  EXPECT_EQ(d.assumptions[0].fact.str(), "s0 <= 8");
  EXPECT_EQ(r.result.graph.nodes[1].op, "aten.abs.default");

  Decision kept = accepted();
  kept.rewrite = false;
  kept.rules[0].passed = false;
  kept.deciding_rule = "rank";
  RewriteControl force;
  force.forced = {"%neg"};
  r = read_adapter_run_reply(reply(rewritten_graph(), {kept}), 7, sent_graph(), force);
  EXPECT_TRUE(r.result.decisions[0].forced);
}

TEST(AdapterProtocol, AnErrorReplyIsThePassRaising) {
  AdapterRunReply r = read_adapter_run_reply(
      R"({"type": "error", "id": 7, "error": "raised", "message": "IndexError: out of range"})", 7, sent_graph(), {});
  EXPECT_TRUE(r.raised);
  EXPECT_EQ(r.message, "IndexError: out of range");
  r = read_adapter_run_reply(R"({"type": "error", "id": 7, "error": "unsupported", "message": "rank 2"})", 7,
                             sent_graph(), {});
  EXPECT_TRUE(r.unsupported);
}

TEST(AdapterProtocol, MalformedRepliesAreUnexpectedErrors) {
  for (const auto& [line, words] : std::vector<std::pair<std::string, std::string>>{
           {"not json", "not valid JSON"},
           {"[1, 2]", "expected a JSON object, got a list"},
           {R"({"type": "result", "id": 8, "graph": {}, "decisions": []})", "reply.id: the reply to request 7 names request 8"},
           {R"({"type": "answer", "id": 7})", "reply.type: expected \"result\" or \"error\""},
           {R"({"type": "result", "id": 7, "graph": {}})", "reply.decisions: missing required field"},
           {R"({"type": "result", "id": 7, "graph": {}, "decisions": [], "extra": 1})", "reply.extra: unknown field"},
           {R"({"type": "error", "id": 7, "error": "crashed", "message": ""})", "reply.error: expected \"raised\" or \"unsupported\""},
           {R"({"type": "result", "id": 7, "graph": {}, "decisions": [{"node": "%neg", "rewrite": "yes"}]})",
            "reply.decisions[0].rewrite: expected true or false"}}) {
    auto [verdict, message] = fault_of(line);
    EXPECT_EQ(verdict, Verdict::unexpected_error) << line;
    EXPECT_NE(message.find("answered a malformed reply: "), std::string::npos) << message;
    EXPECT_NE(message.find(words), std::string::npos) << message;
  }
}

TEST(AdapterProtocol, WrongGraphsAndDecisionsAreInvalidRewrites) {
  Graph no_outputs = rewritten_graph();
  no_outputs.outputs.clear();
  Decision unknown = accepted();
  unknown.node = "%nowhere";
  Decision inconsistent = accepted();
  inconsistent.rules[0].passed = false;
  Decision kept = accepted();
  kept.rewrite = false;
  kept.deciding_rule = "rank";
  kept.rules[0].passed = false;
  json dangling = json::parse(reply(rewritten_graph(), {accepted()}));
  dangling["graph"]["nodes"][1]["args"][0]["ref"] = "nowhere";
  RewriteControl hold;
  hold.held = {"%neg"};
  RewriteControl force_other;
  force_other.forced = {"%q"};
  for (const auto& [line, control, words] : std::vector<std::tuple<std::string, RewriteControl, std::string>>{
           {reply(no_outputs, {accepted()}), {}, "the graph returned does not verify: graph has no outputs"},
           {dangling.dump(), {}, "the graph returned does not read: reply.graph.nodes[1].args[0].ref: no node named"},
           {reply(rewritten_graph(), {unknown}), {}, "decisions[0].node: %nowhere is not a node of the graph sent"},
           {reply(rewritten_graph(), {accepted(), accepted()}), {}, "decisions[1]: a second decision for %neg"},
           {reply(rewritten_graph(), {inconsistent}), {}, "rewrites %neg though its rule rank failed"},
           {reply(sent_graph(), {accepted()}), {}, "%neg (aten.neg.default) is unchanged in the graph returned, though its guard accepted it"},
           {reply(rewritten_graph(), {kept}), {}, "is gone or changed in the graph returned, though its guard kept it"},
           {reply(rewritten_graph(), {accepted()}), hold, "though the control held it"},
           {reply(rewritten_graph(), {accepted()}), force_other, "the control forces %q, but no decision names it"}}) {
    auto [verdict, message] = fault_of(line, control);
    EXPECT_EQ(verdict, Verdict::invalid_rewrite) << message;
    EXPECT_NE(message.find(words), std::string::npos) << message;
  }
}

TEST(AdapterProtocol, HelloVersionIsChecked) {
  EXPECT_EQ(read_adapter_hello(R"({"type": "hello", "version": 1, "name": "x.py"})"), "x.py");
  try {
    read_adapter_hello(R"({"type": "hello", "version": 2})");
    FAIL() << "no fault";
  } catch (const PassFault& e) {
    EXPECT_EQ(std::string(e.what()), "speaks protocol version 2; this sdpacheck speaks version 1");
  }
  json hello = adapter_hello("p", "llm", {{"guard", "contract"}});
  EXPECT_EQ(hello["version"], kAdapterProtocolVersion);
  EXPECT_EQ(hello["options"]["guard"], "contract");
}

TEST(AdapterProtocol, RunRequestCarriesGraphEnvAndControl) {
  RewriteControl c;
  c.forced = {"%neg"};
  ShapeEnv env({{"s0", {4, 1, 8}}});
  json j = adapter_run_request(3, sent_graph(), env, c);
  EXPECT_EQ(j["id"], 3);
  EXPECT_EQ(j["control"]["forced"], json::array({"%neg"}));
  EXPECT_EQ(graph_to_json(graph_from_json(j["graph"], "graph")), j["graph"]);
  EXPECT_EQ(j["shape_env"]["s0"]["hint"], 4);
}

}  // namespace
}  // namespace sdpa
