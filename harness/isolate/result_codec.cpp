#include "harness/isolate/result_codec.h"

#include <stdexcept>

namespace sdpa {
namespace {

using nlohmann::json;

Verdict verdict_from(const json& j) {
  auto v = parse_verdict(j.get<std::string>());
  if (!v) throw std::runtime_error("worker reply: unknown verdict " + j.dump());
  return *v;
}

Check check_from(const json& j) {
  const std::string name = j.get<std::string>();
  for (int c = 0; c <= static_cast<int>(Check::identity); ++c)
    if (name == check_name(static_cast<Check>(c))) return static_cast<Check>(c);
  throw std::runtime_error("worker reply: unknown check " + name);
}

}  // namespace

json finding_to_exact_json(const Finding& f) {
  return {{"verdict", verdict_name(f.verdict)}, {"check", check_name(f.check)},
          {"kernel_set", f.kernel_set},         {"detail", f.detail},
          {"error", f.error},                   {"bound", f.bound},
          {"error_ulps", f.error_ulps},         {"first_node", f.first_node},
          {"index", f.index},                   {"run", f.run},
          {"sizes", f.sizes},                   {"bound_inputs", f.bound_inputs},
          {"violated_assumptions", f.violated_assumptions},
          {"failure_class", f.failure_class}};
}

Finding finding_from_exact_json(const json& j) {
  Finding f;
  f.verdict = verdict_from(j.at("verdict"));
  f.check = check_from(j.at("check"));
  f.kernel_set = j.at("kernel_set").get<std::string>();
  f.detail = j.at("detail").get<std::string>();
  f.error = j.at("error").get<double>();
  f.bound = j.at("bound").get<double>();
  f.error_ulps = j.at("error_ulps").get<double>();
  f.first_node = j.at("first_node").get<std::string>();
  f.index = j.at("index").get<std::vector<int64_t>>();
  f.run = j.at("run").get<int>();
  f.sizes = j.at("sizes").get<Assignment>();
  f.bound_inputs = j.at("bound_inputs");
  f.violated_assumptions = j.at("violated_assumptions").get<std::vector<std::string>>();
  f.failure_class = j.at("failure_class").get<std::string>();
  return f;
}

namespace {

json decision_json(const Decision& d) {
  json rules = json::array();
  for (const auto& r : d.rules) rules.push_back({r.rule, r.passed, r.detail});
  return {{"node", d.node},   {"rewrite", d.rewrite}, {"deciding_rule", d.deciding_rule},
          {"rules", rules},   {"forced", d.forced},   {"pass", d.pass},
          {"sound_alone", d.sound_alone}, {"refuted_at", d.refuted_at}};
}

Decision decision_from(const json& j) {
  Decision d;
  d.node = j.at("node").get<std::string>();
  d.rewrite = j.at("rewrite").get<bool>();
  d.deciding_rule = j.at("deciding_rule").get<std::string>();
  for (const auto& r : j.at("rules"))
    d.rules.push_back({r.at(0).get<std::string>(), r.at(1).get<bool>(), r.at(2).get<std::string>()});
  d.forced = j.at("forced").get<bool>();
  d.pass = j.at("pass").get<std::string>();
  d.sound_alone = j.at("sound_alone").get<bool>();
  d.refuted_at = j.at("refuted_at").get<std::string>();
  return d;
}

}  // namespace

json result_to_json(const CaseResult& r) {
  json findings = json::array(), decisions = json::array(), accuracy = json::array();
  for (const auto& f : r.findings) findings.push_back(finding_to_exact_json(f));
  for (const auto& d : r.decisions) decisions.push_back(decision_json(d));
  for (const auto& a : r.accuracy)
    accuracy.push_back({a.kernel_set, dtype_name(a.dtype), a.ratio, a.model_ratio, a.error_lsb});
  return {{"verdict", verdict_name(r.verdict)},
          {"findings", findings},
          {"decisions", decisions},
          {"graph_before", r.graph_before},
          {"graph_after", r.graph_after},
          {"timing", {r.timing.generate, r.timing.oracle, r.timing.kernels, r.timing.compare}},
          {"accuracy", accuracy},
          {"counters", r.counters},
          {"oracle_cross_checked", r.oracle_cross_checked}};
}

CaseResult result_from_json(const json& j) {
  CaseResult r;
  r.verdict = verdict_from(j.at("verdict"));
  for (const auto& f : j.at("findings")) r.findings.push_back(finding_from_exact_json(f));
  for (const auto& d : j.at("decisions")) r.decisions.push_back(decision_from(d));
  r.graph_before = j.at("graph_before").get<std::string>();
  r.graph_after = j.at("graph_after").get<std::string>();
  const json& t = j.at("timing");
  r.timing = {t.at(0).get<double>(), t.at(1).get<double>(), t.at(2).get<double>(), t.at(3).get<double>()};
  for (const auto& a : j.at("accuracy")) {
    auto dtype = parse_dtype(a.at(1).get<std::string>());
    if (!dtype) throw std::runtime_error("worker reply: unknown dtype " + a.at(1).dump());
    r.accuracy.push_back({a.at(0).get<std::string>(), *dtype, a.at(2).get<double>(), a.at(3).get<double>(),
                          a.at(4).get<double>()});
  }
  r.counters = j.at("counters").get<std::map<std::string, int64_t>>();
  r.oracle_cross_checked = j.at("oracle_cross_checked").get<bool>();
  return r;
}

namespace {

// An enum as one byte, read back only below its number of values.
template <class E>
E enum_from(WireReader& in, size_t values, const char* what) {
  const uint8_t v = in.u8();
  if (v >= values) throw std::runtime_error(std::string("worker reply: unknown ") + what + " " + std::to_string(v));
  return static_cast<E>(v);
}

const size_t kVerdicts = all_verdicts().size();
constexpr size_t kDTypes = static_cast<size_t>(DType::b8) + 1;  // b8 is DType's last value

}  // namespace

std::string counted_result_to_bytes(const CaseResult& r) {
  WireWriter out;
  out.u8(static_cast<uint8_t>(r.verdict));
  for (double t : {r.timing.generate, r.timing.oracle, r.timing.kernels, r.timing.compare}) out.f64(t);
  out.u64(r.accuracy.size());
  for (const auto& a : r.accuracy) {
    out.str(a.kernel_set);
    out.u8(static_cast<uint8_t>(a.dtype));
    out.f64(a.ratio);
    out.f64(a.model_ratio);
    out.f64(a.error_lsb);
  }
  out.u64(r.counters.size());
  for (const auto& [name, n] : r.counters) {
    out.str(name);
    out.i64(n);
  }
  out.u64(r.decisions.size());
  for (const auto& d : r.decisions) {
    out.str(d.deciding_rule);
    out.boolean(d.rewrite);
    out.str(d.refuted_at);
  }
  out.boolean(r.oracle_cross_checked);
  return out.take();
}

CaseResult counted_result_from_bytes(std::string_view bytes) {
  WireReader in(bytes, "worker reply");
  CaseResult r;
  r.verdict = enum_from<Verdict>(in, kVerdicts, "verdict");
  r.timing = {in.f64(), in.f64(), in.f64(), in.f64()};
  r.accuracy.resize(in.count(8 + 1 + 3 * 8));
  for (auto& a : r.accuracy) {
    a.kernel_set = in.str();
    a.dtype = enum_from<DType>(in, kDTypes, "dtype");
    a.ratio = in.f64();
    a.model_ratio = in.f64();
    a.error_lsb = in.f64();
  }
  for (size_t n = in.count(8 + 8); n > 0; --n) {
    std::string name = in.str();
    r.counters[std::move(name)] = in.i64();
  }
  r.decisions.resize(in.count(8 + 1 + 8));
  for (auto& d : r.decisions) {
    d.deciding_rule = in.str();
    d.rewrite = in.boolean();
    d.refuted_at = in.str();
  }
  r.oracle_cross_checked = in.boolean();
  in.finish();
  return r;
}

json check_options_to_json(const CheckOptions& o) {
  return {{"passes", o.passes},
          {"completeness", o.completeness},
          {"keep_graphs", o.keep_graphs},
          {"prove_accepted", o.prove_accepted},
          {"oracle_sample", o.oracle_sample},
          {"reuse_exact_nodes", o.reuse_exact_nodes}};
}

CheckOptions check_options_from_json(const json& j) {
  CheckOptions o;
  o.passes = j.at("passes").get<bool>();
  o.completeness = j.at("completeness").get<bool>();
  o.keep_graphs = j.at("keep_graphs").get<bool>();
  o.prove_accepted = j.at("prove_accepted").get<bool>();
  o.oracle_sample = j.at("oracle_sample").get<int64_t>();
  o.reuse_exact_nodes = j.at("reuse_exact_nodes").get<bool>();
  return o;
}

void write_check_options(WireWriter& out, const CheckOptions& o) {
  for (bool b : {o.passes, o.completeness, o.keep_graphs, o.prove_accepted, o.reuse_exact_nodes}) out.boolean(b);
  out.i64(o.oracle_sample);
}

CheckOptions read_check_options(WireReader& in) {
  CheckOptions o;
  for (bool* b : {&o.passes, &o.completeness, &o.keep_graphs, &o.prove_accepted, &o.reuse_exact_nodes})
    *b = in.boolean();
  o.oracle_sample = in.i64();
  return o;
}

}  // namespace sdpa
