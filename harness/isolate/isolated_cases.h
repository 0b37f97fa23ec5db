#pragma once
/// run_case in a worker process (worker.h): a case that kills, hangs or
/// overruns the worker gets a crash, timeout or oom result, and the next
/// case runs in a new worker. Cases run one at a time (run), or a
/// campaign's run side by side in a WorkerPool (submit_draw and next): the
/// command then sends a seed and a size, not a case, the worker draws the
/// case, and the command reads back its result with the case or only the
/// case's variant and summary (Drawn), so drawing, and with a summary
/// decoding and classifying cases, is not the command's serial work.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/check/check.h"
#include "harness/isolate/worker.h"
#include "harness/isolate/worker_pool.h"

namespace sdpa {

class IsolatedCases {
 public:
  /// Resolves, in the worker, the target a case runs on.
  using TargetLookup = std::function<const Target&(const std::string& name, const Options& options)>;
  /// A case a worker drew and checked: the case itself, or only its
  /// variant and a summary of it (what the command asked for), and its
  /// result. `counted`: the command only counts the case, so its result
  /// travels as counted_result_to_bytes (result_codec.h) and `c` is not sent.
  struct Drawn {
    std::optional<Case> c;
    std::string variant;
    std::optional<std::string> summary;
    CaseResult result;
    bool counted = false;
  };
  /// Draws the case of a seed and a size and checks it, in the worker
  /// (the campaign's generator and target, there by the fork).
  using DrawAndCheck = std::function<Drawn(uint64_t seed, int size, const CheckOptions& options)>;
  /// Draws, in the worker, the cases of the draw requests it holds, each a
  /// (seed, size), the one about to be checked first (up to `depth` of
  /// them; WorkerLookahead), so that DrawAndCheck finds them drawn: a run
  /// of draws keeps the generators in cache, one draw between two checks
  /// does not. Optional.
  struct DrawAhead {
    std::function<void(const std::vector<std::pair<uint64_t, int>>& draws)> draw;
    size_t depth;  // 0 in a value-initialized DrawAhead (no initializer here: the default argument below needs none)
  };
  IsolatedCases(TargetLookup target_for, const ReferenceModel& reference, WorkerLimits limits, int jobs = 1,
                DrawAndCheck draw = nullptr, DrawAhead ahead = {});

  /// run_case(target, reference, c, options) as the worker computes it; an
  /// InputError it raises is rethrown here.
  CaseResult run(const std::string& target, const Options& target_options, const Case& c,
                 const CheckOptions& options);
  /// Whether the last run ended its worker (its result is crash, timeout or oom).
  bool last_died() const { return last_died_; }

  /// A campaign's cases, side by side in the pool: submit_draw queues the
  /// seed and size of the case `draw` gives, for the pool to send in a
  /// batch (WorkerPool::submit; needs a DrawAndCheck, and
  /// in_flight() < capacity()); next waits for any submitted case. Each
  /// worker holds kCasesPerWorker cases at once, so it starts the next case
  /// as soon as it has answered one, and the command takes replies at most
  /// once per kReplyCoalesce (48 aten cases are some 15 ms of work: a
  /// worker does not wait for it). A wake-up per case cost the command a
  /// tenth of a core and slowed the workers by as much; each wake-up of the
  /// command takes a core from a worker (bench/ROUNDS.md, the ninth round).
  void submit_draw(int64_t tag, uint64_t seed, int size, const CheckOptions& options);
  struct Ran {
    int64_t tag = 0;
    CaseResult result;
    bool died = false;  // the case ended its worker
    std::optional<Case> drawn;  // submit_draw's case, as the worker drew it (none when it died or was not sent)
    std::string variant;        // the drawn case's variant, and its summary if one was made
    std::optional<std::string> summary;
    bool counted = false;  // the result came back as counted_result_to_bytes
  };
  Ran next();
  /// Sends the submitted cases not yet sent (WorkerPool::flush): before the
  /// command's own long work, such as shrinking a finding or writing a file.
  void flush() { pool_.flush(); }
  int jobs() const { return pool_.jobs(); }
  int capacity() const { return pool_.capacity(); }
  int in_flight() const { return pool_.busy(); }
  static constexpr int kCasesPerWorker = 48;
  static constexpr std::chrono::microseconds kReplyCoalesce{5000};

 private:
  CaseResult result_of(std::variant<nlohmann::json, WorkerDeath> reply, bool& died);

  Worker worker_;    // run
  WorkerPool pool_;  // submit_draw and next
  bool last_died_ = false;
};

}  // namespace sdpa
