#pragma once
/// Several Workers answering requests side by side (`fuzz --jobs N`): a
/// request goes to a free worker, and replies come back as they finish,
/// each with the tag of the request it answers. Every worker keeps the
/// limits and the death reporting of a lone Worker. With a depth above 1 a
/// worker holds that many requests at once and starts the next as soon as
/// it has answered one (no round trip through the parent in between).
/// With a coalescing delay, a parent that finds no reply ready waits that
/// long before it blocks, so that it takes the replies that came meanwhile
/// in one wake-up rather than one each: a worker's depth must hold more
/// work than the delay, or the worker idles. Requests go out in batches:
/// a worker's are sent once a quarter of its depth is queued (at once to
/// a worker that holds nothing else), and all of them before the parent
/// blocks in wait() or calls flush().
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "harness/isolate/worker.h"

namespace sdpa {

class WorkerPool {
 public:
  /// `lookahead`: each worker's (Worker).
  WorkerPool(int jobs, const Worker::Handler& handler, WorkerLimits limits, int depth = 1,
             std::chrono::microseconds coalesce = std::chrono::microseconds(0), const WorkerLookahead& lookahead = {});

  int jobs() const { return static_cast<int>(workers_.size()); }
  /// Requests the pool holds at once: jobs times the depth.
  int capacity() const { return jobs() * depth_; }
  /// Requests out, without a reply yet.
  int busy() const;
  bool full() const { return busy() == capacity(); }

  /// Gives `request` to the worker with the fewest requests out; needs !full().
  void submit(int64_t tag, const nlohmann::json& request);
  /// Sends every request submitted and not yet sent: before work of the
  /// parent's own that outlasts what the workers hold.
  void flush();

  struct Reply {
    int64_t tag = 0;
    std::variant<nlohmann::json, WorkerDeath> reply;
  };
  /// Waits for the next reply (or death) of any busy worker; needs busy() > 0.
  Reply wait();

 private:
  /// Worker i's reply or death, if it has one now (Worker::collect), with its tag.
  std::optional<Reply> collect(size_t i, bool readable);

  std::vector<std::unique_ptr<Worker>> workers_;
  int depth_;
  int flush_at_;  // a worker's unsent requests that make submit send them
  std::chrono::microseconds coalesce_;
  std::vector<std::deque<int64_t>> tags_;  // the tags of each worker's requests out, oldest first
  std::chrono::steady_clock::time_point last_limit_check_{};
};

}  // namespace sdpa
