#include "harness/campaign/campaign.h"

#include <chrono>
#include <set>
#include <sstream>

#include "harness/case/case_json.h"
#include "harness/case/case_validate.h"
#include "harness/io/json_reader.h"
#include "harness/case/tensor_data.h"

namespace sdpa {

uint64_t case_seed(uint64_t campaign_seed, const std::string& target, int64_t iteration) {
  uint64_t h = splitmix64_mix(campaign_seed ^ fnv1a64(target));
  return splitmix64_mix(h + static_cast<uint64_t>(iteration) * 0x9e3779b97f4a7c15ULL);
}

std::pair<Case, int> shrink_case(const rc::Shrinkable<Case>& failing,
                                 const std::function<bool(const Case&)>& still_fails, int max_steps) {
  rc::Shrinkable<Case> current = failing;
  int steps = 0;
  bool progressed = true;
  while (progressed && steps < max_steps) {
    progressed = false;
    auto shrinks = current.shrinks();
    while (auto next = shrinks.next()) {
      if (++steps > max_steps) break;
      if (still_fails(next->value())) {
        current = *next;
        progressed = true;
        break;
      }
    }
  }
  return {current.value(), steps};
}

namespace {

using Clock = std::chrono::steady_clock;

void add_timing(Timing& total, const Timing& t) {
  total.generate += t.generate;
  total.oracle += t.oracle;
  total.kernels += t.kernels;
  total.compare += t.compare;
}

class TargetCampaign {
 public:
  TargetCampaign(const Target& t, const ReferenceModel& r, const CaseGeneratorFactory& g,
                 const CampaignOptions& o)
      : target_(t), ref_(r), gen_(g(t.case_space())), opt_(o) {
    run_.target = t.name();
    run_.options = t.options();
  }

  TargetRun run() {
    auto start = Clock::now();
    auto last_progress = start;
    for (int64_t i = opt_.shard; i < opt_.cases; i += opt_.shards) {
      double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (opt_.time_limit > 0 && elapsed >= opt_.time_limit) break;
      if (opt_.stop_after > 0 && static_cast<int64_t>(run_.findings.size()) >= opt_.stop_after) break;
      one_case(i);
      if (opt_.progress && Clock::now() - last_progress > std::chrono::milliseconds(500)) {
        last_progress = Clock::now();
        opt_.progress(progress_line(elapsed));
      }
    }
    run_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (opt_.progress) opt_.progress(progress_line(run_.seconds));
    return run_;
  }

 private:
  std::string progress_line(double elapsed) const {
    std::ostringstream o;
    o << "[" << run_.target << "] " << run_.cases << " cases, "
      << static_cast<int64_t>(run_.cases / std::max(elapsed, 1e-9)) << "/s, "
      << run_.findings.size() << " distinct findings";
    return o.str();
  }

  CaseResult check(const Case& c) {
    try {
      validate_case(c);
    } catch (const InputError& e) {
      CaseResult r;
      r.verdict = Verdict::unexpected_error;
      Finding f;
      f.verdict = r.verdict;
      f.check = Check::identity;
      f.detail = std::string("harness: generator produced an invalid case: ") + e.what();
      r.findings.push_back(f);
      return r;
    }
    return run_case(target_, ref_, c, opt_.check);
  }

  bool worth_recording(Verdict v) const {
    return is_failure(v) || (opt_.record_warnings && v == Verdict::missed_rewrite);
  }

  void one_case(int64_t i) {
    auto t0 = Clock::now();
    rc::Random random(case_seed(opt_.seed, run_.target, i));
    int size = static_cast<int>(i % (opt_.max_size + 1));
    rc::Shrinkable<Case> s = gen_(random, size);
    Case c = s.value();
    double gen_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    CaseResult r = check(c);
    r.timing.generate += gen_seconds;
    add_timing(run_.timing, r.timing);
    ++run_.cases;
    ++run_.verdicts[verdict_name(r.verdict)];
    if (opt_.on_case) opt_.on_case(c, r);
    if (!c.variant.empty() || !r.counters.empty()) {
      VariantRun& v = run_.variants[c.variant.empty() ? "(none)" : c.variant];
      ++v.cases;
      ++v.verdicts[verdict_name(r.verdict)];
      for (const auto& [name, n] : r.counters) v.counters[name] += n;
    }
    for (const auto& d : r.decisions) {
      ++run_.guard_rules[d.deciding_rule];
      if (r.verdict == Verdict::missed_rewrite && !d.rewrite) ++run_.missed_rules[d.deciding_rule];
    }
    if (!worth_recording(r.verdict)) return;
    const Finding& f = *r.primary();
    // A failure kind seen with this defect class is a duplicate; otherwise
    // shrink it, and the shrunk case's class decides whether it is new.
    if (!seen_raw_.insert(f.signature()).second) {
      ++run_.duplicates;
      return;
    }
    record(i, s, f.failure_key());
  }

  void record(int64_t i, const rc::Shrinkable<Case>& s, const std::string& key) {
    auto same_failure = [&](const Case& candidate) {
      CaseResult r = check(candidate);
      const Finding* f = r.primary();
      return f && f->failure_key() == key;
    };
    auto [shrunk, steps] = shrink_case(s, same_failure, opt_.max_shrink_steps);
    CheckOptions keep = opt_.check;
    keep.keep_graphs = true;
    CaseResult final_result = run_case(target_, ref_, shrunk, keep);
    const Finding* f = final_result.primary();
    std::string signature = f ? f->signature() : key;
    if (!seen_.insert(signature).second) {
      ++run_.duplicates;
      return;
    }
    WrittenFinding w;
    w.verdict = verdict_name(final_result.verdict);
    w.check = f ? check_name(f->check) : "";
    w.signature = signature;
    w.iteration = i;
    w.shrink_steps = steps;
    w.shrunk = shrunk;
    if (f) w.finding = *f;
    w.graph_before = final_result.graph_before;
    w.graph_after = final_result.graph_after;
    w.summary = case_summary(shrunk);
    if (!opt_.corpus_dir.empty()) w.file = write(shrunk, final_result, i);
    run_.findings.push_back(w);
  }

  std::string write(const Case& c, const CaseResult& r, int64_t i) {
    CorpusEntry e;
    e.target = run_.target;
    e.options = run_.options;
    if (!opt_.check.passes) e.options[kPassesOption] = "off";
    e.expect = verdict_name(r.verdict);
    e.c = c;
    if (const Finding* f = r.primary()) e.finding = finding_to_json(*f);
    e.provenance = {{"version", kVersion},
                    {"seed", opt_.seed},
                    {"iteration", i},
                    {"notes", "shrunk by sdpacheck fuzz"}};
    return write_corpus_entry(opt_.corpus_dir, e, r.primary() ? r.primary()->signature() : "");
  }

  const Target& target_;
  const ReferenceModel& ref_;
  rc::Gen<Case> gen_;
  const CampaignOptions& opt_;
  TargetRun run_;
  std::set<std::string> seen_;      // signatures of recorded (shrunk) findings
  std::set<std::string> seen_raw_;  // signatures of failures before shrinking
};

}  // namespace

TargetRun run_target_campaign(const Target& target, const ReferenceModel& reference,
                              const CaseGeneratorFactory& generators, const CampaignOptions& options) {
  return TargetCampaign(target, reference, generators, options).run();
}

}  // namespace sdpa
