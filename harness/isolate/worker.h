#pragma once
/// A persistent worker process that answers requests for its parent, as
/// libFuzzer's fork mode and FuzzTest's subprocess runner run inputs: a
/// signal, an abort, a hang or a memory overrun in the work ends the worker,
/// not the parent, and becomes a crash, timeout or oom the parent reports.
/// The worker is a fork of the parent, so whatever the parent has loaded
/// (targets, kernels) is there without a restart; it serves many requests,
/// and the next call after a death starts a new one. Several Workers can run
/// side by side (one per job).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/check/verdict.h"

namespace sdpa {

struct WorkerLimits {
  double timeout_s = 0;      // per request; 0: none
  int64_t rss_limit_mb = 0;  // the worker's resident memory; 0: none
};

/// The largest rss_limit_mb (1 PiB): its byte count, twice over, fits an
/// rlim_t with room for the worker's own size.
inline constexpr int64_t kMaxRssLimitMb = int64_t{1} << 30;

/// How a request ended the worker.
struct WorkerDeath {
  Verdict verdict = Verdict::crash;  // crash, timeout or oom
  std::string detail;                // "killed by SIGSEGV (Segmentation fault)"
};

/// Bytes read from a socket and not yet taken as frames (a frame: its
/// payload's length in 8 bytes, then the payload). One read() takes what
/// the other side has written so far, often several frames, which are then
/// taken without a system call each; reading a frame's length and then its
/// body cost two calls a frame, on a machine where a call can cost several
/// microseconds.
class FrameBuffer {
 public:
  /// Whether a whole frame is held: next() returns it without reading.
  bool has_frame() const;
  /// The next frame's message, reading from fd as needed; false at end of
  /// file or on a read error. A frame declared longer than kMaxFrameBytes
  /// throws std::runtime_error before anything is allocated for it.
  bool next(int fd, nlohmann::json& out);
  /// The messages of up to n frames held whole behind what next() has
  /// taken, oldest first, without taking them (next() still returns each);
  /// it stops at a frame that does not parse, which next() then reports.
  std::vector<nlohmann::json> held(size_t n) const;
  void clear();

  static constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 30;

 private:
  static constexpr size_t kReadChunk = 64 * 1024;
  std::vector<uint8_t> bytes_;  // [start_, end_) read and not yet taken
  size_t start_ = 0, end_ = 0;
};

/// A worker's look at the requests it holds: before it serves a request
/// that no earlier look covered, `see` gets that request and up to depth - 1
/// received behind it, oldest first, so that work they share can run
/// together (a campaign draws their cases in a run). An exception `see`
/// throws is dropped: each request is still served by the handler. Work
/// done here counts against the request being served. A worker that looks
/// ahead and dies is charged nothing, since the death may have come from a
/// look at a later request: its requests, the oldest too, go to a new worker
/// that does not look ahead (nor does any later one of this Worker), where
/// a death is its own request's.
struct WorkerLookahead {
  std::function<void(const std::vector<nlohmann::json>& requests)> see;
  size_t depth = 0;
};

class Worker {
 public:
  using Handler = std::function<nlohmann::json(const nlohmann::json& request)>;
  /// The handler runs in the worker process only; it must not rely on
  /// threads the parent started (fork copies only the calling thread).
  Worker(Handler handler, WorkerLimits limits, WorkerLookahead lookahead = {});
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// The handler's reply to `request`, computed in the worker, or how the
  /// worker died on it. An InputError the handler throws is rethrown here;
  /// another exception is rethrown as std::runtime_error.
  std::variant<nlohmann::json, WorkerDeath> call(const nlohmann::json& request);

  /// The same in two steps, so that a parent can keep several workers busy
  /// (WorkerPool): submit queues the request and returns at once; flush
  /// sends every request queued since the last flush in one system call
  /// (starting a worker if none runs), so that a parent taking many
  /// replies in one wake-up sends their successors together; collect
  /// returns the reply or the death once there is one, nullopt while the
  /// worker still works. Requests may queue:
  /// the worker answers them in order, so it starts the next one without
  /// waiting for the parent to read a reply and send again. collect answers
  /// the oldest one out; its clock and the worker's memory are its own from
  /// the moment the reply before it was collected, or it was sent if the
  /// worker had nothing else to do. A death belongs to that
  /// oldest request; the requests queued behind it go to a new worker.
  /// `readable`: poll() saw fd() readable (collect then blocks until the
  /// whole reply is read). collect waits only on requests flushed; it
  /// flushes them itself when none was.
  void submit(const nlohmann::json& request);
  void flush();
  /// Requests submitted and not yet flushed.
  int unsent() const { return unsent_; }
  std::optional<std::variant<nlohmann::json, WorkerDeath>> collect(bool readable);
  /// The parent's end of the socket while a request is out; -1 otherwise.
  int fd() const { return busy() ? fd_ : -1; }
  /// A reply already read (with one before it): collect(true) returns it
  /// without reading, and poll() on fd() would not see it.
  bool has_reply() const { return busy() && in_.has_frame(); }
  bool busy() const { return !pending_.empty(); }
  /// Requests submitted and not yet collected (queued, sent, or answered
  /// and the reply not yet taken).
  int pending() const { return static_cast<int>(pending_.size()); }

  /// Worker processes started so far (the first and every restart).
  int64_t starts() const { return starts_; }

 private:
  void start();
  /// The oldest request's death (as collect() returns it), the ones queued
  /// behind it sent to a new worker; none when the worker looked ahead
  /// (WorkerLookahead), every request then sent again to a new worker that
  /// does not.
  std::optional<std::variant<nlohmann::json, WorkerDeath>> died(Verdict verdict, const std::string& detail);
  WorkerDeath reap(Verdict verdict, const std::string& detail);

  Handler handler_;
  WorkerLimits limits_;
  WorkerLookahead lookahead_;
  bool looking_ = false;       // the running worker looks ahead
  bool lookahead_off_ = false;  // a worker that looked ahead died: none looks ahead again
  pid_t pid_ = -1;
  int fd_ = -1;  // the parent's end of the socket pair
  int64_t starts_ = 0;
  FrameBuffer in_;  // the worker's replies, read and not yet collected
  std::deque<std::vector<uint8_t>> pending_;  // requests out, oldest first, as frames
  int unsent_ = 0;  // the last of pending_ not yet sent
  bool send_failed_ = false;   // the worker was gone when a request was sent
  std::chrono::steady_clock::time_point begin_;  // when the oldest request's clock started
};

/// How often the parent looks at a busy worker's clock and memory (one
/// worker's call, or the pool's).
constexpr int kWorkerPollMillis = 20;

/// "killed by SIGSEGV (Segmentation fault)", "exited with status 3": a
/// waitpid status in words.
std::string describe_exit(int status);

}  // namespace sdpa
