#include "harness/isolate/line_child.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

namespace sdpa {
namespace {

std::vector<std::string> sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

std::string line_of(const std::variant<std::string, WorkerDeath>& r) {
  if (const auto* d = std::get_if<WorkerDeath>(&r)) return "death: " + d->detail;
  return std::get<std::string>(r);
}

const WorkerDeath& death_of(const std::variant<std::string, WorkerDeath>& r) {
  static const WorkerDeath none{Verdict::pass, "no death"};
  const auto* d = std::get_if<WorkerDeath>(&r);
  return d ? *d : none;
}

// Whether process `pid` has ended (gone, or a zombie waiting for its parent).
bool ended(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, comm, state;
    if (!(stat >> pid_field >> comm >> state) || state == "Z") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(LineChild, AnswersLineAfterLine) {
  LineChild c({"/bin/cat"});
  c.start();
  EXPECT_EQ(line_of(c.call("hello", 5, 1000)), "hello");
  EXPECT_EQ(line_of(c.call("{\"a\": 1}", 5, 1000)), "{\"a\": 1}");
  EXPECT_TRUE(c.usable());
  EXPECT_EQ(c.starts(), 1);
}

TEST(LineChild, AnExitIsACrashWithItsStatusAndStderr) {
  LineChild c(sh("read x; echo 'Traceback: ValueError: bad graph' >&2; exit 3"));
  c.start();
  const auto r = c.call("x", 5, 1000);
  EXPECT_EQ(death_of(r).verdict, Verdict::crash);
  EXPECT_EQ(death_of(r).detail, "exited with status 3");
  EXPECT_NE(c.stderr_tail().find("ValueError: bad graph"), std::string::npos) << c.stderr_tail();
  EXPECT_FALSE(c.usable());
  c.start();  // the next start is a new process
  EXPECT_EQ(c.starts(), 2);
  EXPECT_TRUE(c.usable());
}

TEST(LineChild, ASignalIsACrashNamingIt) {
  LineChild c(sh("read x; kill -SEGV $$"));
  c.start();
  const auto r = c.call("x", 5, 1000);
  EXPECT_EQ(death_of(r).verdict, Verdict::crash);
  EXPECT_EQ(death_of(r).detail, "killed by SIGSEGV (Segmentation fault)");
}

TEST(LineChild, AHangIsATimeoutAndItsGroupIsKilled) {
  const std::string pid_file = testing::TempDir() + "/line_child_hang_" + std::to_string(getpid());
  LineChild c(sh("sleep 100 & echo $! > " + pid_file + "; wait"));
  c.start();
  const auto begin = std::chrono::steady_clock::now();
  const auto r = c.call("x", 0.2, 1000);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_EQ(death_of(r).verdict, Verdict::timeout);
  EXPECT_EQ(death_of(r).detail, "gave no answer within 0.2 s and was killed");
  EXPECT_LT(took, 2.0);
  pid_t sleeper = 0;
  std::ifstream(pid_file) >> sleeper;
  ASSERT_GT(sleeper, 0);
  EXPECT_TRUE(ended(sleeper)) << "the child's own child " << sleeper << " outlived it";
  std::remove(pid_file.c_str());
}

TEST(LineChild, ALineOverTheLimitIsUnexpected) {
  LineChild c(sh("read x; head -c 5000 /dev/zero | tr '\\000' a; echo"));
  c.start();
  const auto r = c.call("x", 5, 1000);
  EXPECT_EQ(death_of(r).verdict, Verdict::unexpected_error);
  EXPECT_EQ(death_of(r).detail, "wrote a line longer than the limit of 1000 bytes and was killed");
}

TEST(LineChild, AProgramThatDoesNotRunIsACrashNamingIt) {
  LineChild c({"/nonexistent/adapter"});
  c.start();
  const auto r = c.call("x", 5, 1000);
  EXPECT_EQ(death_of(r).verdict, Verdict::crash);
  EXPECT_EQ(death_of(r).detail, "cannot run '/nonexistent/adapter': No such file or directory");
}

TEST(LineChild, ClosingStdoutIsACrash) {
  LineChild c(sh("exec 1>&-; sleep 30"));
  c.start();
  const auto r = c.call("x", 5, 1000);
  EXPECT_EQ(death_of(r).verdict, Verdict::crash);
  EXPECT_EQ(death_of(r).detail, "closed its stdout and was killed");
}

TEST(LineChild, AChildThatClosedItsStdinDoesNotEndTheCaller) {
  // Writing to it raises SIGPIPE, which must not end this process; its answer still arrives.
  LineChild c(sh("exec 0<&-; sleep 0.2; echo late"));
  c.start();
  EXPECT_EQ(line_of(c.call(std::string(1 << 20, 'x'), 5, 1000)), "late");
}

TEST(LineChild, AForkDoesNotUseTheChildOfItsParent) {
  LineChild c({"/bin/cat"});
  c.start();
  const pid_t pid = fork();
  if (pid == 0) {
    const bool usable = c.usable();
    c.forget();
    _exit(usable ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the fork saw the parent's child as its own";
  EXPECT_EQ(line_of(c.call("still mine", 5, 1000)), "still mine");
}

}  // namespace
}  // namespace sdpa
