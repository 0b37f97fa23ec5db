#pragma once
/// A child process run from a command line (no shell) and spoken to in
/// lines of text over its stdin and stdout: how a pass written in another
/// language runs (harness/adapter). Supervised as a Worker is: a child
/// that exits or is killed is a crash, one that gives no answer in time is
/// killed and a timeout (a WorkerDeath each, with the last bytes the child
/// wrote to stderr); the next start is a new process. It is killed with
/// its whole process group, and dies with the process that started it
/// (PR_SET_PDEATHSIG), so a worker killed mid-case leaves no child behind.
///
/// Workers are forks: a LineChild started in one process is never used
/// from another. `usable()` is false in a fork of the process that started
/// it, and `forget()` drops the fork's copy without touching the child.
#include <sys/types.h>

#include <string>
#include <variant>
#include <vector>

#include "harness/isolate/worker.h"

namespace sdpa {

class LineChild {
 public:
  /// `argv[0]` is looked up on PATH when it has no '/'.
  explicit LineChild(std::vector<std::string> argv) : argv_(std::move(argv)) {}
  ~LineChild();
  LineChild(const LineChild&) = delete;
  LineChild& operator=(const LineChild&) = delete;

  /// Starts the process; a failed fork or exec gives a crash (the reason in
  /// the detail) on the first call.
  void start();
  /// Started, alive as far as is known, and started by this process.
  bool usable() const;
  /// In a fork of the starting process: drops the copies of its pipes and
  /// forgets it (the starting process still owns it).
  void forget();
  /// Kills the process group and reaps the child.
  void stop();

  /// Writes `line` and a newline, and waits for one line back (without its
  /// newline) for at most `timeout_s` seconds. A child that exits or closes
  /// its stdout is a crash, one that gives no whole line in time a timeout
  /// and one whose line passes `max_line_bytes` an unexpected-error; each
  /// stops the child.
  std::variant<std::string, WorkerDeath> call(const std::string& line, double timeout_s, size_t max_line_bytes);

  /// The last bytes (at most 2 KiB) the current or last child wrote to stderr.
  const std::string& stderr_tail() const { return stderr_tail_; }
  /// Processes started so far.
  int starts() const { return starts_; }

 private:
  void drain_stderr();
  WorkerDeath end(Verdict verdict, const std::string& detail);

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  pid_t owner_ = -1;  // the process that started it
  int in_ = -1, out_ = -1, err_ = -1;  // our ends of its stdin, stdout, stderr
  std::string exec_error_;  // why exec failed, if it did
  std::string pending_;     // bytes read past the last line returned
  std::string stderr_tail_;
  int starts_ = 0;
};

}  // namespace sdpa
