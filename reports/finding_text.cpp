#include "reports/finding_text.h"

#include <iomanip>
#include <sstream>

namespace sdpa {

std::string replay_command(const WrittenFinding& w) {
  if (w.file.empty()) return "(no replay file: the corpus was not written; rerun without --no-corpus)";
  return "sdpacheck replay " + w.file;
}

std::string error_line(const Finding& f) {
  if (f.error == 0.0 && f.bound == 0.0) return "";
  std::ostringstream o;
  o << std::setprecision(3) << std::scientific << "error " << f.error << ", bound " << f.bound;
  if (f.bound > 0) o << std::defaultfloat << " (ratio " << f.error / f.bound << ")";
  o << std::defaultfloat << std::setprecision(4) << ", " << f.error_ulps << " ulps";
  return o.str();
}

std::string finding_block(const WrittenFinding& w) {
  const Finding& f = w.finding;
  std::ostringstream o;
  auto line = [&](const char* key, const std::string& value) {
    if (!value.empty()) o << key << ": " << value << "\n";
  };
  line("verdict", w.verdict);
  line("check", w.check);
  // The soundness run has no kernel set: it runs on the exact kernels.
  line("kernel set", f.kernel_set.empty() && w.check == check_name(Check::soundness) ? "exact" : f.kernel_set);
  line("case", w.summary);
  line("detail", f.detail);
  line("error", error_line(f));
  line("first diverging node", f.first_node);
  std::string assumptions;
  for (const auto& a : f.violated_assumptions) assumptions += (assumptions.empty() ? "" : "; ") + a;
  line("violated assumptions", assumptions);
  line("failure class", f.failure_class);
  line("replay", replay_command(w));
  return o.str();
}

}  // namespace sdpa
