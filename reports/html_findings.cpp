#include "reports/html_findings.h"

#include <sstream>

#include "reports/finding_text.h"
#include "reports/markup.h"

namespace sdpa {
namespace {

void row(std::ostringstream& o, const std::string& key, const std::string& value_html) {
  if (!value_html.empty()) o << "<tr><th>" << key << "</th><td>" << value_html << "</td></tr>\n";
}

std::string pre(const std::string& text) { return text.empty() ? "" : "<pre>" + xml_escape(text) + "</pre>"; }

void article(std::ostringstream& o, const WrittenFinding& w) {
  const Finding& f = w.finding;
  auto verdict = parse_verdict(w.verdict);
  const bool failure = verdict && is_failure(*verdict);
  o << "<article class=\"finding " << (failure ? "failure" : "warning") << "\">\n";
  o << "<h4><span class=\"verdict\">" << xml_escape(w.verdict) << "</span> <span class=\"check\">["
    << xml_escape(w.check) << "]</span>" << (f.kernel_set.empty() ? "" : " on " + xml_escape(f.kernel_set))
    << (failure ? "" : " <span class=\"tag\">warning</span>") << "</h4>\n";
  o << "<table class=\"kv\">\n";
  row(o, "case", "<code>" + xml_escape(w.summary) + "</code>");
  row(o, "detail", xml_escape(f.detail));
  row(o, "first diverging node", f.first_node.empty() ? "" : "<code>" + xml_escape(f.first_node) + "</code>");
  row(o, "error / bound / ulps", xml_escape(error_line(f)));
  if (!f.sizes.empty()) {
    std::string sizes;
    for (const auto& [sym, v] : f.sizes) sizes += (sizes.empty() ? "" : ", ") + sym + "=" + std::to_string(v);
    row(o, "runtime sizes", "<code>" + xml_escape(sizes) + "</code>");
  }
  if (!f.bound_inputs.is_null()) row(o, "bound inputs", pre(f.bound_inputs.dump(2)));
  if (!f.violated_assumptions.empty()) {
    std::string items;
    for (const auto& a : f.violated_assumptions) items += "<li>" + xml_escape(a) + "</li>";
    row(o, "violated assumptions", "<ul>" + items + "</ul>");
  }
  row(o, "failure class", xml_escape(f.failure_class));
  row(o, "signature", "<code>" + xml_escape(w.signature) + "</code>");
  row(o, "found at", "iteration " + std::to_string(w.iteration) + ", shrunk in " +
                         std::to_string(w.shrink_steps) + " steps");
  row(o, "replay", "<code class=\"replay\">" + xml_escape(replay_command(w)) + "</code>");
  o << "</table>\n";
  if (!w.graph_before.empty() || !w.graph_after.empty()) {
    o << "<div class=\"graphs\">\n<div><h5>graph before the passes</h5>" << pre(w.graph_before)
      << "</div>\n<div><h5>graph after the passes</h5>" << pre(w.graph_after) << "</div>\n</div>\n";
  }
  o << "</article>\n";
}

}  // namespace

std::string html_findings_section(const std::vector<TargetRun>& runs) {
  std::ostringstream o;
  o << "<section id=\"findings\">\n<h2>Findings</h2>\n"
    << "<p class=\"note\">One per distinct signature, shrunk to a minimal case. Failures in red, "
       "warnings (missed-rewrite) in amber.</p>\n";
  for (const auto& r : runs) {
    o << "<h3>" << xml_escape(r.target) << "</h3>\n";
    if (r.findings.empty()) o << "<p>No findings.</p>\n";
    for (const auto& w : r.findings) article(o, w);
    if (r.duplicates)
      o << "<p class=\"note\">" << r.duplicates << " more failing cases had an already-found signature.</p>\n";
  }
  o << "</section>\n";
  return o.str();
}

}  // namespace sdpa
