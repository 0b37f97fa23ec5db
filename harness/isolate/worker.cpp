#include "harness/isolate/worker.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

// The worker's exit status when an allocation failed under the memory limit.
constexpr int kOomExitStatus = 86;

using Clock = std::chrono::steady_clock;

bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A frame: the payload's length (8 bytes, host order) and the payload, in
// one buffer so that it goes out in one system call. The payload's first
// byte is its form: MessagePack (doubles exact, strings need not be UTF-8),
// or, for a message that is one field holding binary bytes (what a
// campaign's workers exchange once per case), the field's name and the
// bytes as they are, which MessagePack would read back one byte at a time.
enum FrameForm : uint8_t { kMessagePack = 0, kBinaryField = 1 };

std::vector<uint8_t> frame_of(const nlohmann::json& j) {
  std::vector<uint8_t> frame(sizeof(uint64_t));
  const bool binary_field = j.is_object() && j.size() == 1 && j.begin().value().is_binary() &&
                            j.begin().key().size() <= UINT8_MAX;
  if (binary_field) {
    const std::string& key = j.begin().key();
    const auto& bytes = j.begin().value().get_binary();
    frame.push_back(kBinaryField);
    frame.push_back(static_cast<uint8_t>(key.size()));
    frame.insert(frame.end(), key.begin(), key.end());
    frame.insert(frame.end(), bytes.begin(), bytes.end());
  } else {
    frame.push_back(kMessagePack);
    nlohmann::json::to_msgpack(j, frame);  // appended after the length and form
  }
  const uint64_t n = frame.size() - sizeof n;
  std::memcpy(frame.data(), &n, sizeof n);
  return frame;
}

// Frames, one or several, in one system call.
bool send_frames(int fd, const std::vector<uint8_t>& frames) {
  return write_all(fd, reinterpret_cast<const char*>(frames.data()), frames.size());
}

// The message of the payload [begin, end), read where it lies.
nlohmann::json message_of(const uint8_t* begin, const uint8_t* end) {
  const size_t size = static_cast<size_t>(end - begin);
  if (size == 0) throw std::runtime_error("worker: an empty frame");
  if (begin[0] == kMessagePack) return nlohmann::json::from_msgpack(begin + 1, end);
  if (begin[0] != kBinaryField) throw std::runtime_error("worker: a frame of unknown form " + std::to_string(begin[0]));
  if (size < 2 || size < 2u + begin[1])
    throw std::runtime_error("worker: a binary-field frame shorter than its field's name");
  const uint8_t* key_end = begin + 2 + begin[1];
  return {{std::string(begin + 2, key_end), nlohmann::json::binary(std::vector<uint8_t>(key_end, end))}};
}

}  // namespace

bool FrameBuffer::has_frame() const {
  const size_t held = end_ - start_;
  if (held < sizeof(uint64_t)) return false;
  uint64_t n = 0;
  std::memcpy(&n, bytes_.data() + start_, sizeof n);
  return held - sizeof n >= n;
}

bool FrameBuffer::next(int fd, nlohmann::json& out) {
  while (!has_frame()) {
    if (start_ > 0) {  // what was taken goes; a partial frame moves to the front
      std::memmove(bytes_.data(), bytes_.data() + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
    }
    uint64_t n = 0;
    if (end_ >= sizeof n) std::memcpy(&n, bytes_.data(), sizeof n);
    if (n > kMaxFrameBytes)
      throw std::runtime_error("worker: a frame of " + std::to_string(n) + " bytes, past the limit of " +
                               std::to_string(kMaxFrameBytes));
    // Room for the rest of a frame whose length is known, and for more
    // frames behind it; the buffer only grows (no fill on every read).
    const size_t room = std::max(kReadChunk, end_ >= sizeof n ? sizeof n + n - end_ : 0);
    if (bytes_.size() < end_ + room) bytes_.resize(end_ + room);
    ssize_t r = 0;
    do r = read(fd, bytes_.data() + end_, bytes_.size() - end_);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return false;
    end_ += static_cast<size_t>(r);
  }
  uint64_t n = 0;
  std::memcpy(&n, bytes_.data() + start_, sizeof n);
  // Taken before it is read (the bytes stay where they are until the next
  // read): a frame that does not parse is not met again.
  const uint8_t* first = bytes_.data() + start_ + sizeof n;
  start_ += sizeof n + n;
  if (start_ == end_) start_ = end_ = 0;
  out = message_of(first, first + n);
  return true;
}

std::vector<nlohmann::json> FrameBuffer::held(size_t n) const {
  std::vector<nlohmann::json> out;
  size_t at = start_;
  while (out.size() < n && end_ - at >= sizeof(uint64_t)) {
    uint64_t size = 0;
    std::memcpy(&size, bytes_.data() + at, sizeof size);
    if (end_ - at - sizeof size < size) break;  // not yet whole
    const uint8_t* first = bytes_.data() + at + sizeof size;
    try {
      out.push_back(message_of(first, first + size));
    } catch (const std::exception&) {
      break;
    }
    at += sizeof size + size;
  }
  return out;
}

void FrameBuffer::clear() { start_ = end_ = 0; }

namespace {

int64_t page_kib() { return sysconf(_SC_PAGESIZE) / 1024; }

// Field `index` of /proc/PID/statm, in MiB (0: size, 1: resident).
int64_t statm_mib(pid_t pid, int index) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  int64_t v = 0;
  for (int i = 0; i <= index; ++i) in >> v;
  return v * page_kib() / 1024;
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o << s << " s";
  return o.str();
}

[[noreturn]] void out_of_memory() { _exit(kOomExitStatus); }

// A backstop for allocations the parent's polling would see too late: the
// address space may grow by twice the limit over what the fork inherited.
// operator new failing under it ends the worker as oom.
void limit_memory(int64_t rss_limit_mb) {
  if (rss_limit_mb <= 0 || rss_limit_mb > kMaxRssLimitMb) return;  // no limit past the largest
  rlim_t bytes = static_cast<rlim_t>(statm_mib(getpid(), 0) + 2 * rss_limit_mb) << 20;
  rlimit r{bytes, bytes};
  setrlimit(RLIMIT_AS, &r);
  std::set_new_handler(out_of_memory);
}

// Shows the look-ahead `request` and the requests held behind it, unless
// an earlier look covered it; `covered`: requests behind the last one shown.
void look_ahead(const WorkerLookahead& lookahead, const FrameBuffer& in, const nlohmann::json& request,
                size_t& covered) {
  if (!lookahead.see || lookahead.depth == 0) return;
  if (covered > 0) {
    --covered;
    return;
  }
  std::vector<nlohmann::json> requests = {request};
  for (auto& r : in.held(lookahead.depth - 1)) requests.push_back(std::move(r));
  covered = requests.size() - 1;
  try {
    lookahead.see(requests);
  } catch (...) {  // each request is still served on its own
  }
}

[[noreturn]] void serve(int fd, const Worker::Handler& handler, const WorkerLimits& limits,
                        const WorkerLookahead& lookahead) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed parent leaves no worker behind
  signal(SIGINT, SIG_IGN);  // Ctrl-C and a group's SIGTERM are the parent's to handle:
  signal(SIGTERM, SIG_IGN); // it stops after the case, and the worker goes with it
  limit_memory(limits.rss_limit_mb);
  nlohmann::json request;
  FrameBuffer in;
  size_t covered = 0;
  while (in.next(fd, request)) {
    look_ahead(lookahead, in, request, covered);
    nlohmann::json reply;
    try {
      reply["ok"] = handler(request);
    } catch (const InputError& e) {
      reply["input_error"] = e.what();
    } catch (const std::exception& e) {
      reply["error"] = e.what();
    }
    if (!send_frames(fd, frame_of(reply))) break;
  }
  _exit(0);
}

}  // namespace

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
    return "killed by " + name + " (" + strsignal(sig) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "stopped";
}

Worker::Worker(Handler handler, WorkerLimits limits, WorkerLookahead lookahead)
    : handler_(std::move(handler)), limits_(limits), lookahead_(std::move(lookahead)) {}

Worker::~Worker() {
  if (pid_ > 0) {
    close(fd_);  // the worker reads end-of-file and exits
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void Worker::start() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::runtime_error(std::string("worker: socketpair: ") + strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);  // buffered output is not written twice
  looking_ = lookahead_.see && lookahead_.depth > 0 && !lookahead_off_;
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("worker: fork: ") + strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    serve(fds[1], handler_, limits_, looking_ ? lookahead_ : WorkerLookahead{});
  }
  close(fds[1]);
  pid_ = pid;
  fd_ = fds[0];
  ++starts_;
}

WorkerDeath Worker::reap(Verdict verdict, const std::string& detail) {
  if (verdict != Verdict::crash) kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
  close(fd_);
  in_.clear();  // at most part of a frame the dead worker did not finish
  pid_ = -1;
  fd_ = -1;
  if (verdict == Verdict::crash && WIFEXITED(status) && WEXITSTATUS(status) == kOomExitStatus)
    return {Verdict::oom, "an allocation failed under the memory limit of " +
                              std::to_string(limits_.rss_limit_mb) + " MiB"};
  return {verdict, verdict == Verdict::crash ? "the worker " + describe_exit(status) : detail};
}

void Worker::flush() {
  if (unsent_ == 0) return;
  if (pid_ < 0) start();
  // A worker with nothing else to do starts the oldest request now: its
  // clock does not count the time it waited in the parent.
  if (unsent_ == pending()) begin_ = Clock::now();
  std::vector<uint8_t> batch;  // the last unsent_ requests, for one system call
  for (auto it = pending_.end() - unsent_; it != pending_.end(); ++it)
    batch.insert(batch.end(), it->begin(), it->end());
  // Requests are small (about 100 bytes) and at most a pool's depth of
  // them (48) are unread: the socket's buffer takes them without blocking
  // on a worker that is writing a reply.
  send_failed_ = send_failed_ || !send_frames(fd_, batch);
  unsent_ = 0;
}

void Worker::submit(const nlohmann::json& request) {
  pending_.push_back(frame_of(request));
  if (pending_.size() == 1) begin_ = Clock::now();
  ++unsent_;
}

std::optional<std::variant<nlohmann::json, WorkerDeath>> Worker::died(Verdict verdict, const std::string& detail) {
  WorkerDeath death = reap(verdict, detail);
  const bool retry = looking_;  // the death may have come from a look at a later request
  if (retry) lookahead_off_ = true;
  else pending_.pop_front();
  send_failed_ = false;
  unsent_ = pending();  // every request left goes to the new worker, sent or not
  flush();
  if (retry) return std::nullopt;
  return death;
}

std::optional<std::variant<nlohmann::json, WorkerDeath>> Worker::collect(bool readable) {
  if (pending_.empty()) throw std::logic_error("worker: collect with no request out");
  if (unsent_ == pending()) flush();  // nothing was sent that a reply could answer
  // A reply already read is taken whatever poll() said: its case ended in time.
  if (send_failed_ || readable || in_.has_frame()) {
    // A worker gone while a request was sent may still have answered the
    // ones before it: its replies are read first.
    nlohmann::json reply;
    if (!in_.next(fd_, reply)) return died(Verdict::crash, "");
    pending_.pop_front();
    begin_ = Clock::now();
    if (auto it = reply.find("ok"); it != reply.end()) return std::move(*it);
    if (auto it = reply.find("input_error"); it != reply.end()) throw InputError(it->get<std::string>());
    throw std::runtime_error(reply.value("error", std::string("worker: malformed reply")));
  }
  double seconds = std::chrono::duration<double>(Clock::now() - begin_).count();
  if (limits_.timeout_s > 0 && seconds > limits_.timeout_s)
    return died(Verdict::timeout, "the case ran past the time limit of " + seconds_text(limits_.timeout_s));
  if (limits_.rss_limit_mb > 0 && statm_mib(pid_, 1) > limits_.rss_limit_mb)
    return died(Verdict::oom, "the worker's resident memory passed the limit of " +
                                  std::to_string(limits_.rss_limit_mb) + " MiB");
  return std::nullopt;
}

std::variant<nlohmann::json, WorkerDeath> Worker::call(const nlohmann::json& request) {
  if (busy()) throw std::logic_error("worker: call while requests are out");
  submit(request);
  flush();
  for (;;) {
    if (has_reply()) return std::move(*collect(true));
    pollfd p{fd_, POLLIN, 0};
    int ready = poll(&p, 1, kWorkerPollMillis);
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("worker: poll: ") + strerror(errno));
    if (auto reply = collect(ready > 0)) return std::move(*reply);
  }
}

}  // namespace sdpa
