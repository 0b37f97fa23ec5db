#include "reports/campaign_stats.h"

#include <algorithm>
#include <cmath>

#include "harness/io/json_reader.h"
#include "harness/io/wire.h"

namespace sdpa {

int ratio_bucket(double ratio) {
  if (!(ratio > 1e-6)) return 0;  // also a NaN ratio, which compare_accuracy never gives
  if (std::isinf(ratio)) return kRatioBuckets - 1;
  // ceil(log10): the upper edge of (10^(e-1), 10^e] belongs to its bucket.
  int e = static_cast<int>(std::ceil(std::log10(ratio)));
  // log10 rounds: put a ratio next to a power of ten on its side of the edge.
  if (std::pow(10.0, e - 1) >= ratio) --e;
  if (std::pow(10.0, e) < ratio) ++e;
  return std::min(std::max(e + 6, 1), kRatioBuckets - 1);
}

std::string ratio_edge_label(int bucket) { return "1e" + std::to_string(bucket - 6); }

int lsb_bucket(double lsb) {
  if (!(lsb > 0.5)) return 0;
  double edge = 1.0;
  for (int b = 1; b < kLsbBuckets - 1; ++b, edge *= 2)
    if (lsb <= edge) return b;
  return kLsbBuckets - 1;
}

std::string lsb_edge_label(int bucket) {
  if (bucket == 0) return "0.5";
  return std::to_string(int64_t{1} << (bucket - 1));
}

int length_bucket(int64_t len) {
  if (len <= 0) return -1;
  int k = 0;
  while (len >>= 1) ++k;
  return k;
}

std::string length_bucket_label(int bucket) {
  if (bucket < 0) return "0";
  int64_t lo = int64_t{1} << bucket, hi = (lo << 1) - 1;
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

std::string head_layout(const Case& c) {
  if (c.q_heads == c.kv_heads) return "MHA";
  return c.kv_heads == 1 ? "MQA" : "GQA";
}

std::vector<std::string> mask_kinds(const Case& c) {
  std::vector<std::string> out;
  if (c.is_causal) out.push_back("causal");
  if (c.mask) out.push_back(c.mask->dtype == DType::b8 ? "bool" : "additive");
  if (out.empty()) out.push_back("none");
  return out;
}

std::vector<std::string> data_kinds(const Case& c) {
  std::vector<std::string> out;
  const ConcreteSizes s = concrete_sizes(c, c.runs()[0]);
  if (s.batch_numel() == 0 || s.Lq == 0 || s.Lkv == 0) out.push_back("empty");
  if (c.data.special) out.push_back(special_value_name(c.data.special->value));
  if (out.empty()) out.push_back("finite");
  return out;
}

CampaignStats::CampaignStats(CaseClassifier classify) : classify_(std::move(classify)) {}

CaseSummary summarize_case(const Case& c, const CaseClassifier& classify) {
  const ConcreteSizes s = concrete_sizes(c, c.runs()[0]);
  CaseSummary out;
  if (classify) out.classes = classify(c);
  out.lq_bucket = length_bucket(s.Lq);
  out.lkv_bucket = length_bucket(s.Lkv);
  out.head_layout = head_layout(c);
  out.dtype = dtype_name(c.dtype);
  out.mask_kinds = mask_kinds(c);
  out.data = data_kinds(c);
  return out;
}

std::string summary_to_bytes(const CaseSummary& s) {
  WireWriter out;
  out.strings(s.classes);
  out.i64(s.lq_bucket);
  out.i64(s.lkv_bucket);
  out.str(s.head_layout);
  out.str(s.dtype);
  out.strings(s.mask_kinds);
  out.strings(s.data);
  return out.take();
}

CaseSummary summary_from_bytes(std::string_view bytes) {
  WireReader in(bytes, "case summary");
  CaseSummary s;
  s.classes = in.strings();
  s.lq_bucket = static_cast<int>(in.i64());
  s.lkv_bucket = static_cast<int>(in.i64());
  s.head_layout = in.str();
  s.dtype = in.str();
  s.mask_kinds = in.strings();
  s.data = in.strings();
  in.finish();
  return s;
}

void CampaignStats::add(const std::string& target, const Case& c, const CaseResult& r) {
  add_summary(target, summary(c), r);
}

void CampaignStats::add_summary(const std::string& target, const CaseSummary& summary, const CaseResult& r) {
  TargetStats& t = targets_[target];
  ++t.cases;
  ++t.verdicts[verdict_name(r.verdict)];
  for (const auto& a : r.accuracy) {
    auto& buckets = t.ratios[{dtype_name(a.dtype), a.kernel_set}];
    buckets.resize(kRatioBuckets);
    ++buckets[ratio_bucket(a.ratio)];
    if (a.error_lsb < 0) continue;
    auto& lsb = t.lsb[{dtype_name(a.dtype), a.kernel_set}];
    lsb.resize(kLsbBuckets);
    ++lsb[lsb_bucket(a.error_lsb)];
  }
  for (const auto& name : summary.classes) {
    ++t.coverage.classes[name];
    for (const auto& d : r.decisions) ++t.guard[name][d.deciding_rule];
  }
  ++t.coverage.lengths[{summary.lq_bucket, summary.lkv_bucket}];
  ++t.coverage.head_layouts[summary.head_layout];
  for (const auto& kind : summary.mask_kinds) ++t.coverage.mask_kinds[kind];
  ++t.coverage.dtypes[summary.dtype];
  for (const auto& kind : summary.data) ++t.coverage.data[kind];
}

namespace {

// Sums of counts, element by element and key by key.
void add_counts(int64_t& into, int64_t n) { into += n; }
void add_counts(std::vector<int64_t>& into, const std::vector<int64_t>& n) {
  if (into.size() < n.size()) into.resize(n.size());
  for (size_t b = 0; b < n.size(); ++b) into[b] += n[b];
}
template <class K, class V>
void add_counts(std::map<K, V>& into, const std::map<K, V>& n) {
  for (const auto& [k, v] : n) add_counts(into[k], v);
}

// Every field of Coverage and TargetStats by its JSON name, visited in one
// or two objects at once: writing, reading and summing all go through these
// lists, so a new field is one line here.
template <class F, class... C>
void coverage_fields(F&& field, C&... c) {
  field("lengths", c.lengths...);
  field("head_layouts", c.head_layouts...);
  field("mask_kinds", c.mask_kinds...);
  field("dtypes", c.dtypes...);
  field("data", c.data...);
  field("classes", c.classes...);
}

template <class F, class... T>
void stats_fields(F&& field, T&... t) {
  field("verdicts", t.verdicts...);
  field("ratios", t.ratios...);
  field("lsb", t.lsb...);
  field("guard", t.guard...);
}

struct Writer {
  nlohmann::json& j;
  template <class V>
  void operator()(const char* name, const V& v) { j[name] = v; }
};

struct Reader {
  const nlohmann::json& j;
  template <class V>
  void operator()(const char* name, V& v) {
    if (j.contains(name)) j.at(name).get_to(v);
  }
};

struct Adder {
  template <class V>
  void operator()(const char*, V& into, const V& n) { add_counts(into, n); }
};

}  // namespace

void TargetStats::merge(const TargetStats& other) {
  cases += other.cases;
  stats_fields(Adder{}, *this, other);
  coverage_fields(Adder{}, coverage, other.coverage);
}

nlohmann::json coverage_to_json(const Coverage& c) {
  nlohmann::json j = nlohmann::json::object();
  coverage_fields(Writer{j}, c);
  return j;
}

nlohmann::json target_stats_to_json(const TargetStats& t) {
  nlohmann::json j = {{"cases", t.cases}};
  stats_fields(Writer{j}, t);
  j["coverage"] = coverage_to_json(t.coverage);
  return j;
}

TargetStats target_stats_from_json(const nlohmann::json& j, const std::string& source) {
  try {
    TargetStats t;
    t.cases = j.at("cases").get<int64_t>();
    stats_fields(Reader{j}, t);
    if (j.contains("coverage")) coverage_fields(Reader{j.at("coverage")}, t.coverage);
    return t;
  } catch (const std::exception& e) {
    throw InputError(source + ": not campaign statistics: " + e.what());
  }
}

void CampaignStats::merge(const std::string& target, const TargetStats& stats) { targets_[target].merge(stats); }

nlohmann::json CampaignStats::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, t] : targets_) j[name] = target_stats_to_json(t);
  return j;
}

std::function<void(const Case&, const CaseResult&)> CampaignStats::collector(const std::string& target) {
  return [this, target](const Case& c, const CaseResult& r) { add(target, c, r); };
}

std::function<std::string(const Case&)> CampaignStats::summarizer() const {
  return [classify = classify_](const Case& c) { return summary_to_bytes(summarize_case(c, classify)); };
}

std::function<void(const std::string&, const CaseResult&)> CampaignStats::summary_collector(
    const std::string& target) {
  return [this, target](const std::string& s, const CaseResult& r) { add_summary(target, summary_from_bytes(s), r); };
}

}  // namespace sdpa
