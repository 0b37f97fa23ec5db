#include "harness/adapter/kernel_protocol.h"

#include <cmath>
#include <set>

#include "harness/adapter/adapter_protocol.h"
#include "harness/ir/graph_json.h"

namespace sdpa {
namespace {

using nlohmann::json;

[[noreturn]] void malformed(const std::string& why) {
  throw KernelFault(Verdict::unexpected_error, "answered a malformed reply: " + why);
}

json parse_line(const std::string& line) {
  try {
    json j = parse_json_text(line, "reply");
    if (!j.is_object()) malformed("reply: expected a JSON object, got " + json_kind(j));
    return j;
  } catch (const InputError& e) {
    malformed(e.what());
  }
}

std::string at(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

const json& list_of(JsonObject& o, const std::string& key, size_t limit, const char* what) {
  const json& v = o.require(key);
  if (!v.is_array()) o.fail(key, std::string("expected a list of ") + what + ", got " + json_kind(v));
  if (v.size() > limit)
    o.fail(key, std::to_string(v.size()) + " " + what + ", the limit is " + std::to_string(limit));
  return v;
}

DType dtype_of(const json& v, const std::string& field) {
  auto t = v.is_string() ? parse_dtype(v.get<std::string>()) : std::nullopt;
  if (!t)
    throw InputError(field + ": expected one of f64, f32, f16, bf16, int8, int32, int64, bool, got " +
                     (v.is_string() ? "\"" + v.get<std::string>() + "\"" : json_kind(v)));
  return *t;
}

DType floating_of(const json& v, const std::string& field) {
  DType t = dtype_of(v, field);
  if (!is_floating(t)) throw InputError(field + ": expected a floating dtype, got " + dtype_name(t));
  return t;
}

// {"storage", "accumulation", "operands"?, "scores"?, "probabilities"?, "split_scale"?}:
// the stages a declaration leaves out are stored in the storage dtype.
FloatNumerics numerics_of(const json& v, const std::string& field, DType dtype) {
  JsonObject o(v, field);
  FloatNumerics n;
  n.storage = floating_of(o.require("storage"), o.field("storage"));
  if (n.storage != dtype)
    o.fail("storage", std::string("expected ") + dtype_name(dtype) + " (the case dtype it declares), got " +
                          dtype_name(n.storage));
  n.accumulation = floating_of(o.require("accumulation"), o.field("accumulation"));
  auto stage = [&](const char* key) {
    const json* s = o.find(key);
    return s ? floating_of(*s, o.field(key)) : n.storage;
  };
  n.operands = stage("operands");
  n.scores = stage("scores");
  n.probabilities = stage("probabilities");
  n.split_scale = o.find("split_scale") ? o.boolean("split_scale") : false;
  o.reject_unknown();
  return n;
}

bool same_numerics(const FloatNumerics& a, const FloatNumerics& b) {
  return a.storage == b.storage && a.accumulation == b.accumulation && a.operands == b.operands &&
         a.scores == b.scores && a.probabilities == b.probabilities && a.split_scale == b.split_scale;
}

KernelDeclaration declaration_of(JsonObject& o) {
  KernelDeclaration d;
  d.name = o.find("name") ? o.str("name") : "";
  const json& ops = list_of(o, "ops", kMaxAdapterOps, "op names");
  std::set<std::string> seen;
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string field = at(o.field("ops"), i);
    if (!ops[i].is_string() || ops[i].get<std::string>().empty())
      throw InputError(field + ": expected an op name, got " + json_kind(ops[i]));
    const std::string op = ops[i].get<std::string>();
    if (op.size() > kMaxNameBytes) throw InputError(field + ": an op name over " + std::to_string(kMaxNameBytes) + " bytes");
    if (!seen.insert(op).second) throw InputError(field + ": " + op + " is named twice");
    d.ops.push_back(op);
  }
  if (d.ops.empty()) o.fail("ops", "expected at least one op");
  const json& dtypes = list_of(o, "dtypes", 8, "dtype names");
  for (size_t i = 0; i < dtypes.size(); ++i) {
    DType t = dtype_of(dtypes[i], at(o.field("dtypes"), i));
    for (DType u : d.dtypes)
      if (u == t) throw InputError(at(o.field("dtypes"), i) + ": " + dtype_name(t) + " is named twice");
    d.dtypes.push_back(t);
  }
  if (d.dtypes.empty()) o.fail("dtypes", "expected at least one dtype");
  JsonObject numerics = o.object("numerics");
  for (DType t : d.dtypes)
    if (const json* n = numerics.find(dtype_name(t))) d.numerics[t] = numerics_of(*n, numerics.field(dtype_name(t)), t);
  try {
    numerics.reject_unknown();
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + " (numerics are declared for the dtypes claimed)");
  }
  return d;
}

// ---- the request ----

json value_to_json(const Value& v) {
  struct W {
    json operator()(const None&) const { return nullptr; }
    json operator()(const Tensor* t) const { return {{"tensor", tensor_to_json(*t)}}; }
    json operator()(bool b) const { return b; }
    json operator()(int64_t i) const { return i; }
    json operator()(double d) const { return double_to_json(d); }
    json operator()(const std::string& s) const { return {{"str", s}}; }
    json operator()(const std::vector<int64_t>& s) const { return {{"shape", s}}; }
    json operator()(DType t) const { return {{"dtype", dtype_name(t)}}; }
  };
  return std::visit(W{}, v);
}

// ---- the reply ----

// Whether x is a value of dtype t: floats hold it exactly (or it is NaN),
// integers and bool hold it as an integer in range.
bool holds(DType t, double x) {
  if (std::isnan(x)) return is_floating(t);
  if (!is_floating(t) && x != std::trunc(x)) return false;
  return round_to(t, x) == x;
}

double element_of(const json& v, const std::string& field) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
  }
  throw InputError(field + ": expected a number, \"inf\", \"-inf\" or \"nan\", got " +
                   (v.is_string() ? "\"" + v.get<std::string>() + "\"" : json_kind(v)));
}

std::string declared(const KernelArgs& a, size_t i) {
  return std::string(dtype_name(a.out_dtype(i))) + shape_str(a.out_shape(i));
}

// Output i as the node declares it: dtype and shape compared before the
// data is read, so nothing larger than the declared tensor is allocated.
Tensor output_of(const json& v, const KernelArgs& a, size_t i) {
  const std::string field = at("reply.outputs", i);
  JsonObject o(v, field);
  const DType want_dtype = a.out_dtype(i);
  const Shape want = a.out_shape(i);
  const std::string node = "%" + a.node.name + " (" + a.node.op + ")";
  const DType got_dtype = dtype_of(o.require("dtype"), o.field("dtype"));
  const json& shape = o.require("shape");
  if (!shape.is_array()) o.fail("shape", "expected a list of sizes, got " + json_kind(shape));
  bool same = got_dtype == want_dtype && shape.size() == want.size();
  Shape got;
  for (size_t d = 0; d < shape.size() && d < kMaxNodeArgs; ++d) {
    const int64_t s = json_int64(shape[d], at(o.field("shape"), d));
    got.push_back(s);
    same = same && s == want[d];
  }
  if (!same)
    throw KernelFault(Verdict::unexpected_error,
                      "answered output " + std::to_string(i) + " " + dtype_name(got_dtype) + shape_str(got) + " for " + node +
                          ", which declares " + declared(a, i));
  Tensor t(want_dtype, want);
  t.qparams = a.node.outputs[i].qparams;
  const json& data = o.require("data");
  if (!data.is_array()) o.fail("data", "expected a list of numbers, got " + json_kind(data));
  if (static_cast<int64_t>(data.size()) != t.numel())
    o.fail("data", std::to_string(data.size()) + " elements for shape " + shape_str(want) + ", which holds " +
                       std::to_string(t.numel()));
  for (size_t k = 0; k < data.size(); ++k) {
    const double x = element_of(data[k], at(o.field("data"), k));
    if (!holds(want_dtype, x))
      throw KernelFault(Verdict::unexpected_error, "answered " + at("output " + std::to_string(i) + " data", k) + " = " + json(x).dump() +
                                                       " for " + node + ", which is not a " +
                                                       dtype_name(want_dtype) + " value");
    t.data[k] = x;
  }
  o.reject_unknown();
  return t;
}

}  // namespace

bool same_declaration(const KernelDeclaration& a, const KernelDeclaration& b) {
  if (a.ops != b.ops || a.dtypes != b.dtypes || a.numerics.size() != b.numerics.size()) return false;
  for (const auto& [t, n] : a.numerics) {
    auto it = b.numerics.find(t);
    if (it == b.numerics.end() || !same_numerics(n, it->second)) return false;
  }
  return true;
}

json kernel_hello(const std::string& kernel_set, const std::string& target, const Options& options) {
  return {{"type", "hello"},        {"protocol", "sdpacheck-adapter"}, {"version", kAdapterProtocolVersion},
          {"kind", "kernel"},       {"kernel_set", kernel_set},        {"target", target},
          {"options", options}};
}

KernelDeclaration read_kernel_hello(const std::string& line) {
  json j = parse_line(line);
  try {
    JsonObject o(j, "hello");
    if (std::string mismatch = hello_version_mismatch(o); !mismatch.empty())
      throw KernelFault(Verdict::unexpected_error, mismatch);
    KernelDeclaration d = declaration_of(o);
    o.reject_unknown();
    return d;
  } catch (const InputError& e) {
    malformed(e.what());
  }
}

json kernel_request(int64_t id, const KernelArgs& a) {
  json args = json::array(), kwargs = json::array(), outputs = json::array();
  for (const auto& v : a.args) args.push_back(value_to_json(v));
  for (const auto& [key, v] : a.kwargs) kwargs.push_back({key, value_to_json(v)});
  for (size_t i = 0; i < a.node.outputs.size(); ++i)
    outputs.push_back({{"dtype", dtype_name(a.out_dtype(i))}, {"shape", a.out_shape(i)}});
  return {{"type", "kernel"}, {"id", id},         {"node", a.node.name},       {"op", a.node.op},
          {"args", args},     {"kwargs", kwargs}, {"outputs", outputs},        {"data_seed", a.ctx.data_seed}};
}

KernelReply read_kernel_reply(const std::string& line, int64_t id, const KernelArgs& a) {
  json j = parse_line(line);
  KernelReply reply;
  try {
    JsonObject o(j, "reply");
    const std::string type = o.str("type");
    if (type != "result" && type != "error") o.fail("type", "expected \"result\" or \"error\", got \"" + type + "\"");
    if (const int64_t got = o.integer("id"); got != id)
      o.fail("id", "the reply to request " + std::to_string(id) + " names request " + std::to_string(got));
    if (type == "error") {
      const std::string kind = o.str("error");
      if (kind == "recoverable") reply.refused = KernelError::Kind::recoverable;
      else if (kind == "unsupported") reply.refused = KernelError::Kind::unsupported;
      else if (kind == "fatal") reply.refused = KernelError::Kind::fatal;
      else if (kind == "raised") reply.raised = true;
      else o.fail("error", "expected \"recoverable\", \"unsupported\", \"fatal\" or \"raised\", got \"" + kind + "\"");
      reply.message = o.str("message");
      o.reject_unknown();
      return reply;
    }
    const json& outputs = o.require("outputs");
    if (!outputs.is_array()) o.fail("outputs", "expected a list of tensors, got " + json_kind(outputs));
    if (outputs.size() != a.node.outputs.size())
      throw KernelFault(Verdict::unexpected_error,
                        "answered " + std::to_string(outputs.size()) + " outputs for %" + a.node.name + " (" +
                            a.node.op + "), which declares " + std::to_string(a.node.outputs.size()));
    for (size_t i = 0; i < outputs.size(); ++i) reply.outputs.push_back(output_of(outputs[i], a, i));
    o.reject_unknown();
  } catch (const InputError& e) {
    malformed(e.what());
  }
  return reply;
}

}  // namespace sdpa
