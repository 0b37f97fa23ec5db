#include "harness/ir/graph_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/io/json_reader.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"

namespace sdpa {
namespace {

using nlohmann::json;

// A graph with every kind of argument, a node of two outputs, qparams, a
// constant holding non-finite values, keywords in a non-sorted order and a
// subgraph.
Graph every_kind() {
  Graph g;
  const SymExpr s0 = SymExpr::symbol("s0");
  SymShape s{SymExpr(1), s0 + SymExpr(1), SymExpr(8)};
  ValueRef q = g.placeholder("q", {DType::bf16, s});
  ValueRef m = g.placeholder("attn_mask", {DType::b8, {SymExpr(2), s0}});
  Tensor c(DType::f32, {3});
  c.data = {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0.1};
  ValueRef k = g.constant("_tensor_constant0", c, {SymExpr(3)});
  ValueRef d = g.call("aten.native_dropout.default", {q, 0.25, true}, {}, {{DType::bf16, s}, {DType::b8, s}});
  ValueInfo int8{DType::i8, s, QParams{0.02, -3, -128, 127}};
  ValueRef x = g.call("aten.op.default",
                      {ValueRef{d.node, 1}, None{}, int64_t{-7}, -0.0, std::numeric_limits<double>::quiet_NaN(),
                       std::string("q"), s0 * SymExpr(2), SymShape{SymExpr(0), s0}, DType::f16, m, k},
                      {{"scale", 1e-300}, {"enable_gqa", false}, {"dims", SymShape{}}}, {int8});
  Graph branch;
  ValueRef p = branch.placeholder("x", {DType::f32, {SymExpr(2)}});
  branch.outputs = {branch.call("aten.neg.default", {p}, {}, {{DType::f32, {SymExpr(2)}}})};
  g.nodes[x.node].subgraphs.push_back(std::make_shared<Graph>(branch));
  g.outputs = {x, ValueRef{d.node, 0}};
  return g;
}

Graph read(const json& j) { return graph_from_json(j, "graph"); }

// The message of the InputError reading `j` throws.
std::string error_of(const json& j) {
  try {
    read(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

json tiny() {
  return json::parse(R"({"nodes": [
      {"name": "q", "op": "placeholder", "args": [{"str": "q"}], "outputs": [{"dtype": "f32", "shape": [2, "s0"]}]},
      {"name": "neg", "op": "aten.neg.default", "args": [{"ref": "q"}], "outputs": [{"dtype": "f32", "shape": [2, "s0"]}]}],
    "outputs": [{"ref": "neg"}]})");
}

TEST(GraphJson, RoundTripKeepsEveryArgumentKindAndOrder) {
  const Graph g = every_kind();
  ASSERT_TRUE(verify_graph(g).empty());
  const json j = graph_to_json(g);
  const Graph back = read(json::parse(j.dump()));
  EXPECT_EQ(print_graph(back), print_graph(g));
  EXPECT_EQ(graph_to_json(back), j);
  const Node& x = back.nodes[4];
  EXPECT_EQ(x.kwargs[0].first, "scale");  // keyword order as written, not sorted
  EXPECT_EQ(x.kwargs[1].first, "enable_gqa");
  EXPECT_TRUE(std::holds_alternative<int64_t>(x.args[2]));
  ASSERT_TRUE(std::holds_alternative<double>(x.args[3]));
  EXPECT_TRUE(std::signbit(std::get<double>(x.args[3])));
  EXPECT_TRUE(std::isnan(std::get<double>(x.args[4])));
  EXPECT_TRUE(std::holds_alternative<SymExpr>(x.args[6]));
  EXPECT_TRUE(std::holds_alternative<SymShape>(x.args[7]));
  EXPECT_EQ(std::get<ValueRef>(x.args[0]), (ValueRef{3, 1}));
  EXPECT_EQ(x.outputs[0].qparams, (QParams{0.02, -3, -128, 127}));
  EXPECT_EQ(back.constants.at("_tensor_constant0").data[1], -std::numeric_limits<double>::infinity());
  ASSERT_EQ(x.subgraphs.size(), 1u);
  EXPECT_EQ(print_graph(*x.subgraphs[0]), print_graph(*g.nodes[4].subgraphs[0]));
}

TEST(GraphJson, ShapeEnvRoundTrip) {
  ShapeEnv env({{"s0", {4, 1, 16}}, {"u0", {std::nullopt, 0, 8}}});
  ShapeEnv back = shape_env_from_json(json::parse(shape_env_to_json(env).dump()), "env");
  ASSERT_EQ(back.symbols().size(), 2u);
  EXPECT_EQ(back.symbols().at("s0").hint, 4);
  EXPECT_FALSE(back.symbols().at("u0").hint.has_value());
  EXPECT_EQ(back.symbols().at("u0").max, 8);
}

TEST(GraphJson, HostileInputNamesTheField) {
  json j = tiny();
  j["nodes"][1]["extra"] = 1;
  EXPECT_EQ(error_of(j), "graph.nodes[1].extra: unknown field");
  j = tiny();
  j["nodes"][0]["args"][0] = {{"ref", "neg"}};
  EXPECT_EQ(error_of(j), "graph.nodes[0].args[0].ref: no node named \"neg\" before this point");
  j = tiny();
  j["nodes"][1]["args"][0]["output"] = 1;
  EXPECT_EQ(error_of(j), "graph.nodes[1].args[0].output: node \"q\" has 1 outputs, got output 1");
  j = tiny();
  j["nodes"][1]["args"] = json::array({json{{"tensor", 1}}});
  EXPECT_NE(error_of(j).find("graph.nodes[1].args[0]: unknown argument tag \"tensor\""), std::string::npos);
  j = tiny();
  j["nodes"][1]["args"] = json::array({"a bare string"});
  EXPECT_NE(error_of(j).find("graph.nodes[1].args[0]: expected null, a boolean, a number or a tagged object"),
            std::string::npos);
  j = tiny();
  j["nodes"][1]["name"] = "q";
  EXPECT_EQ(error_of(j), "graph.nodes[1].name: a second node named \"q\"");
  j = tiny();
  j["nodes"][1]["outputs"][0]["dtype"] = "f8";
  EXPECT_NE(error_of(j).find("graph.nodes[1].outputs[0].dtype: expected one of"), std::string::npos);
  j = tiny();
  j["nodes"][1]["outputs"][0]["shape"][1] = "s0 +";
  EXPECT_NE(error_of(j).find("graph.nodes[1].outputs[0].shape[1]: size expression 's0 +'"), std::string::npos);
  j = tiny();
  j["nodes"][1]["outputs"] = json::array();
  EXPECT_EQ(error_of(j), "graph.nodes[1].outputs: a node needs at least one output");
  j = tiny();
  j["nodes"][1]["args"] = json::array({json{{"float", "infinity"}}});
  EXPECT_EQ(error_of(j), "graph.nodes[1].args[0].float: expected \"inf\", \"-inf\" or \"nan\", got \"infinity\"");
  j = tiny();
  j["nodes"][1]["kwargs"] = json::array({json::array({"scale", 1.0, 2.0})});
  EXPECT_NE(error_of(j).find("graph.nodes[1].kwargs[0]: expected a [key, value] pair"), std::string::npos);
  j = tiny();
  j["nodes"][1]["kwargs"] = json::array({json::array({"scale", 1.0}), json::array({"scale", 2.0})});
  EXPECT_EQ(error_of(j), "graph.nodes[1].kwargs[1]: keyword \"scale\" a second time");
  j = tiny();
  j["nodes"][1]["args"][0] = {{"ref", "q"}, {"output", 18446744073709551615ull}};
  EXPECT_NE(error_of(j).find("graph.nodes[1].args[0].output: expected an integer in [-2^63, 2^63)"), std::string::npos);
  j = tiny();
  j["outputs"] = json::array({json{{"ref", "nobody"}}});
  EXPECT_EQ(error_of(j), "graph.outputs[0].ref: no node named \"nobody\" before this point");
  j = tiny();
  j["nodes"][1]["name"] = std::string(kMaxNameBytes + 1, 'x');
  EXPECT_NE(error_of(j).find("graph.nodes[1].name: a name of 1025 bytes, the limit is 1024"), std::string::npos);
  EXPECT_EQ(error_of(json::array()), "graph: expected an object, got a list");
}

TEST(GraphJson, LimitsComeBeforeAllocation) {
  json j = tiny();
  j["nodes"] = json::array();
  for (size_t i = 0; i <= kMaxGraphNodes; ++i) j["nodes"].push_back(nullptr);
  EXPECT_EQ(error_of(j), "graph.nodes: 100001 nodes, the limit is 100000");
  j = tiny();
  // 2^62 elements: refused on the shape, before the data list is looked at.
  j["constants"] = {{"c", {{"dtype", "f32"}, {"shape", json::array({int64_t{1} << 31, int64_t{1} << 31})}, {"data", json::array()}}}};
  EXPECT_EQ(error_of(j), "graph.constants.c.shape: more than 4194304 elements");
  j = tiny();
  j["constants"] = {{"c", {{"dtype", "f32"}, {"shape", json::array({2})}, {"data", json::array({1.0})}}}};
  EXPECT_EQ(error_of(j), "graph.constants.c.data: 1 elements for shape [2], which holds 2");
  j = tiny();
  json nested = tiny();
  for (int d = 0; d <= kMaxSubgraphDepth; ++d) {
    json outer = tiny();
    outer["nodes"][1]["subgraphs"] = json::array({nested});
    nested = outer;
  }
  EXPECT_NE(error_of(nested).find("subgraphs nested deeper than 8 levels"), std::string::npos);
}

TEST(GraphJson, ShapeEnvHostileInput) {
  auto err = [](const json& j) {
    try {
      shape_env_from_json(j, "env");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(err(json::parse(R"({"s0": {"hint": 2, "min": 4, "max": 3}})")), "env.s0.max: expected max >= min 4, got 3");
  EXPECT_EQ(err(json::parse(R"({"s0": {"hint": 2, "min": 1}})")), "env.s0.max: missing required field");
  EXPECT_NE(err(json::parse(R"({"s0 + 1": {"hint": 2, "min": 1, "max": 3}})")).find("env.s0 + 1: a symbol name"),
            std::string::npos);
  EXPECT_EQ(err(json::parse(R"({"s0": {"hint": "2", "min": 1, "max": 3}})")), "env.s0.hint: expected an integer, got a string");
}

}  // namespace
}  // namespace sdpa
