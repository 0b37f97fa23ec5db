#include "harness/case/case_json.h"

#include <cmath>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

using nlohmann::json;

json size_to_json(const SymExpr& e) {
  if (e.is_constant()) return e.constant();
  return e.str();
}

SymExpr size_from_json(const json& v, const std::string& field) {
  if (v.is_number()) return SymExpr(json_int64(v, field));
  if (v.is_string()) {
    try {
      return SymExpr::parse(v.get<std::string>());
    } catch (const std::invalid_argument& e) {
      throw InputError(field + ": " + e.what());
    }
  }
  throw InputError(field + ": expected an integer or a symbol name, got " + json_kind(v));
}

json shape_to_json(const SymShape& s) {
  json a = json::array();
  for (const auto& d : s) a.push_back(size_to_json(d));
  return a;
}

SymShape shape_from_json(const json& v, const std::string& field) {
  if (!v.is_array()) throw InputError(field + ": expected a list of sizes, got " + json_kind(v));
  SymShape s;
  for (size_t i = 0; i < v.size(); ++i)
    s.push_back(size_from_json(v[i], field + "[" + std::to_string(i) + "]"));
  return s;
}

template <typename T, typename Parse>
T enum_field(JsonObject& o, const std::string& key, Parse parse, const char* expected) {
  std::string s = o.str(key);
  auto v = parse(s);
  if (!v) o.fail(key, std::string("expected one of ") + expected + ", got \"" + s + "\"");
  return *v;
}

json mask_to_json(const MaskSpec& m) {
  json j = {{"dtype", dtype_name(m.dtype)}, {"shape", shape_to_json(m.shape)},
            {"pattern", pattern_name(m.pattern)}, {"param", m.param}, {"fill", fill_name(m.fill)}};
  // Only block-sparse has a block, so every other mask keeps its bytes.
  if (m.pattern == MaskPattern::block_sparse) {
    j["block_rows"] = m.block_rows;
    j["block_keys"] = m.block_keys;
  }
  return j;
}

MaskSpec mask_from_json(JsonObject o) {
  MaskSpec m;
  m.dtype = enum_field<DType>(o, "dtype", parse_dtype, "bool, f32, f16, bf16");
  if (m.dtype != DType::b8 && m.dtype != DType::f32 && m.dtype != DType::f16 &&
      m.dtype != DType::bf16)
    o.fail("dtype", std::string("expected one of bool, f32, f16, bf16, got \"") +
                        dtype_name(m.dtype) + "\"");
  m.shape = shape_from_json(o.require("shape"), o.field("shape"));
  m.pattern = enum_field<MaskPattern>(
      o, "pattern", parse_pattern,
      "random, causal, window, padding, full-row, keep-all, left-padding, per-batch-padding, block-sparse");
  if (o.find("param")) m.param = o.number("param");
  if (o.find("fill")) m.fill = enum_field<MaskFill>(o, "fill", parse_fill, "-inf, min, -1e4");
  const bool blocks = m.pattern == MaskPattern::block_sparse;
  for (const char* key : {"block_rows", "block_keys"}) {
    if (!blocks) {
      if (o.find(key)) o.fail(key, "only a block-sparse mask has blocks");
      continue;
    }
    (std::string(key) == "block_rows" ? m.block_rows : m.block_keys) = o.integer(key);
  }
  o.reject_unknown();
  return m;
}

json symbols_to_json(const std::map<std::string, SymbolInfo>& symbols) {
  json o = json::object();
  for (const auto& [name, s] : symbols)
    o[name] = {{"hint", s.hint ? json(*s.hint) : json(nullptr)}, {"min", s.min}, {"max", s.max}};
  return o;
}

std::map<std::string, SymbolInfo> symbols_from_json(const json& v, const std::string& field) {
  if (!v.is_object()) throw InputError(field + ": expected an object, got " + json_kind(v));
  std::map<std::string, SymbolInfo> out;
  for (const auto& [name, body] : v.items()) {
    JsonObject o(body, field + "." + name);
    SymbolInfo s;
    const json& hint = o.require("hint");
    if (!hint.is_null()) s.hint = o.integer("hint");
    s.min = o.integer("min");
    s.max = o.integer("max");
    o.reject_unknown();
    out[name] = s;
  }
  return out;
}

std::vector<Assignment> runtime_from_json(const json& v, const std::string& field) {
  if (!v.is_array()) throw InputError(field + ": expected a list of objects, got " + json_kind(v));
  std::vector<Assignment> out;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string f = field + "[" + std::to_string(i) + "]";
    if (!v[i].is_object()) throw InputError(f + ": expected an object, got " + json_kind(v[i]));
    Assignment a;
    for (const auto& [name, size] : v[i].items()) {
      a[name] = json_int64(size, f + "." + name);
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace

json case_to_json(const Case& c) {
  json j;
  j["dtype"] = dtype_name(c.dtype);
  j["layout"] = layout_name(c.layout);
  j["batch"] = shape_to_json(c.batch);
  j["q_heads"] = c.q_heads;
  j["kv_heads"] = c.kv_heads;
  j["q_len"] = size_to_json(c.q_len);
  j["kv_len"] = size_to_json(c.kv_len);
  j["head_dim"] = c.head_dim;
  j["value_dim"] = c.value_dim;
  j["enable_gqa"] = c.enable_gqa;
  j["is_causal"] = c.is_causal;
  // Optional fields are written only when they differ from their default,
  // so a file written before they existed keeps its bytes and meaning.
  if (c.causal_alignment != CausalAlignment::top_left)
    j["causal_alignment"] = alignment_name(c.causal_alignment);
  j["dropout_p"] = c.dropout_p;
  j["scale"] = c.scale ? json(*c.scale) : json(nullptr);
  j["start_pos"] = size_to_json(c.start_pos);
  j["mask"] = c.mask ? mask_to_json(*c.mask) : json(nullptr);
  j["symbols"] = symbols_to_json(c.symbols);
  j["runtime"] = json::array();
  for (const auto& a : c.runtime) j["runtime"].push_back(json(a));
  j["data"] = {{"seed", c.data.seed},
               {"distribution", distribution_name(c.data.distribution)},
               {"magnitude", c.data.magnitude}};
  if (const auto& sp = c.data.special)
    j["data"]["special"] = {{"value", special_value_name(sp->value)},
                            {"tensor", sp->tensor},
                            {"place", special_place_name(sp->place)},
                            {"count", sp->count}};
  if (!c.variant.empty()) j["variant"] = c.variant;
  return j;
}

Case case_from_json(const json& j, const std::string& path) {
  JsonObject o(j, path);
  Case c;
  c.dtype = enum_field<DType>(o, "dtype", parse_dtype, "f32, f16, bf16, f64, int8");
  if (!is_floating(c.dtype) && c.dtype != DType::i8)
    o.fail("dtype", std::string("expected one of f32, f16, bf16, f64, int8, got \"") +
                        dtype_name(c.dtype) + "\"");
  c.layout = enum_field<Layout>(o, "layout", parse_layout, "bhsd, bshd");
  c.batch = shape_from_json(o.require("batch"), o.field("batch"));
  c.q_heads = o.integer("q_heads");
  c.kv_heads = o.integer("kv_heads");
  c.q_len = size_from_json(o.require("q_len"), o.field("q_len"));
  c.kv_len = size_from_json(o.require("kv_len"), o.field("kv_len"));
  c.head_dim = o.integer("head_dim");
  c.value_dim = o.integer("value_dim");
  c.enable_gqa = o.boolean("enable_gqa");
  c.is_causal = o.boolean("is_causal");
  if (o.find("causal_alignment"))
    c.causal_alignment =
        enum_field<CausalAlignment>(o, "causal_alignment", parse_alignment, "top-left, bottom-right, start-pos");
  c.dropout_p = o.number("dropout_p");
  if (const json* s = o.find("scale"); s && !s->is_null()) c.scale = o.number("scale");
  if (const json* s = o.find("start_pos")) c.start_pos = size_from_json(*s, o.field("start_pos"));
  if (const json* m = o.find("mask"); m && !m->is_null())
    c.mask = mask_from_json(JsonObject(*m, o.field("mask")));
  if (const json* s = o.find("symbols")) c.symbols = symbols_from_json(*s, o.field("symbols"));
  if (const json* r = o.find("runtime"); r && !r->is_null())
    c.runtime = runtime_from_json(*r, o.field("runtime"));
  JsonObject d = o.object("data");
  const json& seed = d.require("seed");
  if (!seed.is_number_unsigned() || seed.get<uint64_t>() >= (uint64_t{1} << 53))
    d.fail("seed", "expected an integer in [0, 2^53), got " + seed.dump());
  c.data.seed = seed.get<uint64_t>();
  c.data.distribution = enum_field<Distribution>(d, "distribution", parse_distribution,
                                                 "normal, uniform, integers, large");
  c.data.magnitude = d.number("magnitude");
  if (const json* sp = d.find("special"); sp && !sp->is_null()) {
    JsonObject so(*sp, d.field("special"));
    SpecialData s;
    s.value = enum_field<SpecialValue>(so, "value", parse_special_value, "nan, +inf, -inf, overflow, huge");
    s.tensor = so.str("tensor");
    s.place = enum_field<SpecialPlace>(so, "place", parse_special_place, "elements, row");
    s.count = so.integer("count");
    so.reject_unknown();
    c.data.special = s;
  }
  d.reject_unknown();
  if (o.find("variant")) c.variant = o.str("variant");
  o.reject_unknown();
  return c;
}

}  // namespace sdpa
