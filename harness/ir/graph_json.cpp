#include "harness/ir/graph_json.h"

#include <cmath>
#include <limits>

#include "harness/io/json_reader.h"

namespace sdpa {

using nlohmann::json;

json double_to_json(double d) {
  if (std::isnan(d)) return {{"float", "nan"}};
  if (std::isinf(d)) return {{"float", d < 0 ? "-inf" : "inf"}};
  return d;
}

json tensor_to_json(const Tensor& t) {
  json data = json::array();
  for (double x : t.data)
    data.push_back(std::isfinite(x) ? json(x) : json(std::isnan(x) ? "nan" : x < 0 ? "-inf" : "inf"));
  json j = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data", data}};
  if (t.qparams)
    j["qparams"] = {{"scale", t.qparams->scale},
                    {"zero_point", t.qparams->zero_point},
                    {"qmin", t.qparams->qmin},
                    {"qmax", t.qparams->qmax}};
  return j;
}

namespace {

std::string at(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

// ---- writing ----

json value_info_to_json(const ValueInfo& v) {
  json a = json::array();
  for (const auto& d : v.shape) a.push_back(sym_to_json(d));
  json j = {{"dtype", dtype_name(v.dtype)}, {"shape", a}};
  if (v.qparams)
    j["qparams"] = {{"scale", v.qparams->scale},
                    {"zero_point", v.qparams->zero_point},
                    {"qmin", v.qparams->qmin},
                    {"qmax", v.qparams->qmax}};
  return j;
}

json ref_to_json(const Graph& g, ValueRef v) {
  json j = {{"ref", g.nodes.at(static_cast<size_t>(v.node)).name}};
  if (v.output != 0) j["output"] = v.output;
  return j;
}

struct ArgWriter {
  const Graph& g;
  json operator()(const None&) const { return nullptr; }
  json operator()(ValueRef v) const { return ref_to_json(g, v); }
  json operator()(bool b) const { return b; }
  json operator()(int64_t i) const { return i; }
  json operator()(double d) const { return double_to_json(d); }
  json operator()(const std::string& s) const { return {{"str", s}}; }
  json operator()(const SymExpr& e) const { return {{"sym", sym_to_json(e)}}; }
  json operator()(const SymShape& s) const {
    json a = json::array();
    for (const auto& d : s) a.push_back(sym_to_json(d));
    return {{"shape", a}};
  }
  json operator()(DType t) const { return {{"dtype", dtype_name(t)}}; }
};

// ---- reading ----

std::string name_from_json(const json& v, const std::string& field) {
  if (!v.is_string()) throw InputError(field + ": expected a string, got " + json_kind(v));
  const std::string s = v.get<std::string>();
  if (s.empty()) throw InputError(field + ": expected a non-empty name");
  if (s.size() > kMaxNameBytes)
    throw InputError(field + ": a name of " + std::to_string(s.size()) + " bytes, the limit is " +
                     std::to_string(kMaxNameBytes));
  return s;
}

const json& list_from_json(const json& v, const std::string& field, size_t limit, const char* what) {
  if (!v.is_array()) throw InputError(field + ": expected a list of " + what + ", got " + json_kind(v));
  if (v.size() > limit)
    throw InputError(field + ": " + std::to_string(v.size()) + " " + what + ", the limit is " + std::to_string(limit));
  return v;
}

DType dtype_from_json(const json& v, const std::string& field) {
  if (!v.is_string()) throw InputError(field + ": expected a dtype name, got " + json_kind(v));
  auto t = parse_dtype(v.get<std::string>());
  if (!t) throw InputError(field + ": expected one of f64, f32, f16, bf16, int8, int32, int64, bool, got \"" +
                           v.get<std::string>() + "\"");
  return *t;
}

SymShape shape_from_json(const json& v, const std::string& field) {
  list_from_json(v, field, kMaxNodeArgs, "sizes");
  SymShape s;
  for (size_t i = 0; i < v.size(); ++i) s.push_back(sym_from_json(v[i], at(field, i)));
  return s;
}

double finite_from_json(const json& v, const std::string& field) {
  if (!v.is_number()) throw InputError(field + ": expected a number, got " + json_kind(v));
  return v.get<double>();
}

double nonfinite_from_json(const json& v, const std::string& field) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  throw InputError(field + ": expected \"inf\", \"-inf\" or \"nan\", got " +
                   (v.is_string() ? "\"" + v.get<std::string>() + "\"" : json_kind(v)));
}

QParams qparams_from_json(const json& v, const std::string& field) {
  JsonObject o(v, field);
  QParams q;
  q.scale = o.number("scale");
  q.zero_point = o.integer("zero_point");
  q.qmin = o.integer("qmin");
  q.qmax = o.integer("qmax");
  o.reject_unknown();
  return q;
}

ValueInfo value_info_from_json(const json& v, const std::string& field) {
  JsonObject o(v, field);
  ValueInfo info;
  info.dtype = dtype_from_json(o.require("dtype"), o.field("dtype"));
  info.shape = shape_from_json(o.require("shape"), o.field("shape"));
  if (const json* q = o.find("qparams"); q && !q->is_null()) info.qparams = qparams_from_json(*q, o.field("qparams"));
  o.reject_unknown();
  return info;
}

Tensor tensor_from_json(const json& v, const std::string& field) {
  JsonObject o(v, field);
  Tensor t;
  t.dtype = dtype_from_json(o.require("dtype"), o.field("dtype"));
  const json& shape = list_from_json(o.require("shape"), o.field("shape"), kMaxNodeArgs, "sizes");
  int64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = json_int64(shape[i], at(o.field("shape"), i));
    if (d < 0) throw InputError(at(o.field("shape"), i) + ": expected a size >= 0, got " + std::to_string(d));
    if (d > 0 && numel > kMaxConstantElements / d)
      throw InputError(o.field("shape") + ": more than " + std::to_string(kMaxConstantElements) + " elements");
    numel *= d;
    t.shape.push_back(d);
  }
  const json& data = o.require("data");
  if (!data.is_array()) throw InputError(o.field("data") + ": expected a list of numbers, got " + json_kind(data));
  if (static_cast<int64_t>(data.size()) != numel)
    throw InputError(o.field("data") + ": " + std::to_string(data.size()) + " elements for shape " +
                     shape_str(t.shape) + ", which holds " + std::to_string(numel));
  t.data.reserve(static_cast<size_t>(numel));
  for (size_t i = 0; i < data.size(); ++i)
    t.data.push_back(data[i].is_string() ? nonfinite_from_json(data[i], at(o.field("data"), i))
                                         : finite_from_json(data[i], at(o.field("data"), i)));
  if (const json* q = o.find("qparams"); q && !q->is_null()) t.qparams = qparams_from_json(*q, o.field("qparams"));
  o.reject_unknown();
  return t;
}

// Reads one graph; `names` maps the names of the nodes read so far to their index.
class GraphReader {
 public:
  GraphReader(std::string path, int depth) : path_(std::move(path)), depth_(depth) {}

  Graph read(const json& j) {
    if (depth_ > kMaxSubgraphDepth)
      throw InputError(path_ + ": subgraphs nested deeper than " + std::to_string(kMaxSubgraphDepth) + " levels");
    JsonObject o(j, path_);
    const json& nodes = list_from_json(o.require("nodes"), o.field("nodes"), kMaxGraphNodes, "nodes");
    if (const json* c = o.find("constants")) read_constants(*c, o.field("constants"));
    for (size_t i = 0; i < nodes.size(); ++i) read_node(nodes[i], at(o.field("nodes"), i));
    const json& outputs = list_from_json(o.require("outputs"), o.field("outputs"), kMaxNodeArgs, "refs");
    for (size_t i = 0; i < outputs.size(); ++i) g_.outputs.push_back(read_ref(outputs[i], at(o.field("outputs"), i)));
    o.reject_unknown();
    return std::move(g_);
  }

 private:
  void read_constants(const json& v, const std::string& field) {
    if (!v.is_object()) throw InputError(field + ": expected an object, got " + json_kind(v));
    for (const auto& [name, body] : v.items()) {
      name_from_json(json(name), field);
      g_.constants[name] = tensor_from_json(body, field + "." + name);
    }
  }

  void read_node(const json& v, const std::string& field) {
    JsonObject o(v, field);
    Node n;
    n.name = name_from_json(o.require("name"), o.field("name"));
    if (names_.count(n.name)) o.fail("name", "a second node named \"" + n.name + "\"");
    n.op = name_from_json(o.require("op"), o.field("op"));
    const json& args = list_from_json(o.require("args"), o.field("args"), kMaxNodeArgs, "arguments");
    for (size_t i = 0; i < args.size(); ++i) n.args.push_back(read_arg(args[i], at(o.field("args"), i)));
    if (const json* kw = o.find("kwargs")) read_kwargs(*kw, o.field("kwargs"), n);
    const json& outs = list_from_json(o.require("outputs"), o.field("outputs"), kMaxNodeArgs, "outputs");
    if (outs.empty()) o.fail("outputs", "a node needs at least one output");
    for (size_t i = 0; i < outs.size(); ++i)
      n.outputs.push_back(value_info_from_json(outs[i], at(o.field("outputs"), i)));
    if (const json* subs = o.find("subgraphs")) {
      list_from_json(*subs, o.field("subgraphs"), kMaxNodeArgs, "graphs");
      for (size_t i = 0; i < subs->size(); ++i)
        n.subgraphs.push_back(
            std::make_shared<Graph>(GraphReader(at(o.field("subgraphs"), i), depth_ + 1).read((*subs)[i])));
    }
    o.reject_unknown();
    names_[n.name] = static_cast<int>(g_.nodes.size());
    g_.nodes.push_back(std::move(n));
  }

  void read_kwargs(const json& v, const std::string& field, Node& n) {
    list_from_json(v, field, kMaxNodeArgs, "[key, value] pairs");
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string f = at(field, i);
      if (!v[i].is_array() || v[i].size() != 2)
        throw InputError(f + ": expected a [key, value] pair, got " + json_kind(v[i]));
      std::string key = name_from_json(v[i][0], f + "[0]");
      if (n.kwarg(key)) throw InputError(f + ": keyword \"" + key + "\" a second time");
      n.kwargs.emplace_back(key, read_arg(v[i][1], f + "[1]"));
    }
  }

  ValueRef read_ref(const json& v, const std::string& field) {
    JsonObject o(v, field);
    const std::string name = name_from_json(o.require("ref"), o.field("ref"));
    auto it = names_.find(name);
    if (it == names_.end()) o.fail("ref", "no node named \"" + name + "\" before this point");
    ValueRef r{it->second, 0};
    if (o.find("output")) {
      const int64_t out = o.integer("output");
      const size_t count = g_.nodes[static_cast<size_t>(r.node)].outputs.size();
      if (out < 0 || out >= static_cast<int64_t>(count))
        o.fail("output", "node \"" + name + "\" has " + std::to_string(count) + " outputs, got output " +
                             std::to_string(out));
      r.output = static_cast<int>(out);
    }
    o.reject_unknown();
    return r;
  }

  Arg read_arg(const json& v, const std::string& field) {
    if (v.is_null()) return None{};
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer() || v.is_number_unsigned()) return json_int64(v, field);
    if (v.is_number_float()) return v.get<double>();
    if (!v.is_object() || v.size() == 0)
      throw InputError(field + ": expected null, a boolean, a number or a tagged object "
                               "({\"ref\"}, {\"float\"}, {\"str\"}, {\"sym\"}, {\"shape\"}, {\"dtype\"}), got " +
                       json_kind(v));
    if (v.contains("ref")) return read_ref(v, field);
    if (v.size() != 1)
      throw InputError(field + ": a tagged argument has one key, got " + std::to_string(v.size()));
    const std::string tag = v.begin().key();
    const json& body = v.begin().value();
    const std::string f = field + "." + tag;
    if (tag == "float") return nonfinite_from_json(body, f);
    if (tag == "str") {
      if (!body.is_string()) throw InputError(f + ": expected a string, got " + json_kind(body));
      return body.get<std::string>();
    }
    if (tag == "sym") return sym_from_json(body, f);
    if (tag == "shape") return shape_from_json(body, f);
    if (tag == "dtype") return dtype_from_json(body, f);
    throw InputError(field + ": unknown argument tag \"" + tag + "\" (expected ref, float, str, sym, shape or dtype)");
  }

  std::string path_;
  int depth_;
  Graph g_;
  std::map<std::string, int> names_;
};

}  // namespace

json sym_to_json(const SymExpr& e) {
  if (e.is_constant()) return e.constant();
  return e.str();
}

SymExpr sym_from_json(const json& v, const std::string& field) {
  if (v.is_number_integer() || v.is_number_unsigned()) return SymExpr(json_int64(v, field));
  if (v.is_string()) {
    try {
      return SymExpr::parse(v.get<std::string>());
    } catch (const std::exception& e) {
      throw InputError(field + ": " + e.what());
    }
  }
  throw InputError(field + ": expected an integer or a size expression, got " + json_kind(v));
}

json graph_to_json(const Graph& g) {
  json nodes = json::array();
  for (const Node& n : g.nodes) {
    json args = json::array();
    for (const auto& a : n.args) args.push_back(std::visit(ArgWriter{g}, a));
    json outputs = json::array();
    for (const auto& o : n.outputs) outputs.push_back(value_info_to_json(o));
    json node = {{"name", n.name}, {"op", n.op}, {"args", args}, {"outputs", outputs}};
    if (!n.kwargs.empty()) {
      json kw = json::array();
      for (const auto& [k, a] : n.kwargs) kw.push_back(json::array({k, std::visit(ArgWriter{g}, a)}));
      node["kwargs"] = kw;
    }
    if (!n.subgraphs.empty()) {
      json subs = json::array();
      for (const auto& s : n.subgraphs) subs.push_back(graph_to_json(*s));
      node["subgraphs"] = subs;
    }
    nodes.push_back(std::move(node));
  }
  json outputs = json::array();
  for (const auto& o : g.outputs) outputs.push_back(ref_to_json(g, o));
  json j = {{"nodes", nodes}, {"outputs", outputs}};
  if (!g.constants.empty()) {
    json c = json::object();
    for (const auto& [name, t] : g.constants) c[name] = tensor_to_json(t);
    j["constants"] = c;
  }
  return j;
}

Graph graph_from_json(const json& j, const std::string& path) { return GraphReader(path, 0).read(j); }

json shape_env_to_json(const ShapeEnv& env) {
  json o = json::object();
  for (const auto& [name, s] : env.symbols())
    o[name] = {{"hint", s.hint ? json(*s.hint) : json(nullptr)}, {"min", s.min}, {"max", s.max}};
  return o;
}

ShapeEnv shape_env_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path + ": expected an object, got " + json_kind(j));
  if (j.size() > kMaxNodeArgs)
    throw InputError(path + ": " + std::to_string(j.size()) + " symbols, the limit is " + std::to_string(kMaxNodeArgs));
  std::map<std::string, SymbolInfo> symbols;
  for (const auto& [name, body] : j.items()) {
    const std::string field = path + "." + name;
    SymExpr e;
    try {
      e = SymExpr::parse(name);
    } catch (const std::exception&) {
    }
    if (!e.is_symbol()) throw InputError(field + ": a symbol name is a letter or '_' then letters, digits, '_'");
    JsonObject o(body, field);
    SymbolInfo s;
    if (const json& hint = o.require("hint"); !hint.is_null()) s.hint = o.integer("hint");
    s.min = o.integer("min");
    s.max = o.integer("max");
    if (s.min > s.max) o.fail("max", "expected max >= min " + std::to_string(s.min) + ", got " + std::to_string(s.max));
    o.reject_unknown();
    symbols[name] = s;
  }
  return ShapeEnv(std::move(symbols));
}

}  // namespace sdpa
