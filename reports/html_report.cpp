#include "reports/html_report.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "harness/io/corpus.h"
#include "harness/io/atomic_write.h"
#include "reports/html_findings.h"
#include "reports/html_sections.h"
#include "reports/markup.h"

namespace sdpa {
namespace {

const char* kStyle = R"(
body { font-family: "DejaVu Sans", Arial, sans-serif; font-size: 14px; color: #1a1a1a; margin: 24px 32px; max-width: 1216px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; border-bottom: 2px solid #333; padding-bottom: 3px; margin-top: 34px; }
h3 { font-size: 16px; margin: 20px 0 8px; }
h4 { font-size: 14px; margin: 0 0 8px; }
h5 { font-size: 12px; margin: 6px 0 4px; color: #555; }
.meta, .note { color: #555; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.guard td.n { min-width: 36px; }
table.guard th.rule { font-weight: normal; font-size: 12px; }
.plots { display: flex; flex-wrap: wrap; gap: 18px 28px; align-items: flex-start; }
.plots figure { margin: 0; }
figcaption { font-weight: bold; font-size: 13px; margin-bottom: 4px; }
article.finding { border: 1px solid #ccc; border-left: 6px solid #c0392b; padding: 10px 14px; margin: 12px 0; }
article.finding.warning { border-left-color: #e69f00; }
.failure .verdict { color: #c0392b; font-weight: bold; }
.warning .verdict { color: #a66f00; font-weight: bold; }
.tag { background: #e69f00; color: #fff; border-radius: 3px; padding: 0 5px; font-size: 11px; }
table.kv { width: 100%; }
table.kv th { background: #f6f6f6; white-space: nowrap; width: 170px; }
pre { background: #f7f7f7; border: 1px solid #e3e3e3; padding: 6px 8px; margin: 0; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.graphs { margin-top: 8px; }
code.replay { background: #eef4ff; padding: 2px 5px; }
)";

// Set first, so that an error in any later script is what the page reports.
const char* kErrorHook =
    "<script>window.onerror = function (message) {\n"
    "  document.body.dataset.renderStatus = 'script-error: ' + message;\n"
    "};</script>\n";

const std::vector<std::string> kSections = {"summary",  "verdicts", "error-ratios", "error-lsb",
                                            "guard-decisions", "coverage", "findings"};

std::string fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

std::string options_text(const Options& options) {
  std::string out;
  for (const auto& [k, v] : options) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

std::string summary_section(const RunSettings& s, const std::vector<TargetRun>& runs) {
  std::ostringstream o;
  o << "<section id=\"summary\">\n<h2>Campaign</h2>\n<p class=\"meta\">sdpacheck " << kVersion << " &middot; seed "
    << s.seed << " &middot; " << s.cases << " cases per target &middot; shard " << s.shard << "/" << s.shards
    << " &middot; policy " << xml_escape(s.policy) << " &middot; max size " << s.max_size << " &middot; passes "
    << (s.identity ? "off (identity self-check)" : "on") << "</p>\n";
  o << "<table>\n<tr><th>target</th><th>options</th><th>cases</th><th>failing cases</th><th>distinct "
       "findings</th><th>seconds</th><th>cases/s</th></tr>\n";
  for (const auto& r : runs) {
    int64_t failing = 0;
    for (const auto& [v, n] : r.verdicts) failing += is_failure(*parse_verdict(v)) ? n : 0;
    o << "<tr><td>" << xml_escape(r.target) << "</td><td><code>" << xml_escape(options_text(r.options))
      << "</code></td><td class=\"n\">" << r.cases << "</td><td class=\"n\">" << failing << "</td><td class=\"n\">"
      << r.findings.size() << "</td><td class=\"n\">" << fixed(r.seconds, 1) << "</td><td class=\"n\">"
      << fixed(r.cases / std::max(r.seconds, 1e-9), 0) << "</td></tr>\n";
  }
  o << "</table>\n</section>\n";
  return o.str();
}

std::string status_script() {
  std::ostringstream o;
  o << "<script>\n(function () {\n  var sections = [";
  for (size_t i = 0; i < kSections.size(); ++i) o << (i ? ", " : "") << "'" << kSections[i] << "'";
  o << "];\n"
       "  var missing = sections.filter(function (id) { return !document.getElementById(id); });\n"
       "  if (document.body.dataset.renderStatus) return;  // an earlier script failed\n"
       "  document.body.dataset.renderStatus = missing.length ? 'missing-section: ' + missing.join(', ') : 'ok';\n"
       "})();\n</script>\n";
  return o.str();
}

}  // namespace

std::string html_report(const RunSettings& s, const std::vector<TargetRun>& runs, const CampaignStats& stats) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<title>sdpacheck campaign report</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n"
    << kErrorHook << "<h1>sdpacheck campaign report</h1>\n<nav>";
  for (const auto& id : kSections) o << "<a href=\"#" << id << "\">" << id << "</a>";
  o << "</nav>\n";
  o << summary_section(s, runs) << verdict_section(runs, stats) << ratio_section(runs, stats)
    << lsb_section(runs, stats)
    << guard_section(runs, stats) << variant_section(runs) << coverage_section(runs, stats)
    << html_findings_section(runs);
  o << status_script() << "</body>\n</html>\n";
  return o.str();
}

std::string write_html_report(const std::string& dir, const RunSettings& s, const std::vector<TargetRun>& runs,
                              const CampaignStats& stats) {
  std::string path = (std::filesystem::path(dir) / "index.html").string();
  write_file_atomically(path, html_report(s, runs, stats));
  return path;
}

}  // namespace sdpa
