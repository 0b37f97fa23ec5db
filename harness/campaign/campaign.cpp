#include "harness/campaign/campaign.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "harness/campaign/campaign_state.h"
#include "harness/case/case_json.h"
#include "harness/case/case_validate.h"
#include "harness/io/atomic_write.h"
#include "harness/io/json_reader.h"
#include "harness/isolate/isolated_cases.h"
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

class TargetCampaign {
 public:
  TargetCampaign(const Target& t, const ReferenceModel& r, const CaseGeneratorFactory& g,
                 const CampaignOptions& o)
      : target_(t), ref_(r), gen_(g(t.case_space())), opt_(o) {
    if (static_cast<bool>(o.summarize) != static_cast<bool>(o.on_summary))
      throw std::invalid_argument("CampaignOptions: summarize and on_summary go together");
    run_.target = t.name();
    run_.options = t.options();
    if (o.isolate)
      isolated_ = std::make_unique<IsolatedCases>(
          [this](const std::string&, const Options&) -> const Target& { return target_; }, r, o.limits,
          std::max(o.jobs, 1),
          [this](uint64_t seed, int size, const CheckOptions& options) {
            // In the worker: this campaign as it was forked. The case goes
            // back only to an on_case hook; counting needs its summary.
            Generated g = drawn(seed, size);
            IsolatedCases::Drawn d;
            d.result = check_here(g.c, options);
            d.result.timing.generate += g.gen_seconds;
            d.variant = g.c.variant;
            if (opt_.summarize) d.summary = opt_.summarize(g.c);
            if (opt_.on_case) d.c = std::move(g.c);
            // A case the command will only count (one_case) goes back without what counting does not read.
            d.counted = !opt_.on_case && !worth_recording(d.result.verdict);
            return d;
          },
          // In the worker: the held requests' cases drawn in a run, as in process.
          IsolatedCases::DrawAhead{[this](const std::vector<std::pair<uint64_t, int>>& draws) { draw_run(draws); },
                                   static_cast<size_t>(kCasesDrawnAhead)});
  }

  TargetRun run() {
    int64_t first = opt_.resume.is_null() ? opt_.shard : restore(opt_.resume);
    const double before = run_.seconds;  // spent before a resume
    auto start = Clock::now();
    auto last_progress = start, last_checkpoint = start;
    auto elapsed = [&] { return before + std::chrono::duration<double>(Clock::now() - start).count(); };
    int64_t i = first;
    for (; i < opt_.cases; i += opt_.shards) {
      if (opt_.time_limit > 0 && elapsed() >= opt_.time_limit) break;
      if (opt_.stop_after > 0 && static_cast<int64_t>(run_.findings.size()) >= opt_.stop_after) break;
      if (opt_.stop_requested && opt_.stop_requested()) {
        if (opt_.checkpoint) checkpoint(i, elapsed());  // resumes at this case, not yet run
        run_.interrupted = true;
        break;
      }
      const size_t found = run_.findings.size() + run_.crash_files.size();
      one_case(i, take(i));
      const bool new_file = run_.findings.size() + run_.crash_files.size() != found;
      if (opt_.checkpoint && (new_file || Clock::now() - last_checkpoint > std::chrono::duration<double>(
                                                                               opt_.checkpoint_seconds))) {
        last_checkpoint = Clock::now();
        checkpoint(i + opt_.shards, elapsed());
      }
      if (opt_.progress && Clock::now() - last_progress > std::chrono::milliseconds(500)) {
        last_progress = Clock::now();
        opt_.progress(progress_line(elapsed()));
      }
    }
    run_.seconds = elapsed();
    run_.next_iteration = std::min(i, opt_.cases);
    if (opt_.progress) opt_.progress(progress_line(run_.seconds));
    return run_;
  }

 private:
  // What a campaign resumes from: the next iteration, the run so far and
  // the signatures seen, so no finding is lost or found twice.
  void checkpoint(int64_t next, double seconds) {
    send_queued();
    TargetRun so_far = run_;
    so_far.seconds = seconds;
    so_far.next_iteration = std::min(next, opt_.cases);
    nlohmann::json state = {{"target", run_.target},
                            {"next_iteration", next},
                            {"run", target_run_to_json(so_far)},
                            {"seen", seen_},
                            {"seen_raw", seen_raw_}};
    opt_.checkpoint(so_far, state);
  }

  int64_t restore(const nlohmann::json& state) {
    const std::string source = "checkpoint of target " + run_.target;
    if (state.value("target", std::string()) != run_.target)
      throw InputError(source + ": the state is of target '" + state.value("target", std::string()) + "'");
    run_ = target_run_from_json(state.at("run"), source);
    run_.interrupted = false;
    seen_ = state.at("seen").get<std::set<std::string>>();
    seen_raw_ = state.at("seen_raw").get<std::set<std::string>>();
    return state.at("next_iteration").get<int64_t>();
  }

  std::string progress_line(double elapsed) const {
    std::ostringstream o;
    o << "[" << run_.target << "] " << run_.cases << " cases, "
      << static_cast<int64_t>(run_.cases / std::max(elapsed, 1e-9)) << "/s, "
      << run_.findings.size() << " distinct findings";
    return o.str();
  }

  CaseResult check(const Case& c) { return check(c, opt_.check); }

  CaseResult check(const Case& c, const CheckOptions& options) {
    if (auto invalid = invalid_case(c)) return *invalid;
    return evaluate(c, options);
  }

  // check, in this process whatever the campaign's isolation (a worker
  // checking the case it drew).
  CaseResult check_here(const Case& c, const CheckOptions& options) const {
    if (auto invalid = invalid_case(c)) return *invalid;
    return run_case(target_, ref_, c, options);
  }

  static std::optional<CaseResult> invalid_case(const Case& c) {
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
    return std::nullopt;
  }

  // run_case, in the worker when isolated; a case that ended the worker
  // gets the target's defect class here, as the checker gives it.
  CaseResult evaluate(const Case& c, const CheckOptions& o) {
    if (!isolated_) return run_case(target_, ref_, c, o);
    CaseResult r = isolated_->run(run_.target, run_.options, c, o);
    if (isolated_->last_died()) died(c, r);
    return r;
  }

  void died(const Case& c, CaseResult& r) {
    ++run_.worker_deaths;
    for (auto& f : r.findings) f.failure_class = target_.failure_class(c);
  }

  // A generated case: its shrink tree (none for a case drawn in a run, here
  // or by a worker, until it is to be shrunk), and its result once checked.
  struct Generated {
    std::optional<rc::Shrinkable<Case>> shrinkable;
    Case c;  // default when a worker sent only its variant and summary
    std::string variant;
    std::optional<std::string> summary;  // none: summarize, if set, is called on c
    double gen_seconds = 0;
    CaseResult result;
    bool died = false;  // the case ended its worker
  };

  int size_of(int64_t i) const { return static_cast<int>(i % (opt_.max_size + 1)); }

  Generated generate(int64_t i) const { return draw(case_seed(opt_.seed, run_.target, i), size_of(i)); }

  Generated draw(uint64_t seed, int size) const {
    auto t0 = Clock::now();
    rc::Random random(seed);
    Generated g;
    g.shrinkable = gen_(random, size);
    g.c = g.shrinkable->value();
    g.variant = g.c.variant;
    g.gen_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return g;
  }

  // Iteration i, generated and checked. In process: now. Isolated: the
  // pool's workers run the next cases of this shard ahead while this one
  // is counted and shrunk; results are taken in iteration order, so what
  // the campaign records does not depend on how many run at once.
  Generated take(int64_t i) {
    if (!isolated_) {
      Generated g = drawn_ahead(i);
      g.result = check(g.c);
      return g;
    }
    if (next_submit_ < i) next_submit_ = i;
    submit_ahead();
    // A worker that finishes while case i still runs gets the next case at
    // once: waiting for i first would idle it for the rest of i's time.
    while (ahead_.at(i) == nullptr) {
      IsolatedCases::Ran ran = isolated_->next();
      ahead_.at(ran.tag) = std::make_unique<IsolatedCases::Ran>(std::move(ran));
      submit_ahead();
    }
    auto node = ahead_.extract(i);
    IsolatedCases::Ran& ran = *node.mapped();
    // A case that ended its worker came back without itself: drawn here again.
    Generated g;
    if (ran.died) {
      g = generate(i);
    } else {
      if (ran.drawn) g.c = std::move(*ran.drawn);
      g.variant = std::move(ran.variant);
      g.summary = std::move(ran.summary);
    }
    g.result = std::move(ran.result);
    g.died = ran.died;
    if (g.died) died(g.c, g.result);
    // A counted result has no findings: one this campaign records must not come back so.
    if (ran.counted && worth_recording(g.result.verdict))
      throw std::logic_error(std::string("campaign: a ") + verdict_name(g.result.verdict) +
                             " case came back counted, without its findings");
    submit_ahead();
    return g;
  }

  // In process: iteration i's case, drawn with the shard's next
  // kCasesDrawnAhead - 1 when none is waiting (campaign.h). One draw
  // between two checks took about three times as long as drawing the same
  // case again at once (bench/ROUNDS.md, the seventeenth round).
  Generated drawn_ahead(int64_t i) {
    if (drawn_.empty()) {
      std::vector<std::pair<uint64_t, int>> run;
      for (int64_t j = i; j < opt_.cases && run.size() < static_cast<size_t>(kCasesDrawnAhead); j += opt_.shards)
        run.emplace_back(case_seed(opt_.seed, run_.target, j), size_of(j));
      draw_run(run);
    }
    return drawn(case_seed(opt_.seed, run_.target, i), size_of(i));
  }

  // Draws the cases of `draws` (seed and size each) in a run, at most
  // kCasesDrawnAhead, for drawn() to take in that order. A draw that throws
  // ends the run; but for the first, it throws again when its case is taken.
  void draw_run(const std::vector<std::pair<uint64_t, int>>& draws) {
    drawn_.clear();
    for (const auto& [seed, size] : draws) {
      if (drawn_.size() == static_cast<size_t>(kCasesDrawnAhead)) break;
      try {
        Generated g = draw(seed, size);
        // Freed now, while its nodes are in cache: after the check, freeing
        // it took 2.7% of a campaign. A case that fails draws it again.
        g.shrinkable.reset();
        drawn_.push_back({seed, size, std::move(g)});
      } catch (...) {
        if (drawn_.empty()) throw;
        break;
      }
    }
  }

  // The case of seed and size: the next drawn in the run if it is that one,
  // else drawn now (and the run dropped).
  Generated drawn(uint64_t seed, int size) {
    if (drawn_.empty() || drawn_.front().seed != seed || drawn_.front().size != size) {
      drawn_.clear();
      return draw(seed, size);
    }
    Generated g = std::move(drawn_.front().g);
    drawn_.pop_front();
    return g;
  }

  // Keeps every worker of the pool busy with the shard's next iterations,
  // at most kAheadPerWorker cases per worker past the one awaited (a slow
  // case holds back only that many results, not unbounded memory). A
  // worker draws the iteration's case itself, from the seed and size sent.
  void submit_ahead() {
    constexpr int64_t kAheadPerWorker = 2 * IsolatedCases::kCasesPerWorker;
    const auto room = static_cast<size_t>(kAheadPerWorker * isolated_->jobs());
    while (isolated_->in_flight() < isolated_->capacity() && next_submit_ < opt_.cases && ahead_.size() < room) {
      isolated_->submit_draw(next_submit_, case_seed(opt_.seed, run_.target, next_submit_), size_of(next_submit_),
                             opt_.check);
      ahead_.emplace(next_submit_, nullptr);
      next_submit_ += opt_.shards;
    }
  }

  // The workers get the cases queued for them before the command's own
  // long work (a shrink, a file written and synced), which can outlast
  // what they hold.
  void send_queued() {
    if (isolated_) isolated_->flush();
  }

  bool worth_recording(Verdict v) const {
    return is_failure(v) || (opt_.record_warnings && v == Verdict::missed_rewrite);
  }

  void one_case(int64_t i, Generated g) {
    const Case& c = g.c;
    CaseResult& r = g.result;
    if (g.died) save_crash(c, r, i);
    r.timing.generate += g.gen_seconds;
    run_.iteration_digest += case_seed(opt_.seed, run_.target, i);
    run_.timing += r.timing;
    ++run_.cases;
    ++run_.verdicts[verdict_name(r.verdict)];
    if (opt_.on_case) opt_.on_case(c, r);
    if (opt_.on_summary) opt_.on_summary(g.summary ? *g.summary : opt_.summarize(c), r);
    if (!g.variant.empty() || !r.counters.empty()) {
      VariantRun& v = run_.variants[g.variant.empty() ? "(none)" : g.variant];
      ++v.cases;
      ++v.verdicts[verdict_name(r.verdict)];
      for (const auto& [name, n] : r.counters) v.counters[name] += n;
    }
    for (const auto& d : r.decisions) {
      ++run_.guard_rules[d.deciding_rule];
      if (r.verdict == Verdict::missed_rewrite && !d.rewrite) ++run_.missed_rules[d.deciding_rule];
      if (!d.rewrite && !d.refuted_at.empty()) ++run_.refuted_rules[d.deciding_rule];
    }
    if (!worth_recording(r.verdict)) return;
    const Finding& f = *r.primary();
    // A failure kind seen with this defect class is a duplicate; otherwise
    // shrink it, and the shrunk case's class decides whether it is new.
    if (!seen_raw_.insert(f.signature()).second) {
      ++run_.duplicates;
      return;
    }
    send_queued();
    // A case drawn in a run, here or by a worker, is drawn again for its shrink tree.
    if (!g.shrinkable) g.shrinkable = generate(i).shrinkable;
    record(i, *g.shrinkable, f.failure_key(), r);
  }

  // `first`: the case's result as the campaign saw it.
  void record(int64_t i, const rc::Shrinkable<Case>& s, const std::string& key, const CaseResult& first) {
    // Shrinking cross-checks every candidate: an oracle disagreement on a
    // candidate that otherwise passes is then the same failure, as it is
    // without sampling.
    CheckOptions every = opt_.check;
    every.oracle_sample = 1;
    auto same_failure = [&](const Case& candidate) {
      CaseResult r = check(candidate, every);
      const Finding* f = r.primary();
      return f && f->failure_key() == key;
    };
    auto [shrunk, steps] = shrink_case(s, same_failure, opt_.max_shrink_steps);
    CheckOptions keep = every;
    keep.keep_graphs = true;
    CaseResult final_result = evaluate(shrunk, keep);
    const Finding* f = final_result.primary();
    std::string notes = "shrunk by sdpacheck fuzz";
    if (!f || f->failure_key() != key) {
      // The failure did not come back on the check after shrinking (a
      // timeout or oom near its limit, a crash that depends on the
      // process's state): the case is kept as first seen, unshrunk, with
      // the result it had then.
      shrunk = s.value();
      steps = 0;
      final_result = first;
      f = final_result.primary();
      notes = "did not fail the same way when checked after shrinking: kept as first seen, not shrunk";
    }
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
    if (!opt_.corpus_dir.empty()) w.file = write(shrunk, final_result, i, notes);
    run_.findings.push_back(w);
  }

  std::string write(const Case& c, const CaseResult& r, int64_t i, const std::string& notes) {
    return write_corpus_entry(opt_.corpus_dir, entry(c, r, i, notes),
                              r.primary() ? r.primary()->signature() : "");
  }

  // The case as it ended the worker, unshrunk: kept even if shrinking or
  // the campaign does not finish.
  void save_crash(const Case& c, const CaseResult& r, int64_t i) {
    send_queued();
    if (opt_.crash_dir.empty()) return;
    std::string text = corpus_to_json(entry(c, r, i, "ended an sdpacheck fuzz worker; not shrunk")).dump(2) + "\n";
    std::string path = opt_.crash_dir + "/crash-" + short_hash(text) + ".json";
    write_file_atomically(path, text);
    run_.crash_files.push_back(path);
  }

  CorpusEntry entry(const Case& c, const CaseResult& r, int64_t i, const std::string& notes) const {
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
                    {"notes", notes}};
    return e;
  }

  const Target& target_;
  const ReferenceModel& ref_;
  rc::Gen<Case> gen_;
  const CampaignOptions& opt_;
  TargetRun run_;
  std::unique_ptr<IsolatedCases> isolated_;  // null: cases run in this process
  int64_t next_submit_ = 0;  // isolated: the next iteration to give the pool
  /// Isolated: iterations given to the pool, with their case and result once back.
  std::map<int64_t, std::unique_ptr<IsolatedCases::Ran>> ahead_;
  // Cases drawn in a run and not yet taken, oldest first: in process, the
  // shard's next iterations; in a worker, those of the requests it holds.
  struct Drawn {
    uint64_t seed;
    int size;
    Generated g;
  };
  std::deque<Drawn> drawn_;
  std::set<std::string> seen_;      // signatures of recorded (shrunk) findings
  std::set<std::string> seen_raw_;  // signatures of failures before shrinking
};

}  // namespace

TargetRun run_target_campaign(const Target& target, const ReferenceModel& reference,
                              const CaseGeneratorFactory& generators, const CampaignOptions& options) {
  return TargetCampaign(target, reference, generators, options).run();
}

}  // namespace sdpa
