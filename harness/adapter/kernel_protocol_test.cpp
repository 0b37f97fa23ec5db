#include "harness/adapter/kernel_protocol.h"

#include <cmath>

#include <gtest/gtest.h>

namespace sdpa {
namespace {

using nlohmann::json;

// A node computing one f32 [2, s0] output (with qparams, to see them
// carried) from a tensor and every other kind of argument, at s0 = 3.
struct Call {
  Graph g;
  RunContext ctx{{{"s0", 3}}, 0xfedcba9876543210ULL};
  Tensor x{DType::f32, {2, 2}};
  std::unique_ptr<KernelArgs> args;

  Call() {
    SymShape s{SymExpr(2), SymExpr::symbol("s0")};
    ValueRef in = g.placeholder("x", {DType::f32, {SymExpr(2), SymExpr(2)}});
    ValueInfo out{DType::f32, s};
    out.qparams = QParams{0.5, 1, -128, 127};
    g.outputs = {g.call("aten.some_op.default", {in}, {}, {out}, "some")};
    x.data = {-0.0, INFINITY, NAN, static_cast<double>(0.1f)};
    args = std::make_unique<KernelArgs>(g.nodes[1], ctx);
    args->args = {&x, None{}, true, int64_t{-7}, 0.1, -INFINITY, std::string("mean"), std::vector<int64_t>{2, 3},
                  DType::bf16};
    args->kwargs = {{"scale", 0.125}, {"dtype", DType::f32}};
  }
};

std::string result(const json& outputs, int64_t id = 4) {
  return json{{"type", "result"}, {"id", id}, {"outputs", outputs}}.dump();
}

json f32_out(json data, json shape = {2, 3}, const char* dtype = "f32") {
  return json::array({{{"dtype", dtype}, {"shape", shape}, {"data", data}}});
}

// The verdict and message reading `line` as the reply to request 4 throws.
std::pair<Verdict, std::string> fault_of(const std::string& line) {
  Call c;
  try {
    read_kernel_reply(line, 4, *c.args);
  } catch (const KernelFault& e) {
    return {e.verdict, e.what()};
  }
  return {Verdict::pass, "no fault"};
}

TEST(KernelProtocol, TheRequestCarriesResolvedArgumentsWithExactDoubles) {
  Call c;
  const json r = kernel_request(4, *c.args);
  EXPECT_EQ(r["type"], "kernel");
  EXPECT_EQ(r["id"], 4);
  EXPECT_EQ(r["node"], "some");
  EXPECT_EQ(r["op"], "aten.some_op.default");
  EXPECT_EQ(r["data_seed"].get<uint64_t>(), 0xfedcba9876543210ULL);
  EXPECT_EQ(r["outputs"], json::parse(R"([{"dtype":"f32","shape":[2,3]}])"));
  const json& a = r["args"];
  ASSERT_EQ(a.size(), 9u);
  EXPECT_EQ(a[0]["tensor"]["dtype"], "f32");
  EXPECT_EQ(a[0]["tensor"]["shape"], json::parse("[2,2]"));
  const json& data = a[0]["tensor"]["data"];
  EXPECT_TRUE(std::signbit(data[0].get<double>()));
  EXPECT_EQ(data[1], "inf");
  EXPECT_EQ(data[2], "nan");
  EXPECT_EQ(data[3].get<double>(), static_cast<double>(0.1f));
  EXPECT_TRUE(a[1].is_null());
  EXPECT_EQ(a[2], true);
  EXPECT_TRUE(a[3].is_number_integer());
  EXPECT_EQ(a[3], -7);
  EXPECT_TRUE(a[4].is_number_float());
  EXPECT_EQ(a[5], json::parse(R"({"float":"-inf"})"));
  EXPECT_EQ(a[6], json::parse(R"({"str":"mean"})"));
  EXPECT_EQ(a[7], json::parse(R"({"shape":[2,3]})"));
  EXPECT_EQ(a[8], json::parse(R"({"dtype":"bf16"})"));
  EXPECT_EQ(r["kwargs"], json::parse(R"([["scale",0.125],["dtype",{"dtype":"f32"}]])"));
  // Written and read back, every double is the same double.
  const json back = json::parse(r.dump());
  EXPECT_EQ(back["args"][4].get<double>(), 0.1);
  EXPECT_EQ(back["args"][0]["tensor"]["data"][3].get<double>(), static_cast<double>(0.1f));
}

TEST(KernelProtocol, ReadsOutputsWithTheNodesQparams) {
  Call c;
  KernelReply r = read_kernel_reply(result(f32_out({1.5, "-inf", "nan", -0.0, 3, 0.25})), 4, *c.args);
  ASSERT_EQ(r.outputs.size(), 1u);
  const Tensor& t = r.outputs[0];
  EXPECT_EQ(t.dtype, DType::f32);
  EXPECT_EQ(t.shape, (Shape{2, 3}));
  EXPECT_EQ(t.data[0], 1.5);
  EXPECT_EQ(t.data[1], -INFINITY);
  EXPECT_TRUE(std::isnan(t.data[2]));
  EXPECT_TRUE(std::signbit(t.data[3]));
  ASSERT_TRUE(t.qparams.has_value());
  EXPECT_EQ(t.qparams->scale, 0.5);
  EXPECT_FALSE(r.refused.has_value());
}

TEST(KernelProtocol, RefusalsAreKernelErrorKinds) {
  Call c;
  for (auto [name, kind] : {std::pair{"recoverable", KernelError::Kind::recoverable},
                            std::pair{"unsupported", KernelError::Kind::unsupported},
                            std::pair{"fatal", KernelError::Kind::fatal}}) {
    KernelReply r = read_kernel_reply(
        json{{"type", "error"}, {"id", 4}, {"error", name}, {"message", "no"}}.dump(), 4, *c.args);
    ASSERT_TRUE(r.refused.has_value()) << name;
    EXPECT_EQ(*r.refused, kind);
    EXPECT_EQ(r.message, "no");
  }
  KernelReply r = read_kernel_reply(R"({"type":"error","id":4,"error":"raised","message":"ValueError: x"})", 4,
                                    *c.args);
  EXPECT_TRUE(r.raised);
  EXPECT_FALSE(r.refused.has_value());
}

TEST(KernelProtocol, EveryWrongReplyIsAnUnexpectedErrorNamingWhatWasWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "answered a malformed reply: reply: not valid JSON"},
      {"[1]", "reply: expected a JSON object, got a list"},
      {result(f32_out({1, 2, 3, 4, 5, 6}), 5), "reply.id: the reply to request 4 names request 5"},
      {R"({"type":"run","id":4})", "reply.type: expected \"result\" or \"error\", got \"run\""},
      {R"({"type":"result","id":4})", "reply.outputs"},
      {R"({"type":"error","id":4,"error":"oops","message":""})", "reply.error: expected \"recoverable\""},
      {json{{"type", "result"}, {"id", 4}, {"outputs", f32_out({1, 2, 3, 4, 5, 6})}, {"extra", 1}}.dump(),
       "extra"},
      {result(json::array()), "answered 0 outputs for %some (aten.some_op.default), which declares 1"},
      {result(f32_out({1, 2, 3, 4, 5, 6}, {3, 2})),
       "answered output 0 f32[3, 2] for %some (aten.some_op.default), which declares f32[2, 3]"},
      {result(f32_out({1, 2, 3, 4, 5, 6}, {2, 3}, "f64")), "answered output 0 f64[2, 3] for %some"},
      {result(f32_out({1, 2, 3, 4, 5, 6}, {2, 3, 1})), "answered output 0 f32[2, 3, 1]"},
      {result(f32_out({1, 2, 3})), "reply.outputs[0].data: 3 elements for shape [2, 3], which holds 6"},
      {result(f32_out({1, 2, 3, 4, 5, 0.1})),
       "answered output 0 data[5] = 0.1 for %some (aten.some_op.default), which is not a f32 value"},
      {result(f32_out({1, 2, 3, 4, 5, "big"})), "reply.outputs[0].data[5]: expected a number"},
      {result(f32_out({1, 2, 3, 4, 5, true})), "reply.outputs[0].data[5]: expected a number"},
      {result(f32_out({1, 2, 3, 4, 5, 6}, {2, "3"})), "reply.outputs[0].shape[1]"},
  };
  for (const auto& [line, words] : cases) {
    auto [verdict, message] = fault_of(line);
    EXPECT_EQ(verdict, Verdict::unexpected_error) << line;
    EXPECT_NE(message.find(words), std::string::npos) << line << "\n" << message;
  }
}

TEST(KernelProtocol, AnIntegerOrBoolOutputHoldsIntegersInRange) {
  Graph g;
  ValueRef in = g.placeholder("x", {DType::f32, {SymExpr(2)}});
  g.outputs = {g.call("aten.ne.Scalar", {in}, {}, {{DType::b8, {SymExpr(2)}}})};
  RunContext ctx;
  KernelArgs a(g.nodes[1], ctx);
  auto out = [](json data) { return result(f32_out(data, {2}, "bool")); };
  EXPECT_EQ(read_kernel_reply(out({0, 1}), 4, a).outputs[0].data, (std::vector<double>{0, 1}));
  for (json bad : {json{0, 2}, json{0, 0.5}, json{0, "nan"}}) {
    try {
      read_kernel_reply(out(bad), 4, a);
      ADD_FAILURE() << bad.dump() << " was read";
    } catch (const KernelFault& e) {
      EXPECT_NE(std::string(e.what()).find("which is not a bool value"), std::string::npos) << e.what();
    }
  }
}

json hello(json kernels = json::object()) {
  json h = {{"type", "hello"},
            {"version", 1},
            {"name", "k.py"},
            {"ops", {"aten.matmul.default", "aten._softmax.default"}},
            {"dtypes", {"f32", "f64"}},
            {"numerics",
             {{"f32", {{"storage", "f32"}, {"accumulation", "f32"}, {"split_scale", true}}},
              {"f64", {{"storage", "f64"}, {"accumulation", "f64"}, {"probabilities", "f32"}}}}}};
  for (auto& [k, v] : kernels.items()) h[k] = v;
  return h;
}

std::string hello_fault(const json& h) {
  try {
    read_kernel_hello(h.dump());
  } catch (const KernelFault& e) {
    EXPECT_EQ(e.verdict, Verdict::unexpected_error);
    return e.what();
  }
  return "no fault";
}

TEST(KernelProtocol, ReadsTheDeclarationOfTheHello) {
  KernelDeclaration d = read_kernel_hello(hello().dump());
  EXPECT_EQ(d.name, "k.py");
  EXPECT_EQ(d.ops, (std::vector<std::string>{"aten.matmul.default", "aten._softmax.default"}));
  EXPECT_EQ(d.dtypes, (std::vector<DType>{DType::f32, DType::f64}));
  const FloatNumerics& f = d.numerics.at(DType::f32);
  EXPECT_EQ(f.accumulation, DType::f32);
  EXPECT_TRUE(f.split_scale);
  const FloatNumerics& g = d.numerics.at(DType::f64);
  EXPECT_EQ(g.operands, DType::f64);  // a stage left out is stored in the storage dtype
  EXPECT_EQ(g.probabilities, DType::f32);
  EXPECT_FALSE(g.split_scale);
  EXPECT_TRUE(same_declaration(d, read_kernel_hello(hello({{"name", "other"}}).dump())));
  json h = hello();
  h["numerics"]["f64"]["split_scale"] = true;
  EXPECT_FALSE(same_declaration(d, read_kernel_hello(h.dump())));
  // A dtype claimed without numerics has none (its accuracy is not judged).
  h["numerics"].erase("f64");
  KernelDeclaration e = read_kernel_hello(h.dump());
  EXPECT_EQ(e.numerics.count(DType::f64), 0u);
  EXPECT_FALSE(same_declaration(d, e));
}

TEST(KernelProtocol, AWrongHelloNamesItsField) {
  EXPECT_NE(hello_fault(hello({{"version", 2}})).find("speaks protocol version 2; this sdpacheck speaks version 1"),
            std::string::npos);
  json no_ops = hello();
  no_ops.erase("ops");
  EXPECT_NE(hello_fault(no_ops).find("hello.ops"), std::string::npos) << hello_fault(no_ops);
  EXPECT_NE(hello_fault(hello({{"ops", json::array()}})).find("hello.ops: expected at least one op"),
            std::string::npos);
  EXPECT_NE(hello_fault(hello({{"ops", {"a", "a"}}})).find("hello.ops[1]: a is named twice"), std::string::npos);
  EXPECT_NE(hello_fault(hello({{"dtypes", {"f32", "f128"}}})).find("hello.dtypes[1]: expected one of"),
            std::string::npos);
  EXPECT_NE(hello_fault(hello({{"dtypes", {"f32"}}}))
                .find("hello.numerics.f64: unknown field (numerics are declared for the dtypes claimed)"),
            std::string::npos)
      << hello_fault(hello({{"dtypes", {"f32"}}}));
  json bad = hello();
  bad["numerics"]["f32"]["storage"] = "bf16";
  EXPECT_NE(hello_fault(bad).find("hello.numerics.f32.storage: expected f32 (the case dtype it declares), got bf16"),
            std::string::npos)
      << hello_fault(bad);
  bad = hello();
  bad["numerics"]["f32"]["accumulation"] = "int32";
  EXPECT_NE(hello_fault(bad).find("hello.numerics.f32.accumulation: expected a floating dtype"), std::string::npos);
  bad = hello();
  bad["numerics"]["f32"]["rounding"] = "up";
  EXPECT_NE(hello_fault(bad).find("rounding"), std::string::npos);
  EXPECT_NE(hello_fault(hello({{"graph", 1}})).find("graph"), std::string::npos);  // a pass adapter's field
  json many = hello();
  many["ops"] = json::array();
  for (size_t i = 0; i <= kMaxAdapterOps; ++i) many["ops"].push_back("op" + std::to_string(i));
  EXPECT_NE(hello_fault(many).find("4097 op names, the limit is 4096"), std::string::npos) << hello_fault(many);
}

}  // namespace
}  // namespace sdpa
