#pragma once
/// Several Workers answering requests side by side (`fuzz --jobs N`): a
/// request goes to a free worker, and replies come back as they finish,
/// each with the tag of the request it answers. Every worker keeps the
/// limits and the death reporting of a lone Worker.
#include <chrono>
#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "harness/isolate/worker.h"

namespace sdpa {

class WorkerPool {
 public:
  WorkerPool(int jobs, const Worker::Handler& handler, WorkerLimits limits);

  int jobs() const { return static_cast<int>(workers_.size()); }
  /// Requests out, without a reply yet.
  int busy() const;
  bool full() const { return busy() == jobs(); }

  /// Sends `request` to a free worker; needs !full().
  void submit(int64_t tag, const nlohmann::json& request);

  struct Reply {
    int64_t tag = 0;
    std::variant<nlohmann::json, WorkerDeath> reply;
  };
  /// Waits for the next reply (or death) of any busy worker; needs busy() > 0.
  Reply wait();

 private:
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<int64_t> tags_;  // the tag of each worker's request out
  std::chrono::steady_clock::time_point last_limit_check_{};
};

}  // namespace sdpa
