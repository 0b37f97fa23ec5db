#include "reports/html_sections.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "reports/markup.h"
#include "reports/svg_plots.h"

namespace sdpa {
namespace {

std::string verdict_color(Verdict v) {
  if (is_failure(v)) return "#c0392b";
  switch (v) {
    case Verdict::missed_rewrite: return "#e69f00";
    case Verdict::known_divergence: return "#8e6bbf";
    case Verdict::unsupported: return "#999999";
    case Verdict::rejected: return "#4c78a8";
    default: return "#2e9d57";
  }
}

const TargetStats& stats_of(const CampaignStats& stats, const std::string& target) {
  static const TargetStats none;
  auto it = stats.targets().find(target);
  return it == stats.targets().end() ? none : it->second;
}

std::string guard_table(const TargetStats& t) {
  std::set<std::string> rules;
  for (const auto& [cls, by_rule] : t.guard)
    for (const auto& [rule, n] : by_rule) rules.insert(rule);
  std::vector<std::string> columns(rules.begin(), rules.end());
  // "accept" first: the rewrite happened; every other column is a rule that kept the node.
  std::stable_partition(columns.begin(), columns.end(), [](const std::string& r) { return r == "accept"; });
  std::ostringstream o;
  o << "<table class=\"guard\">\n<tr><th>case class</th><th>decisions</th>";
  for (const auto& rule : columns) o << "<th class=\"rule\">" << xml_escape(rule) << "</th>";
  o << "</tr>\n";
  for (const auto& [cls, by_rule] : t.guard) {
    int64_t total = 0;
    for (const auto& [rule, n] : by_rule) total += n;
    o << "<tr><td>" << xml_escape(cls) << "</td><td class=\"n\">" << total << "</td>";
    for (const auto& rule : columns) {
      auto it = by_rule.find(rule);
      int64_t n = it == by_rule.end() ? 0 : it->second;
      // Shaded by the share of the class's decisions, so rows compare at a glance.
      double share = n ? static_cast<double>(n) / total : -1;
      o << "<td class=\"n\" style=\"background:" << heat_color(share)
        << (heat_is_dark(share) ? ";color:#fff" : "") << "\">" << (n ? std::to_string(n) : "") << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string length_heatmap(const Coverage& c) {
  if (c.lengths.empty()) return "<p>No cases.</p>";
  int lo = 1 << 20, hi = -1;
  for (const auto& [key, n] : c.lengths) {
    lo = std::min({lo, key.first, key.second});
    hi = std::max({hi, key.first, key.second});
  }
  Heatmap h;
  h.row_title = "Lq";
  h.col_title = "Lkv";
  for (int b = lo; b <= hi; ++b) h.rows.push_back(length_bucket_label(b)), h.cols.push_back(length_bucket_label(b));
  h.counts.assign(h.rows.size(), std::vector<int64_t>(h.cols.size(), 0));
  for (const auto& [key, n] : c.lengths) h.counts[key.first - lo][key.second - lo] = n;
  return svg_heatmap(h);
}

// Every category of `order`, counted or not, so that gaps show.
std::string category_chart(const std::map<std::string, int64_t>& counts, const std::vector<std::string>& order) {
  std::vector<Bar> bars;
  for (const auto& k : order) {
    auto it = counts.find(k);
    bars.push_back({k, it == counts.end() ? 0 : it->second, "#4c78a8"});
  }
  return svg_bar_chart(bars);
}

// Cases whose mask empties a whole key tile of a row that keeps other keys,
// by mask pattern and Lkv at a tile edge: the "empty-tile:PATTERN:LKV" classes.
std::string empty_tile_table(const Coverage& c) {
  const std::string prefix = "empty-tile:";
  std::map<std::string, std::map<int64_t, int64_t>> cells;
  std::set<int64_t> edges;
  for (const auto& [cls, n] : c.classes) {
    if (cls.rfind(prefix, 0) != 0) continue;
    const size_t colon = cls.rfind(':');
    if (colon < prefix.size()) continue;  // "empty-tile:64": no pattern
    const std::string pattern = cls.substr(prefix.size(), colon - prefix.size());
    const int64_t edge = std::stoll(cls.substr(colon + 1));
    cells[pattern][edge] = n;
    edges.insert(edge);
  }
  if (cells.empty()) return "<p>No mask emptied a whole key tile at a tile-edge Lkv.</p>\n";
  std::ostringstream o;
  o << "<table class=\"guard\">\n<tr><th>mask pattern</th>";
  for (int64_t e : edges) o << "<th class=\"rule\">Lkv " << e << "</th>";
  o << "</tr>\n";
  for (const auto& [pattern, by_edge] : cells) {
    o << "<tr><td>" << xml_escape(pattern) << "</td>";
    for (int64_t e : edges) {
      auto it = by_edge.find(e);
      o << "<td class=\"n\">" << (it == by_edge.end() ? std::string() : std::to_string(it->second)) << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

}  // namespace

std::string verdict_section(const std::vector<TargetRun>& runs, const CampaignStats& stats) {
  std::ostringstream o;
  o << "<section id=\"verdicts\">\n<h2>Verdicts per target</h2>\n"
    << "<p class=\"note\">Cases by their most severe finding, most severe first. Red: failures; amber: "
       "warnings; purple: declared divergences; grey: unsupported; blue: the guard kept the node; green: pass.</p>\n"
    << "<div class=\"plots\">\n";
  for (const auto& r : runs) {
    std::vector<Bar> bars;
    const auto& counts = stats_of(stats, r.target).verdicts;
    for (Verdict v : all_verdicts()) {
      auto it = counts.find(verdict_name(v));
      if (it != counts.end()) bars.push_back({verdict_name(v), it->second, verdict_color(v)});
    }
    o << "<figure><figcaption>" << xml_escape(r.target) << "</figcaption>" << svg_bar_chart(bars) << "</figure>\n";
  }
  o << "</div>\n</section>\n";
  return o.str();
}

std::string ratio_section(const std::vector<TargetRun>& runs, const CampaignStats& stats) {
  std::ostringstream o;
  o << "<section id=\"error-ratios\">\n<h2>Error ratios</h2>\n"
    << "<p class=\"note\">Each accuracy comparison's largest |C &minus; G| / bound over the output (C: a kernel "
       "set's output, G: the oracle's), in decades. Right of the dashed line the kernel set exceeds its "
       "bound. Comparisons with non-finite rows or a wrong shape have no ratio.</p>\n";
  std::vector<std::string> edges;
  for (int b = 0; b + 1 < kRatioBuckets; ++b) edges.push_back(ratio_edge_label(b));
  std::vector<std::string> colors;
  for (int b = 0; b < kRatioBuckets; ++b) colors.push_back(b < kRatioFirstFailing ? "#4c78a8" : "#c0392b");
  for (const auto& r : runs) {
    o << "<h3>" << xml_escape(r.target) << "</h3>\n";
    const auto& ratios = stats_of(stats, r.target).ratios;
    if (ratios.empty()) o << "<p>No accuracy comparisons.</p>\n";
    o << "<div class=\"plots\">\n";
    for (const auto& [key, counts] : ratios) {
      int64_t n = 0;
      for (int64_t c : counts) n += c;
      Histogram h{counts, colors, edges, kRatioFirstFailing, "bound", "|C - G| / bound",
                  key.first + " \xC2\xB7 " + key.second + " (" + std::to_string(n) + ")"};
      o << "<figure>" << svg_histogram(h) << "</figure>\n";
    }
    o << "</div>\n";
  }
  o << "</section>\n";
  return o.str();
}

std::string lsb_section(const std::vector<TargetRun>& runs, const CampaignStats& stats) {
  std::ostringstream o;
  o << "<section id=\"error-lsb\">\n<h2>Error in output LSB</h2>\n"
    << "<p class=\"note\">For kernel sets whose output is int8: each accuracy comparison's largest |C &minus; G| "
       "in steps of the output's quantization grid (the scale of the dequantize the graph ends with), in "
       "octaves. Half a step is the rounding of the output alone.</p>\n";
  std::vector<std::string> edges;
  for (int b = 0; b + 1 < kLsbBuckets; ++b) edges.push_back(lsb_edge_label(b));
  const std::vector<std::string> colors(kLsbBuckets, "#4c78a8");
  bool any = false;
  for (const auto& r : runs) {
    const auto& lsb = stats_of(stats, r.target).lsb;
    if (lsb.empty()) continue;
    any = true;
    o << "<h3>" << xml_escape(r.target) << "</h3>\n<div class=\"plots\">\n";
    for (const auto& [key, counts] : lsb) {
      int64_t n = 0;
      for (int64_t c : counts) n += c;
      Histogram h{counts, colors, edges, -1, "", "|C - G| / output step (LSB)",
                  key.first + " \xC2\xB7 " + key.second + " (" + std::to_string(n) + ")"};
      o << "<figure>" << svg_histogram(h) << "</figure>\n";
    }
    o << "</div>\n";
  }
  if (!any) o << "<p>No kernel set with an int8 output.</p>\n";
  o << "</section>\n";
  return o.str();
}

std::string guard_section(const std::vector<TargetRun>& runs, const CampaignStats& stats) {
  std::ostringstream o;
  o << "<section id=\"guard-decisions\">\n<h2>Guard decisions per case class</h2>\n"
    << "<p class=\"note\">For each boundary class, the guard's decisions by deciding rule: <code>accept</code> "
       "(rewritten) or the first rule that kept the node. A case counts in every class it hits.</p>\n";
  for (const auto& r : runs) {
    o << "<h3>" << xml_escape(r.target) << "</h3>\n";
    const TargetStats& t = stats_of(stats, r.target);
    o << (t.guard.empty() ? "<p>No guard decisions (no case reached the passes).</p>\n" : guard_table(t));
  }
  o << "</section>\n";
  return o.str();
}

namespace {

// "name n, name n" of a count map.
std::string counts_text(const std::map<std::string, int64_t>& counts) {
  std::string out;
  for (const auto& [name, n] : counts) out += (out.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return out;
}

}  // namespace

std::string variant_section(const std::vector<TargetRun>& runs) {
  std::ostringstream o;
  o << "<section id=\"variants\">\n<h2>Entry variants</h2>\n"
    << "<p class=\"note\">Per entry variant of a target: its cases, their verdicts, and what the target counts "
       "after the passes (summed over the cases).</p>\n";
  for (const auto& r : runs) {
    if (r.variants.empty()) continue;
    o << "<h3>" << xml_escape(r.target) << "</h3>\n<table>\n<tr><th>variant</th><th>cases</th><th>verdicts</th>"
      << "<th>counters</th></tr>\n";
    for (const auto& [name, v] : r.variants)
      o << "<tr><td>" << xml_escape(name) << "</td><td>" << v.cases << "</td><td>" << xml_escape(counts_text(v.verdicts))
        << "</td><td>" << xml_escape(counts_text(v.counters)) << "</td></tr>\n";
    o << "</table>\n";
  }
  o << "</section>\n";
  return o.str();
}

std::string coverage_section(const std::vector<TargetRun>& runs, const CampaignStats& stats) {
  std::ostringstream o;
  o << "<section id=\"coverage\">\n<h2>Coverage of the case space</h2>\n"
    << "<p class=\"note\">Lq against Lkv in log2 buckets at each case's first runtime size; head layouts (MHA "
       "Hq = Hkv, GQA, MQA Hkv = 1); mask kinds (a causal call with an attn_mask counts under both); dtypes; data (finite, the special "
       "values written into q, k, v or a mask, and empty: a zero-size dim; a case may count twice); masks (what the "
       "mask keeps at some runtime size: a left padding that drops some keys, per-batch padding whose batch elements "
       "differ in length, block-sparse rows that keep some blocks, a row with every key dropped, and a row that keeps "
       "keys but drops every key of one 64- or 512-key tile, which a tiled kernel skips or rescales past).</p>\n";
  std::vector<std::string> dtypes;
  for (DType d : {DType::f64, DType::f32, DType::f16, DType::bf16}) dtypes.push_back(dtype_name(d));
  for (const auto& r : runs) {
    const Coverage& c = stats_of(stats, r.target).coverage;
    o << "<h3>" << xml_escape(r.target) << "</h3>\n<div class=\"plots\">\n"
      << "<figure><figcaption>Lq against Lkv</figcaption>" << length_heatmap(c) << "</figure>\n"
      << "<div>\n<figure><figcaption>head layouts</figcaption>"
      << category_chart(c.head_layouts, {"MHA", "GQA", "MQA"}) << "</figure>\n"
      << "<figure><figcaption>mask kinds</figcaption>"
      << category_chart(c.mask_kinds, {"none", "causal", "bool", "additive"}) << "</figure>\n"
      << "<figure><figcaption>dtypes</figcaption>" << category_chart(c.dtypes, dtypes) << "</figure>\n"
      << "<figure><figcaption>data</figcaption>"
      << category_chart(c.data, {"finite", "nan", "+inf", "-inf", "overflow", "huge", "empty"}) << "</figure>\n"
      << "<figure><figcaption>masks</figcaption>"
      << category_chart(c.classes, {"mask:left-padding", "mask:per-batch-padding", "mask:block-sparse",
                                    "mask:fully-masked-row", "empty-tile:64", "empty-tile:512"})
      << "</figure>\n"
      << "</div>\n</div>\n"
      << "<h4>Masks that empty a whole key tile (64 or 512 keys) of a row that keeps others, by pattern and "
         "Lkv at a tile edge</h4>\n"
      << empty_tile_table(c);
  }
  o << "</section>\n";
  return o.str();
}

}  // namespace sdpa
