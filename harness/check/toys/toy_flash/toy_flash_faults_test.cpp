// Worker isolation through the real campaign: the flash toy's kernels
// segfault, abort, hang or allocate without bound for Lq >= 5; each is a
// finding (crash naming the signal, timeout, oom) with a shrunk case file
// and a crash file, and the campaign's other cases still run and count.
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "generators/case_gen.h"
#include "harness/case/case_json.h"
#include "harness/campaign/campaign.h"
#include "harness/campaign/campaign_state.h"
#include "harness/campaign/explain.h"
#include "harness/campaign/gate.h"
#include "harness/campaign/replay.h"
#include "harness/campaign/rewrite_run.h"
#include "harness/check/toys/toy_flash/fault_kernels.h"
#include "harness/check/toys/toy_targets.h"
#include "harness/io/corpus.h"
#include "oracles/dual_oracle.h"

namespace sdpa::toy_flash {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  TargetRegistry registry;
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  Fixture() { register_toy_targets(registry); }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

CaseGeneratorFactory generators() {
  return [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); };
}

// The default generators, each draw of a case counted in *draws.
CaseGeneratorFactory counting_generators(const std::shared_ptr<int64_t>& draws) {
  return [draws](const CaseSpace& s) {
    rc::Gen<Case> inner = gen_case(GenPolicy::defaults(), s);
    return rc::Gen<Case>([draws, inner](const rc::Random& random, int size) {
      ++*draws;
      return inner(random, size);
    });
  };
}

std::string scratch(const std::string& name) {
  fs::path p = fs::path(testing::TempDir()) / ("toy_flash_faults_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  return p.string();
}

// Seconds and MiB: bound the hang and the allocation.
constexpr WorkerLimits kLimits{0.25, 96};

TargetRun isolated_campaign(const Options& options, const std::string& dir, int64_t cases,
                            WorkerLimits limits = kLimits) {
  auto target = fixture().registry.make("toy-flash", options);
  CampaignOptions o;
  o.seed = 20261201;
  o.cases = cases;
  o.max_shrink_steps = 60;
  o.isolate = true;
  o.limits = limits;
  o.corpus_dir = dir + "/corpus";
  o.crash_dir = dir + "/crashes";
  return run_target_campaign(*target, *fixture().reference, generators(), o);
}

// Runs replayed cases on any toy target, in a worker with the campaign's limits.
std::unique_ptr<IsolatedCases> replay_worker(WorkerLimits limits = kLimits) {
  auto made = std::make_shared<std::map<std::pair<std::string, Options>, std::unique_ptr<Target>>>();
  auto target_for = [made](const std::string& name, const Options& options) -> const Target& {
    auto& t = (*made)[{name, options}];
    if (!t) t = fixture().registry.make(name, options);
    return *t;
  };
  return std::make_unique<IsolatedCases>(target_for, *fixture().reference, limits);
}

int64_t largest_lq(const Case& c) {
  int64_t lq = 0;
  for (const auto& at : c.runs()) lq = std::max(lq, concrete_sizes(c, at).Lq);
  return lq;
}

void expect_finding(const std::string& fault, const std::string& verdict, const std::string& detail,
                    WorkerLimits limits = kLimits) {
  std::string dir = scratch(fault);
  const int64_t cases = 12;
  TargetRun r = isolated_campaign({{"fault", fault}}, dir, cases, limits);
  EXPECT_EQ(r.cases, cases);  // every case ran and is counted
  EXPECT_GT(r.verdicts[verdict], 0);
  EXPECT_GT(r.verdicts["pass"] + r.verdicts["rejected"], 0) << "no case below Lq 5 ran";
  EXPECT_GE(r.worker_deaths, 1);
  ASSERT_EQ(r.findings.size(), 1u);
  const WrittenFinding& w = r.findings[0];
  EXPECT_EQ(w.verdict, verdict);
  EXPECT_NE(w.finding.detail.find(detail), std::string::npos) << w.finding.detail;
  EXPECT_EQ(largest_lq(w.shrunk), kFaultLq) << case_summary(w.shrunk);  // shrunk to the threshold
  CorpusEntry e = read_corpus_file(w.file);
  EXPECT_EQ(e.expect, verdict);
  ASSERT_EQ(static_cast<int64_t>(r.crash_files.size()), r.verdicts[verdict]);
  for (const auto& path : r.crash_files) EXPECT_EQ(read_corpus_file(path).expect, verdict) << path;
  // Replayed in a worker, the shrunk file and every crash file show their verdict again.
  std::vector<std::string> files = r.crash_files;
  files.push_back(w.file);
  ReplayTally t = replay_files(files, fixture().registry, *fixture().reference, {}, false,
                               [](const std::string& file, const ReplayOutcome* o, const std::string& error) {
                                 EXPECT_TRUE(o && o->status == ReplayStatus::as_expected) << file << error;
                               },
                               replay_worker(limits).get());
  EXPECT_EQ(t.as_expected, static_cast<int64_t>(files.size()));
  // explain names the death and does not run the case in its own process
  // (in a worker with the campaign's limits: under the default 0.25 s a
  // loaded machine's 96 MiB allocation would end as a timeout).
  auto isolated = replay_worker(limits);
  auto told = explain_worker_death(read_corpus_file(w.file), w.file, fixture().registry, *fixture().reference,
                                   *isolated);
  ASSERT_TRUE(told.has_value());
  EXPECT_NE(told->find("verdict: " + verdict), std::string::npos) << *told;
  EXPECT_NE(told->find(detail), std::string::npos) << *told;
  EXPECT_NE(told->find("not taken apart"), std::string::npos) << *told;
  // repro's run of the rewrite reports the death too, and does not run the case here.
  RewriteRun rewrite = run_rewrite(read_corpus_file(w.file), fixture().registry, *fixture().reference, isolated.get());
  EXPECT_TRUE(rewrite.applies);
  EXPECT_TRUE(rewrite.runs.empty());
  EXPECT_NE(rewrite.error.find("ended sdpacheck's worker process"), std::string::npos) << rewrite.error;
  EXPECT_NE(rewrite.error.find(detail), std::string::npos) << rewrite.error;
  fs::remove_all(dir);
}

TEST(ToyFlashFaults, ASegfaultIsACrashNamingTheSignal) { expect_finding("segfault", "crash", "SIGSEGV"); }

// A crash that does not come back when its case is checked again (here: the
// first fault in any process only) is kept as first seen, unshrunk, with its
// verdict; it is never written as the verdict of the run that passed.
TEST(ToyFlashFaults, ACrashThatDoesNotComeBackIsKeptAsFirstSeen) {
  const std::string dir = scratch("segfault-once");
  const std::string once = dir + "/once";
  ASSERT_EQ(setenv("TOY_FLASH_ONCE_FILE", once.c_str(), 1), 0);
  TargetRun r = isolated_campaign({{"fault", "segfault-once"}}, dir, 12);
  unsetenv("TOY_FLASH_ONCE_FILE");
  EXPECT_GE(r.verdicts["crash"], 1);
  ASSERT_EQ(r.findings.size(), 1u);
  const WrittenFinding& w = r.findings[0];
  EXPECT_EQ(w.verdict, "crash");
  EXPECT_EQ(w.shrink_steps, 0);
  EXPECT_NE(w.finding.detail.find("SIGSEGV"), std::string::npos) << w.finding.detail;
  EXPECT_GE(largest_lq(w.shrunk), kFaultLq) << case_summary(w.shrunk);
  CorpusEntry e = read_corpus_file(w.file);
  EXPECT_EQ(e.expect, "crash");
  EXPECT_NE(e.provenance.at("notes").get<std::string>().find("not shrunk"), std::string::npos);
}
TEST(ToyFlashFaults, AnAbortIsACrashNamingTheSignal) { expect_finding("abort", "crash", "SIGABRT"); }
TEST(ToyFlashFaults, AnEndlessLoopIsATimeout) { expect_finding("hang", "timeout", "time limit of 0.25 s"); }
// The allocation ends by itself, at the memory limit: a time limit well past
// it keeps a machine whose page faults are slow (a loaded VM filled 96 MiB
// in more than 0.25 s) from reading it as a hang.
TEST(ToyFlashFaults, UnboundedAllocationIsOom) { expect_finding("alloc", "oom", "96 MiB", {5.0, 96}); }

// The gate records decisions in a worker: a case that ends it is recorded
// with its verdict, and the recording goes on with the next case.
TEST(ToyFlashFaults, TheGateRecordsACrashingCaseAndGoesOn) {
  auto target = fixture().registry.make("toy-flash", {{"fault", "segfault"}});
  auto isolated = replay_worker();
  DecisionsFile d = record_decisions(*target, *fixture().reference, generators(), 20261201, 12, 100, isolated.get());
  std::set<int64_t> indices;
  std::map<std::string, int> verdicts;
  for (const auto& x : d.decisions) {
    indices.insert(x.index);
    ++verdicts[x.verdict];
    if (x.verdict == "crash") {
      EXPECT_GE(largest_lq(x.c), kFaultLq) << case_summary(x.c);
    }
  }
  EXPECT_EQ(indices.size(), 12u);
  EXPECT_GT(verdicts["crash"], 0);
  EXPECT_GT(verdicts["pass"] + verdicts["rejected"], 0);
}

// Run in a worker, a campaign finds what it finds in-process, case by case.
TEST(ToyFlashFaults, IsolationChangesNoResult) {
  auto target = fixture().registry.make("toy-flash", {{"guard", "unguarded"}});
  CampaignOptions o;
  o.seed = 5;
  o.cases = 150;
  o.isolate = true;
  TargetRun isolated = run_target_campaign(*target, *fixture().reference, generators(), o);
  o.isolate = false;
  TargetRun in_process = run_target_campaign(*target, *fixture().reference, generators(), o);
  EXPECT_EQ(isolated.verdicts, in_process.verdicts);
  EXPECT_EQ(isolated.guard_rules, in_process.guard_rules);
  ASSERT_EQ(isolated.findings.size(), in_process.findings.size());
  ASSERT_FALSE(isolated.findings.empty());
  for (size_t i = 0; i < isolated.findings.size(); ++i) {
    EXPECT_EQ(isolated.findings[i].signature, in_process.findings[i].signature);
    EXPECT_EQ(case_summary(isolated.findings[i].shrunk), case_summary(in_process.findings[i].shrunk));
    EXPECT_EQ(isolated.findings[i].graph_after, in_process.findings[i].graph_after);
    EXPECT_EQ(finding_to_json(isolated.findings[i].finding), finding_to_json(in_process.findings[i].finding));
  }
  EXPECT_EQ(isolated.worker_deaths, 0);
}

// A campaign stopped between cases resumes from its last checkpoint state
// (through its JSON text, as the checkpoint file holds it) to the run it
// would have made without stopping: no finding lost or doubled.
TEST(CampaignResume, AStoppedCampaignEndsWithTheSameRun) {
  auto target = fixture().registry.make("toy-flash", {{"guard", "unguarded"}});
  CampaignOptions o;
  o.seed = 5;
  o.cases = 120;
  o.isolate = true;
  TargetRun whole = run_target_campaign(*target, *fixture().reference, generators(), o);
  ASSERT_FALSE(whole.findings.empty());
  for (int stop_at : {0, 1, 37, 90}) {
    nlohmann::json state;
    int polled = 0;
    CampaignOptions first = o;
    first.checkpoint = [&](const TargetRun&, const nlohmann::json& s) { state = s; };
    first.stop_requested = [&] { return polled++ == stop_at; };
    EXPECT_TRUE(run_target_campaign(*target, *fixture().reference, generators(), first).interrupted);
    CampaignOptions rest = o;
    rest.resume = nlohmann::json::parse(state.dump());
    TargetRun resumed = run_target_campaign(*target, *fixture().reference, generators(), rest);
    EXPECT_FALSE(resumed.interrupted);
    EXPECT_EQ(resumed.cases, whole.cases) << "stopped at " << stop_at;
    EXPECT_EQ(resumed.verdicts, whole.verdicts);
    EXPECT_EQ(resumed.guard_rules, whole.guard_rules);
    EXPECT_EQ(resumed.duplicates, whole.duplicates);
    ASSERT_EQ(resumed.findings.size(), whole.findings.size());
    for (size_t i = 0; i < whole.findings.size(); ++i) {
      EXPECT_EQ(resumed.findings[i].signature, whole.findings[i].signature);
      EXPECT_EQ(resumed.findings[i].iteration, whole.findings[i].iteration);
      EXPECT_EQ(case_summary(resumed.findings[i].shrunk), case_summary(whole.findings[i].shrunk));
    }
  }
}

}  // namespace
}  // namespace sdpa::toy_flash

namespace sdpa::toy_flash {
namespace {

// The run as a campaign records it, without the clock.
nlohmann::json recorded(const TargetRun& r) {
  nlohmann::json j = target_run_to_json(r);
  j.erase("timing");
  j.erase("seconds");
  return j;
}

std::string without(std::string text, const std::string& dir) {
  for (size_t at; (at = text.find(dir)) != std::string::npos;) text.replace(at, dir.size(), "DIR");
  return text;
}

// A campaign of `cases` cases from `seed`, in process or with `jobs` workers.
CampaignOptions campaign_options(uint64_t seed, int64_t cases, int max_shrink_steps, bool isolate, int jobs) {
  CampaignOptions o;
  o.seed = seed;
  o.cases = cases;
  o.max_shrink_steps = max_shrink_steps;
  o.isolate = isolate;
  o.jobs = jobs;
  return o;
}

TargetRun with_jobs(const Options& options, int jobs, int64_t stop_after, const std::string& dir) {
  auto target = fixture().registry.make("toy-flash", options);
  CampaignOptions o = campaign_options(11, 90, 60, true, jobs);
  o.stop_after = stop_after;
  o.limits = {0.25, 96};
  o.corpus_dir = dir + "/corpus";
  o.crash_dir = dir + "/crashes";
  return run_target_campaign(*target, *fixture().reference, generators(), o);
}

// Cases checked side by side are taken in iteration order: the run, its
// findings, its corpus files and its crash files are those of one worker,
// with findings to shrink, a worker that dies, and a stop after findings.
TEST(CampaignJobs, ThreeWorkersRecordWhatOneRecords) {
  const std::vector<std::pair<Options, int64_t>> runs = {
      {{{"guard", "unguarded"}}, 0}, {{{"fault", "segfault"}}, 0}, {{{"guard", "unguarded"}}, 1}};
  for (const auto& [options, stop_after] : runs) {
    std::string one = scratch("jobs1"), three = scratch("jobs3");
    TargetRun a = with_jobs(options, 1, stop_after, one);
    TargetRun b = with_jobs(options, 3, stop_after, three);
    ASSERT_FALSE(a.findings.empty());
    // File paths differ only in the folder: compare the rest, then the files.
    EXPECT_EQ(without(recorded(a).dump(), one), without(recorded(b).dump(), three))
        << options.begin()->second << " stop_after " << stop_after;
    for (const auto& sub : {"corpus", "crashes"}) {
      if (!fs::exists(fs::path(one) / sub)) continue;
      for (const auto& f : fs::recursive_directory_iterator(fs::path(one) / sub)) {
        if (!f.is_regular_file()) continue;
        fs::path twin = fs::path(three) / fs::relative(f.path(), one);
        ASSERT_TRUE(fs::exists(twin)) << twin;
        std::ifstream x(f.path()), y(twin);
        std::string bx((std::istreambuf_iterator<char>(x)), {}), by((std::istreambuf_iterator<char>(y)), {});
        EXPECT_EQ(bx, by) << twin;
      }
    }
    if (stop_after > 0) {
      EXPECT_LT(b.next_iteration, 90);
    }
    // A finding whose case finishes is taken apart by explain, not reported as a death.
    if (options.count("guard")) {
      EXPECT_FALSE(explain_worker_death(read_corpus_file(a.findings[0].file), a.findings[0].file,
                                        fixture().registry, *fixture().reference, *replay_worker()));
    }
    fs::remove_all(one);
    fs::remove_all(three);
  }
}

// Workers draw each iteration's case themselves: the cases a campaign
// counts, and their results, are those this process draws and checks.
TEST(CampaignJobs, WorkersDrawTheCasesThisProcessDraws) {
  auto target = fixture().registry.make("toy-flash", {{"guard", "unguarded"}});
  auto cases_seen = [&](bool isolate, int jobs) {
    CampaignOptions o = campaign_options(5, 60, 0, isolate, jobs);
    std::vector<std::string> seen;
    o.on_case = [&](const Case& c, const CaseResult& r) {
      seen.push_back(case_to_json(c).dump() + " " + verdict_name(r.verdict));
    };
    run_target_campaign(*target, *fixture().reference, generators(), o);
    return seen;
  };
  const std::vector<std::string> here = cases_seen(false, 1);
  ASSERT_EQ(here.size(), 60u);
  EXPECT_EQ(cases_seen(true, 2), here);
  EXPECT_EQ(cases_seen(true, 1), here);
}

// In process, the shard's cases are drawn kCasesDrawnAhead at a time, each
// run before its first case is checked, and never past the campaign's end.
// (The sound guard: a case with a new finding is drawn once more, for its
// shrink tree, which would add to the count.)
TEST(CampaignInProcess, DrawsTheShardsNextCasesInARunBeforeCheckingOne) {
  auto target = fixture().registry.make("toy-flash", {});
  auto draws = std::make_shared<int64_t>(0);
  const CaseGeneratorFactory counting = counting_generators(draws);
  CampaignOptions o = campaign_options(5, 41, 0, false, 1);
  o.shard = 1;
  o.shards = 2;  // iterations 1, 3, ..., 39: 20 cases
  std::vector<int64_t> drawn_when_checked;
  o.on_case = [&](const Case&, const CaseResult&) { drawn_when_checked.push_back(*draws); };
  run_target_campaign(*target, *fixture().reference, counting, o);
  ASSERT_EQ(drawn_when_checked.size(), 20u);
  EXPECT_EQ(drawn_when_checked[0], kCasesDrawnAhead);
  EXPECT_EQ(drawn_when_checked[kCasesDrawnAhead - 1], kCasesDrawnAhead);
  EXPECT_EQ(drawn_when_checked[kCasesDrawnAhead], 20);
  EXPECT_EQ(drawn_when_checked.back(), 20);
}

// A case drawn in a run keeps no shrink tree (freed at the draw, while in
// cache): a failing case whose finding's signature is new is drawn once
// more to be shrunk, and no other is.
TEST(CampaignInProcess, ACaseWithANewFindingIsDrawnAgainForItsShrinkTree) {
  auto target = fixture().registry.make("toy-flash", {{"guard", "unguarded"}});
  auto draws = std::make_shared<int64_t>(0);
  const CaseGeneratorFactory counting = counting_generators(draws);
  CampaignOptions o = campaign_options(5, 40, 0, false, 1);
  int64_t failures = 0;
  std::set<std::string> signatures;
  o.on_case = [&](const Case&, const CaseResult& r) {
    if (!is_failure(r.verdict)) return;
    ++failures;
    signatures.insert(r.primary()->signature());
  };
  run_target_campaign(*target, *fixture().reference, counting, o);
  ASSERT_FALSE(signatures.empty());
  ASSERT_GT(failures, static_cast<int64_t>(signatures.size())) << "some failures repeat a signature";
  EXPECT_EQ(*draws, 40 + static_cast<int64_t>(signatures.size()));
}

// Drawn in runs, in process or by workers, each iteration's case is the one
// its seed and size give drawn on its own (size: the iteration mod
// max_size + 1), in iteration order, on a shard too.
TEST(CampaignJobs, CasesDrawnInRunsAreThoseDrawnOneAtATime) {
  auto target = fixture().registry.make("toy-flash", {{"guard", "unguarded"}});
  const rc::Gen<Case> gen = generators()(target->case_space());
  for (const auto& [isolate, jobs] : std::vector<std::pair<bool, int>>{{false, 1}, {true, 1}, {true, 2}}) {
    CampaignOptions o = campaign_options(9, 70, 0, isolate, jobs);
    o.shard = 1;
    o.shards = 3;
    std::vector<std::string> seen;
    o.on_case = [&](const Case& c, const CaseResult&) { seen.push_back(case_to_json(c).dump()); };
    run_target_campaign(*target, *fixture().reference, generators(), o);
    std::vector<std::string> alone;
    for (int64_t i = o.shard; i < o.cases; i += o.shards) {
      rc::Random random(case_seed(o.seed, target->name(), i));
      alone.push_back(case_to_json(gen(random, static_cast<int>(i % (o.max_size + 1))).value()).dump());
    }
    EXPECT_EQ(seen, alone) << "isolate " << isolate << " jobs " << jobs;
  }
}

// A worker draws the cases of the requests it holds in a run (up to
// kCasesDrawnAhead), each once: some case is checked after later ones were
// drawn, and one worker draws no case twice.
TEST(CampaignJobs, AWorkerDrawsTheCasesItHoldsInARun) {
  auto target = fixture().registry.make("toy-flash", {{"guard", "unguarded"}});
  auto draws = std::make_shared<int64_t>(0);  // in the worker: its own count
  const CaseGeneratorFactory counting = counting_generators(draws);
  CampaignOptions o = campaign_options(5, 60, 0, true, 1);
  o.summarize = [draws](const Case&) { return std::to_string(*draws); };  // in the worker, after the check
  std::vector<int64_t> drawn_when_checked;
  o.on_summary = [&](const std::string& s, const CaseResult&) { drawn_when_checked.push_back(std::stoll(s)); };
  run_target_campaign(*target, *fixture().reference, counting, o);
  ASSERT_EQ(drawn_when_checked.size(), 60u);
  int64_t most_ahead = 0;
  for (size_t k = 0; k < drawn_when_checked.size(); ++k) {
    const int64_t ahead = drawn_when_checked[k] - static_cast<int64_t>(k + 1);
    EXPECT_GE(ahead, 0) << k;
    EXPECT_LT(ahead, kCasesDrawnAhead) << k;
    most_ahead = std::max(most_ahead, ahead);
  }
  EXPECT_GT(most_ahead, 0);
  EXPECT_EQ(drawn_when_checked.back(), 60);
}

// With summarize and on_summary and no on_case, a worker sends back each
// case's summary and variant instead of the case: the command counts what
// it would count from the cases themselves.
TEST(CampaignJobs, WorkersSummarizeTheCasesTheyDraw) {
  auto target = fixture().registry.make("toy-flash", {{"guard", "unguarded"}});
  // Cases whose decisions came without the node they name: counted_result_to_bytes leaves it out.
  int counted = 0;
  auto summaries = [&](bool isolate, int jobs, TargetRun* run) {
    CampaignOptions o = campaign_options(5, 60, 0, isolate, jobs);
    std::vector<std::string> seen;
    o.summarize = [](const Case& c) { return case_to_json(c).dump(); };
    o.on_summary = [&](const std::string& s, const CaseResult& r) {
      seen.push_back(s + " " + verdict_name(r.verdict));
      counted += !r.decisions.empty() && r.decisions[0].node.empty();
    };
    *run = run_target_campaign(*target, *fixture().reference, generators(), o);
    return seen;
  };
  TargetRun here_run, two_run;
  const std::vector<std::string> here = summaries(false, 1, &here_run);
  ASSERT_EQ(here.size(), 60u);
  EXPECT_EQ(counted, 0);
  EXPECT_EQ(summaries(true, 2, &two_run), here);
  int64_t not_recorded = 0;
  for (const auto& [name, n] : here_run.verdicts) not_recorded += is_failure(*parse_verdict(name)) ? 0 : n;
  EXPECT_EQ(counted, not_recorded);
  EXPECT_GT(counted, 0);
  EXPECT_EQ(two_run.verdicts, here_run.verdicts);
  EXPECT_EQ(two_run.guard_rules, here_run.guard_rules);
  ASSERT_EQ(two_run.variants.size(), here_run.variants.size());
  for (const auto& [name, v] : here_run.variants) {
    EXPECT_EQ(two_run.variants.at(name).cases, v.cases) << name;
    EXPECT_EQ(two_run.variants.at(name).verdicts, v.verdicts) << name;
  }
  // An empty summary is a summary too: the command passes it on, it does not make its own from no case.
  CampaignOptions empties = campaign_options(5, 10, 0, true, 2);
  int empty_summaries = 0;
  empties.summarize = [](const Case& c) {  // "no case" had the command summarized a case it was not sent
    return case_to_json(c) == case_to_json(Case{}) ? std::string("no case") : std::string();
  };
  empties.on_summary = [&](const std::string& s, const CaseResult&) { empty_summaries += s.empty(); };
  run_target_campaign(*target, *fixture().reference, generators(), empties);
  EXPECT_EQ(empty_summaries, 10);
  // One hook without the other is a programming error, not silently no counts.
  CampaignOptions half = campaign_options(5, 1, 0, false, 1);
  half.summarize = [](const Case&) { return std::string(); };
  EXPECT_THROW(run_target_campaign(*target, *fixture().reference, generators(), half), std::invalid_argument);
}

}  // namespace
}  // namespace sdpa::toy_flash
