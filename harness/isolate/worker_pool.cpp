#include "harness/isolate/worker_pool.h"

#include <poll.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace sdpa {
namespace {


using Clock = std::chrono::steady_clock;

}  // namespace

WorkerPool::WorkerPool(int jobs, const Worker::Handler& handler, WorkerLimits limits) {
  if (jobs < 1) throw std::invalid_argument("WorkerPool: jobs must be at least 1");
  for (int i = 0; i < jobs; ++i) workers_.push_back(std::make_unique<Worker>(handler, limits));
  tags_.assign(workers_.size(), 0);
}

int WorkerPool::busy() const {
  int n = 0;
  for (const auto& w : workers_) n += w->busy();
  return n;
}

void WorkerPool::submit(int64_t tag, const nlohmann::json& request) {
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i]->busy()) continue;
    tags_[i] = tag;
    workers_[i]->submit(request);
    return;
  }
  throw std::logic_error("WorkerPool: submit with every worker busy");
}

WorkerPool::Reply WorkerPool::wait() {
  if (busy() == 0) throw std::logic_error("WorkerPool: wait with no request out");
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> owner;
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (!workers_[i]->busy()) continue;
      fds.push_back({workers_[i]->fd(), POLLIN, 0});
      owner.push_back(i);
    }
    int ready = poll(fds.data(), fds.size(), kWorkerPollMillis);
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("worker pool: poll: ") + strerror(errno));
    // A worker with no reply yet has its clock and memory looked at every
    // kWorkerPollMillis, even while the others keep replying.
    const bool check_limits =
        Clock::now() - last_limit_check_ >= std::chrono::milliseconds(kWorkerPollMillis);
    if (check_limits) last_limit_check_ = Clock::now();
    for (size_t k = 0; k < fds.size(); ++k) {
      const bool readable = ready > 0 && fds[k].revents != 0;
      if (!readable && !check_limits) continue;
      if (auto reply = workers_[owner[k]]->collect(readable)) return {tags_[owner[k]], std::move(*reply)};
    }
  }
}

}  // namespace sdpa
