#include <iostream>

#include "cli/commands.h"

namespace sdpa::cli {
namespace {

void list_target(const TargetFactory& f) {
  std::cout << "target " << f.name() << ": " << f.description() << "\n  options:\n";
  for (const auto& o : f.option_specs()) {
    std::cout << "    " << o.name << " (default " << o.default_value << ")";
    if (!o.choices.empty()) {
      std::cout << " one of:";
      for (const auto& c : o.choices) std::cout << " " << c;
    }
    std::cout << "\n      " << o.help << "\n";
  }
  auto target = f.make(resolve_options(f, {}));
  std::cout << "  passes:";
  for (const auto* p : target->passes()) std::cout << " " << p->name();
  std::cout << "\n  kernel sets:\n";
  for (const auto& ks : target->kernel_sets()) {
    std::cout << "    " << ks.kernels->name() << " [";
    for (size_t i = 0; i < ks.dtypes.size(); ++i) std::cout << (i ? " " : "") << dtype_name(ks.dtypes[i]);
    std::cout << "]: " << ks.description << "\n";
  }
  for (const auto& d : target->divergences())
    std::cout << "  declared divergence " << d.name << ": " << d.description << "\n";
  for (const auto& m : f.mutants()) {
    std::cout << "  mutant " << m.name << " (";
    for (const auto& [k, v] : m.options) std::cout << " --option " << k << "=" << v;
    std::cout << " ): " << m.what << "\n";
  }
}

}  // namespace

void add_list_command(CLI::App& app, Wiring& w, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("list", "list targets, guard policies, kernel sets, checks and verdicts");
  cmd->callback([&w, &exit_code] {
    for (const auto* f : w.registry.all()) list_target(*f);
    std::cout << "checks, in order of trust:";
    for (Check c : {Check::oracle, Check::soundness, Check::accuracy, Check::completeness,
                    Check::invariant, Check::robustness, Check::identity})
      std::cout << " " << check_name(c);
    std::cout << "\nverdicts:";
    for (Verdict v : all_verdicts()) std::cout << " " << verdict_name(v);
    std::cout << "\nreference model: " << w.reference->name() << "\n";
    exit_code = kOk;
  });
}

}  // namespace sdpa::cli
