// Throughput, time split, time-to-detect and peak memory of campaigns:
// the figures the README reports. Usage: throughput [cases per target]
// [in-process|isolated|jobs=N [TARGET...]]: with the second argument, only
// the throughput rows, cases run in this process, in one worker process, or
// in N workers side by side (as sdpacheck fuzz --jobs N does), on every
// target or the ones named; `throughput 0 time-to-detect [TARGET...]`: only
// the time-to-detect rows.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <set>
#include <string>

#include "cli/wiring.h"
#include "generators/case_classes.h"
#include "reports/campaign_stats.h"

using namespace sdpa;

namespace {

// CPU seconds (user and system) of this process alone, not its workers.
double own_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

// jobs 0: in this process; otherwise isolated in that many workers.
void throughput(cli::Wiring& w, const TargetFactory& f, int64_t cases, int jobs) {
  auto target = f.make(resolve_options(f, {}));
  CampaignOptions o;
  o.seed = 7;
  o.cases = cases;
  o.isolate = jobs > 0;
  o.jobs = std::max(jobs, 1);
  o.check.oracle_sample = kCampaignOracleSample;  // as sdpacheck fuzz
  CampaignStats stats(boundary_classes);  // counted for the report as sdpacheck fuzz counts
  o.summarize = stats.summarizer();
  o.on_summary = stats.summary_collector(f.name());
  const double cpu0 = own_cpu_seconds();
  TargetRun r = run_target_campaign(*target, *w.reference, w.generators("default"), o);
  const double command_cpu = own_cpu_seconds() - cpu0;
  double total = r.timing.generate + r.timing.oracle + r.timing.kernels + r.timing.compare;
  std::printf("%-10s %-10s %8lld cases %8.0f cases/s   generate %4.1f%%  oracle %4.1f%%  kernels %4.1f%%  compare %4.1f%%",
              r.target.c_str(), jobs == 0 ? "in-process" : ("jobs=" + std::to_string(jobs)).c_str(),
              static_cast<long long>(r.cases), r.cases / r.seconds,
              100 * r.timing.generate / total, 100 * r.timing.oracle / total,
              100 * r.timing.kernels / total, 100 * r.timing.compare / total);
  // With workers: the command's own CPU per case, the serial work that caps
  // how many workers one command can feed (README, "Every core: --jobs").
  if (jobs > 0 && r.cases > 0) std::printf("   command %.1f us/case", 1e6 * command_cpu / r.cases);
  std::printf("\n");
}

// Cases and seconds until the first failure of each self-test mutant,
// shrinking included.
void time_to_detect(cli::Wiring& w, const TargetFactory& f) {
  for (const auto& m : f.mutants()) {
    const std::string& mutant = m.name;
    auto target = f.make(resolve_options(f, m.options));
    CampaignOptions o;
    o.seed = 7;
    o.cases = 5000;
    o.stop_after = 1;
    TargetRun r = run_target_campaign(*target, *w.reference, w.generators("default"), o);
    if (r.findings.empty())
      std::printf("%-10s mutant %-28s no finding in %lld cases\n", f.name().c_str(), mutant.c_str(),
                  static_cast<long long>(r.cases));
    else
      std::printf("%-10s mutant %-28s first finding at case %5lld, %.3f s: %s\n", f.name().c_str(),
                  mutant.c_str(), static_cast<long long>(r.cases), r.seconds,
                  r.findings[0].verdict.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  int64_t cases = argc > 1 ? std::atoll(argv[1]) : 5000;
  cli::Wiring w = cli::make_wiring();
  std::string mode = argc > 2 ? argv[2] : "";
  if (mode == "time-to-detect") {
    std::set<std::string> only(argv + std::min(argc, 3), argv + argc);
    for (const auto* f : w.registry.all())
      if (only.empty() || only.count(f->name())) time_to_detect(w, *f);
    return 0;
  }
  if (mode == "in-process" || mode == "isolated" || mode.rfind("jobs=", 0) == 0) {
    int jobs = mode == "in-process" ? 0 : mode == "isolated" ? 1 : std::atoi(mode.c_str() + 5);
    std::set<std::string> only(argv + std::min(argc, 3), argv + argc);
    for (const auto* f : w.registry.all())
      if (only.empty() || only.count(f->name())) throughput(w, *f, cases, std::max(jobs, 0));
    return 0;
  }
  for (const auto* f : w.registry.all()) throughput(w, *f, cases, 0);
  for (const auto* f : w.registry.all()) time_to_detect(w, *f);
  std::printf("peak resident memory: %.1f MiB\n", peak_rss_mib());
  return 0;
}
