#include "harness/isolate/line_child.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sdpa {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kStderrTailBytes = 2048;
// How long a child that closed its stdout may take to exit before it is killed.
constexpr double kExitGraceSeconds = 1.0;

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("adapter: pipe: ") + strerror(errno));
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// write() with SIGPIPE blocked: a child that closed its stdin gives EPIPE,
// not a signal that ends this process. Returns the bytes written, or -1.
ssize_t write_quietly(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t w;
  do w = write(fd, data, n);
  while (w < 0 && errno == EINTR);
  if (w < 0 && errno == EPIPE) {
    const int saved = errno;
    timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {}  // the SIGPIPE now pending is this write's
    errno = saved;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return w;
}

// Reads what is there without blocking; false at end of file or on an error.
bool read_available(int fd, std::string& into) {
  char buf[1 << 14];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r > 0) {
      into.append(buf, static_cast<size_t>(r));
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o << s << " s";
  return o.str();
}

[[noreturn]] void exec_child(const std::vector<std::string>& argv, pid_t parent, int in, int out, int err,
                             int report) {
  setpgid(0, 0);  // its own group: killed whole, and a terminal's Ctrl-C is not sent to it
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  dup2(in, 0);
  dup2(out, 1);
  dup2(err, 2);
  // A worker ignores SIGINT and SIGTERM and may block signals: the command
  // it runs starts with the defaults.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const int e = errno;
  (void)!write(report, &e, sizeof e);
  _exit(127);
}

}  // namespace

LineChild::~LineChild() {
  if (owner_ == getpid()) stop();
  else forget();
}

bool LineChild::usable() const { return pid_ > 0 && owner_ == getpid(); }

void LineChild::forget() {
  close_fd(in_);
  close_fd(out_);
  close_fd(err_);
  pid_ = -1;
  owner_ = -1;
  pending_.clear();
}

void LineChild::start() {
  if (owner_ >= 0 && owner_ != getpid()) forget();
  stop();
  if (argv_.empty()) throw std::logic_error("adapter: no command");
  int in[2], out[2], err[2], report[2];
  make_pipe(in);
  make_pipe(out);
  make_pipe(err);
  make_pipe(report);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);  // buffered output is not written twice
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("adapter: fork: ") + strerror(errno));
  if (pid == 0) exec_child(argv_, parent, in[0], out[1], err[1], report[1]);
  setpgid(pid, pid);  // as the child does, whichever runs first
  close(in[0]);
  close(out[1]);
  close(err[1]);
  close(report[1]);
  int e = 0;
  ssize_t r;
  do r = read(report[0], &e, sizeof e);  // end of file once exec succeeds (close-on-exec)
  while (r < 0 && errno == EINTR);
  close(report[0]);
  pid_ = pid;
  owner_ = parent;
  in_ = in[1];
  out_ = out[0];
  err_ = err[0];
  set_nonblocking(in_);
  set_nonblocking(out_);
  set_nonblocking(err_);
  pending_.clear();
  stderr_tail_.clear();
  exec_error_ = r == static_cast<ssize_t>(sizeof e) ? "cannot run '" + argv_[0] + "': " + strerror(e) : "";
  ++starts_;
}

void LineChild::drain_stderr() {
  if (err_ < 0) return;
  if (!read_available(err_, stderr_tail_)) close_fd(err_);
  if (stderr_tail_.size() > kStderrTailBytes) stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
}

void LineChild::stop() {
  if (pid_ > 0 && owner_ == getpid()) {
    close_fd(in_);
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
    drain_stderr();
  }
  forget();
}

// Ends the child after a fault: a crash names how it ended (it exited, or
// closed its stdout and was killed after a grace period).
WorkerDeath LineChild::end(Verdict verdict, const std::string& detail) {
  if (!exec_error_.empty()) {
    const std::string why = exec_error_;
    stop();
    return {Verdict::crash, why};
  }
  std::string how = detail;
  if (verdict == Verdict::crash) {
    // Waits for the exit without reaping, so the group is killed while its id is still the child's.
    siginfo_t info{};
    const auto begin = Clock::now();
    while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0 &&
           std::chrono::duration<double>(Clock::now() - begin).count() < kExitGraceSeconds) {
      drain_stderr();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (info.si_pid == pid_) {
      kill(-pid_, SIGKILL);  // what it left behind in its group
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
      drain_stderr();
      forget();
      return {verdict, describe_exit(status)};
    }
    how = "closed its stdout and was killed";
  }
  stop();
  return {verdict, how};
}

std::variant<std::string, WorkerDeath> LineChild::call(const std::string& line, double timeout_s,
                                                        size_t max_line_bytes) {
  if (!usable()) throw std::logic_error("adapter: call on a child this process did not start");
  if (!exec_error_.empty()) return end(Verdict::crash, "");
  const std::string out_bytes = line + "\n";
  size_t written = 0;
  bool can_write = true;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (size_t nl = pending_.find('\n'); nl != std::string::npos) {
      if (nl > max_line_bytes) break;
      std::string reply = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return reply;
    }
    if (pending_.size() > max_line_bytes) break;
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) return end(Verdict::timeout, "gave no answer within " + seconds_text(timeout_s) + " and was killed");
    const int to_write = can_write && written < out_bytes.size() ? in_ : -1;
    pollfd fds[3] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}, {to_write, POLLOUT, 0}};
    int ready = poll(fds, 3, static_cast<int>(left * 1000) + 1);
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("adapter: poll: ") + strerror(errno));
    if (ready <= 0) continue;
    if (fds[1].revents) drain_stderr();
    if (fds[2].revents) {
      ssize_t w = write_quietly(in_, out_bytes.data() + written, out_bytes.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      else if (errno != EAGAIN && errno != EWOULDBLOCK) can_write = false;  // it closed its stdin
    }
    if (fds[0].revents && !read_available(out_, pending_) && pending_.find('\n') == std::string::npos) {
      drain_stderr();
      return end(Verdict::crash, "");
    }
  }
  return end(Verdict::unexpected_error, "wrote a line longer than the limit of " + std::to_string(max_line_bytes) +
                                            " bytes and was killed");
}

}  // namespace sdpa
