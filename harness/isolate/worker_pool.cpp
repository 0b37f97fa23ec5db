#include "harness/isolate/worker_pool.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace sdpa {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

WorkerPool::WorkerPool(int jobs, const Worker::Handler& handler, WorkerLimits limits, int depth,
                       std::chrono::microseconds coalesce, const WorkerLookahead& lookahead)
    : depth_(depth), flush_at_(std::max(1, depth / 4)), coalesce_(coalesce) {
  if (jobs < 1) throw std::invalid_argument("WorkerPool: jobs must be at least 1");
  if (depth < 1) throw std::invalid_argument("WorkerPool: depth must be at least 1");
  for (int i = 0; i < jobs; ++i) workers_.push_back(std::make_unique<Worker>(handler, limits, lookahead));
  tags_.assign(workers_.size(), {});
}

int WorkerPool::busy() const {
  int n = 0;
  for (const auto& w : workers_) n += w->pending();
  return n;
}

void WorkerPool::submit(int64_t tag, const nlohmann::json& request) {
  size_t best = workers_.size();
  for (size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i]->pending() < depth_ && (best == workers_.size() || workers_[i]->pending() < workers_[best]->pending()))
      best = i;
  if (best == workers_.size()) throw std::logic_error("WorkerPool: submit with every worker full");
  tags_[best].push_back(tag);
  Worker& w = *workers_[best];
  w.submit(request);
  // At most a quarter of a worker's depth waits for the parent's next
  // flush; a worker given nothing else gets its request at once.
  if (w.unsent() >= flush_at_ || w.unsent() == w.pending()) w.flush();
}

void WorkerPool::flush() {
  for (auto& w : workers_) w->flush();
}

WorkerPool::Reply WorkerPool::wait() {
  if (busy() == 0) throw std::logic_error("WorkerPool: wait with no request out");
  // A reply read along with an earlier one is taken first: poll() does not see it.
  for (size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i]->has_reply()) return *collect(i, true);
  flush();
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> owner;
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (!workers_[i]->busy()) continue;
      fds.push_back({workers_[i]->fd(), POLLIN, 0});
      owner.push_back(i);
    }
    int ready = poll(fds.data(), fds.size(), 0);
    if (ready == 0) {
      if (coalesce_.count() > 0) std::this_thread::sleep_for(coalesce_);
      ready = poll(fds.data(), fds.size(), kWorkerPollMillis);
    }
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("worker pool: poll: ") + strerror(errno));
    // A worker with no reply yet has its clock and memory looked at every
    // kWorkerPollMillis, even while the others keep replying.
    const bool check_limits =
        Clock::now() - last_limit_check_ >= std::chrono::milliseconds(kWorkerPollMillis);
    if (check_limits) last_limit_check_ = Clock::now();
    for (size_t k = 0; k < fds.size(); ++k) {
      const bool readable = ready > 0 && fds[k].revents != 0;
      if (!readable && !check_limits) continue;
      if (auto reply = collect(owner[k], readable)) return std::move(*reply);
    }
  }
}

std::optional<WorkerPool::Reply> WorkerPool::collect(size_t i, bool readable) {
  Worker& w = *workers_[i];
  std::deque<int64_t>& tags = tags_[i];
  const int before = w.pending();
  std::optional<std::variant<nlohmann::json, WorkerDeath>> reply;
  try {
    reply = w.collect(readable);
  } catch (...) {  // the handler's error answers the oldest request
    if (w.pending() < before) tags.pop_front();
    throw;
  }
  if (!reply) return std::nullopt;
  const int64_t tag = tags.front();
  tags.pop_front();
  return Reply{tag, std::move(*reply)};
}

}  // namespace sdpa
