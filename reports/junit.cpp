#include "reports/junit.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "harness/io/atomic_write.h"
#include "reports/finding_text.h"
#include "reports/markup.h"

namespace sdpa {
namespace {

const std::vector<Check> kChecks = {Check::oracle,     Check::soundness,  Check::accuracy, Check::completeness,
                                    Check::invariant,  Check::robustness, Check::identity};

// With the passes off nothing is rewritten: these checks have nothing to look at.
bool needs_passes(Check c) {
  return c == Check::soundness || c == Check::accuracy || c == Check::completeness || c == Check::invariant;
}

// Milliseconds, so the suites' times add up to the total as printed.
double rounded(double seconds) { return std::round(seconds * 1000) / 1000; }

// JUnit times are xs:decimal: fixed notation, no exponent.
std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", rounded(s));
  return buf;
}

bool failing(const WrittenFinding& w) {
  auto v = parse_verdict(w.verdict);
  return v && is_failure(*v);
}

struct CheckCase {
  Check check;
  std::vector<const WrittenFinding*> failures, warnings;
  bool skipped = false;
};

std::vector<CheckCase> check_cases(const TargetRun& r, bool identity) {
  std::vector<CheckCase> out;
  for (Check c : kChecks) {
    CheckCase cc{c, {}, {}, identity && needs_passes(c)};
    for (const auto& w : r.findings)
      if (w.check == check_name(c)) (failing(w) ? cc.failures : cc.warnings).push_back(&w);
    out.push_back(cc);
  }
  return out;
}

// Distinct verdicts of the failures, most severe first.
std::string failure_message(const std::vector<const WrittenFinding*>& failures) {
  std::string out;
  for (Verdict v : all_verdicts())
    for (const auto* w : failures)
      if (w->verdict == verdict_name(v)) {
        out += (out.empty() ? "" : ", ") + w->verdict;
        break;
      }
  return out;
}

std::string blocks(const std::vector<const WrittenFinding*>& findings) {
  std::string out;
  for (const auto* w : findings) out += (out.empty() ? "" : "\n") + finding_block(*w);
  return out;
}

// Findings whose check is none of kChecks (a finding without a check).
std::vector<const WrittenFinding*> unchecked(const TargetRun& r) {
  std::vector<const WrittenFinding*> out;
  for (const auto& w : r.findings) {
    bool known = false;
    for (Check c : kChecks) known = known || w.check == check_name(c);
    if (!known) out.push_back(&w);
  }
  return out;
}

std::string suite_text(const TargetRun& r) {
  std::ostringstream o;
  o << r.cases << " cases\n";
  for (const auto& [v, n] : r.verdicts) o << v << ": " << n << "\n";
  if (r.duplicates) o << r.duplicates << " more failures with an already-found signature\n";
  std::string other = blocks(unchecked(r));
  if (!other.empty()) o << "\n" << other;
  return o.str();
}

void property(std::ostringstream& o, const std::string& name, const std::string& value) {
  o << "      <property name=\"" << xml_escape(name) << "\" value=\"" << xml_escape(value) << "\"/>\n";
}

void testsuite(std::ostringstream& o, const RunSettings& s, const TargetRun& r,
               const std::vector<CheckCase>& cases) {
  int failures = 0, skipped = 0;
  for (const auto& cc : cases) failures += !cc.failures.empty(), skipped += cc.skipped;
  o << "  <testsuite name=\"" << xml_escape(r.target) << "\" tests=\"" << cases.size() << "\" failures=\""
    << failures << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << seconds(r.seconds) << "\">\n";
  o << "    <properties>\n";
  property(o, "seed", std::to_string(s.seed));
  property(o, "cases", std::to_string(r.cases));
  property(o, "policy", s.policy);
  property(o, "passes", s.identity ? "off (identity self-check)" : "on");
  for (const auto& [key, value] : r.options) property(o, "option." + key, value);
  o << "    </properties>\n";
  const std::string classname = "sdpacheck." + r.target;
  for (const auto& cc : cases) {
    // Per-check time is not measured: every check runs inside each case.
    o << "    <testcase name=\"" << check_name(cc.check) << "\" classname=\"" << xml_escape(classname) << "\"";
    if (cc.failures.empty() && cc.warnings.empty() && !cc.skipped) {
      o << "/>\n";
      continue;
    }
    o << ">\n";
    if (cc.skipped) o << "      <skipped message=\"identity self-check: passes off\"/>\n";
    if (!cc.failures.empty()) {
      std::string message = failure_message(cc.failures);
      o << "      <failure message=\"" << xml_escape(message) << "\" type=\""
        << xml_escape(message.substr(0, message.find(','))) << "\">" << xml_escape(blocks(cc.failures))
        << "</failure>\n";
    }
    if (!cc.warnings.empty())
      o << "      <system-out>" << xml_escape("warnings (not failures):\n" + blocks(cc.warnings)) << "</system-out>\n";
    o << "    </testcase>\n";
  }
  o << "    <system-out>" << xml_escape(suite_text(r)) << "</system-out>\n";
  o << "  </testsuite>\n";
}

}  // namespace

std::string junit_xml(const RunSettings& s, const std::vector<TargetRun>& runs) {
  size_t tests = 0;
  int failures = 0, skipped = 0;
  double time = 0;
  std::vector<std::vector<CheckCase>> per_target;
  for (const auto& r : runs) {
    per_target.push_back(check_cases(r, s.identity));
    for (const auto& cc : per_target.back()) failures += !cc.failures.empty(), skipped += cc.skipped;
    tests += per_target.back().size();
    time += rounded(r.seconds);
  }
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"sdpacheck\" tests=\"" << tests << "\" failures=\"" << failures
    << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << seconds(time) << "\">\n";
  for (size_t i = 0; i < runs.size(); ++i) testsuite(o, s, runs[i], per_target[i]);
  o << "</testsuites>\n";
  return o.str();
}

std::string write_junit(const std::string& path, const RunSettings& s, const std::vector<TargetRun>& runs) {
  write_file_atomically(path, junit_xml(s, runs));
  return path;
}

}  // namespace sdpa
