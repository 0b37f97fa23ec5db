// Several workers side by side: requests run at the same time in distinct
// processes, replies carry their tags, and one worker's death or hang is
// reported for its own request while the others' replies still come back;
// a worker holding several requests answers them in order; a coalescing
// parent takes the replies that came while it waited in one wake-up;
// requests go out in batches, and every one before the parent waits.
#include "harness/isolate/worker_pool.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

namespace sdpa {
namespace {

// Requests: {"do": "sleep"|"segfault"|"hang"|"touch", "ms": N, "path": P};
// the reply is the worker's pid. "touch" creates the file P.
nlohmann::json act(const nlohmann::json& request) {
  const std::string what = request.at("do");
  if (what == "segfault") raise(SIGSEGV);
  if (what == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
  if (what == "touch") std::ofstream(request.at("path").get<std::string>()) << "";
  std::this_thread::sleep_for(std::chrono::milliseconds(request.value("ms", 0)));
  return getpid();
}

TEST(WorkerPool, RequestsRunSideBySideInDistinctWorkers) {
  WorkerPool pool(3, act, {});
  auto t0 = std::chrono::steady_clock::now();
  for (int tag = 0; tag < 3; ++tag) pool.submit(tag, {{"do", "sleep"}, {"ms", 300}});
  EXPECT_TRUE(pool.full());
  std::set<int64_t> tags;
  std::set<int> pids;
  for (int k = 0; k < 3; ++k) {
    WorkerPool::Reply r = pool.wait();
    tags.insert(r.tag);
    pids.insert(std::get<nlohmann::json>(r.reply).get<int>());
  }
  // Three 300 ms requests in well under 900 ms: they ran at the same time.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(800));
  EXPECT_EQ(tags, (std::set<int64_t>{0, 1, 2}));
  EXPECT_EQ(pids.size(), 3u);
  EXPECT_EQ(pool.busy(), 0);
}

TEST(WorkerPool, ADeathAndAHangAreTheirOwnRequestsAndTheRestReply) {
  WorkerPool pool(3, act, {0.3, 0});
  pool.submit(10, {{"do", "segfault"}});
  pool.submit(11, {{"do", "hang"}});
  pool.submit(12, {{"do", "sleep"}, {"ms", 50}});
  std::map<int64_t, std::variant<nlohmann::json, WorkerDeath>> replies;
  for (int k = 0; k < 3; ++k) {
    WorkerPool::Reply r = pool.wait();
    replies.emplace(r.tag, r.reply);
  }
  ASSERT_TRUE(std::holds_alternative<WorkerDeath>(replies.at(10)));
  EXPECT_EQ(std::get<WorkerDeath>(replies.at(10)).verdict, Verdict::crash);
  ASSERT_TRUE(std::holds_alternative<WorkerDeath>(replies.at(11)));
  EXPECT_EQ(std::get<WorkerDeath>(replies.at(11)).verdict, Verdict::timeout);
  EXPECT_TRUE(std::holds_alternative<nlohmann::json>(replies.at(12)));
  // The dead workers' slots take requests again.
  pool.submit(13, {{"do", "sleep"}});
  pool.submit(14, {{"do", "sleep"}});
  pool.submit(15, {{"do", "sleep"}});
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(std::holds_alternative<nlohmann::json>(pool.wait().reply));
}

TEST(WorkerPool, AHangIsFoundWhileAnotherWorkerKeepsReplying) {
  WorkerPool pool(2, act, {0.3, 0});
  pool.submit(0, {{"do", "hang"}});
  int64_t tag = 1;
  pool.submit(tag, {{"do", "sleep"}, {"ms", 1}});
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    WorkerPool::Reply r = pool.wait();
    if (r.tag == 0) {
      EXPECT_EQ(std::get<WorkerDeath>(r.reply).verdict, Verdict::timeout);
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    pool.submit(++tag, {{"do", "sleep"}, {"ms", 1}});
  }
  EXPECT_GT(tag, 10);  // the other worker went on replying meanwhile
}

TEST(WorkerPool, AWorkerAnswersItsQueuedRequestsInOrderWithoutARoundTrip) {
  WorkerPool pool(1, act, {}, 2);
  EXPECT_EQ(pool.capacity(), 2);
  pool.submit(0, {{"do", "sleep"}, {"ms", 100}});
  pool.submit(1, {{"do", "sleep"}, {"ms", 100}});
  EXPECT_TRUE(pool.full());
  WorkerPool::Reply first = pool.wait();
  // The second request was already in the worker: it runs while the
  // parent is away (here, 250 ms) and is answered at once after.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  auto t0 = std::chrono::steady_clock::now();
  WorkerPool::Reply second = pool.wait();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  EXPECT_EQ(first.tag, 0);
  EXPECT_EQ(second.tag, 1);
  EXPECT_EQ(std::get<nlohmann::json>(first.reply), std::get<nlohmann::json>(second.reply));  // one process
}

TEST(WorkerPool, ACoalescingParentTakesTheRepliesThatCameWhileItWaited) {
  // Four 20 ms requests queued in one worker, a 300 ms delay: the first
  // wait finds no reply, sleeps the delay, meanwhile all four are answered,
  // and the next three waits return at once, in order.
  WorkerPool pool(1, act, {}, 4, std::chrono::milliseconds(300));
  for (int tag = 0; tag < 4; ++tag) pool.submit(tag, {{"do", "sleep"}, {"ms", 20}});
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(pool.wait().tag, 0);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
  auto t1 = std::chrono::steady_clock::now();
  for (int tag = 1; tag < 4; ++tag) EXPECT_EQ(pool.wait().tag, tag);
  EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::milliseconds(150));
  // Without the delay, the first reply is taken as soon as it comes.
  WorkerPool eager(1, act, {}, 4);
  eager.submit(0, {{"do", "sleep"}, {"ms", 20}});
  t0 = std::chrono::steady_clock::now();
  eager.wait();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
}

// A crash, a reply and a hang queued in one worker: the death belongs to
// the oldest request, the queued ones go to a new worker, the hang times
// out. A coalescing delay changes when replies are read, and batching when
// requests are sent, not whose the replies are.
void expect_each_request_its_own_end(std::chrono::microseconds coalesce, int depth = 3) {
  WorkerPool pool(1, act, {0.3, 0}, depth, coalesce);
  pool.submit(20, {{"do", "segfault"}});
  pool.submit(21, {{"do", "sleep"}});
  pool.submit(22, {{"do", "hang"}});
  WorkerPool::Reply crash = pool.wait();
  EXPECT_EQ(crash.tag, 20);
  ASSERT_TRUE(std::holds_alternative<WorkerDeath>(crash.reply));
  EXPECT_EQ(std::get<WorkerDeath>(crash.reply).verdict, Verdict::crash);
  WorkerPool::Reply next = pool.wait();
  EXPECT_EQ(next.tag, 21);
  ASSERT_TRUE(std::holds_alternative<nlohmann::json>(next.reply));
  WorkerPool::Reply hang = pool.wait();
  EXPECT_EQ(hang.tag, 22);
  ASSERT_TRUE(std::holds_alternative<WorkerDeath>(hang.reply));
  EXPECT_EQ(std::get<WorkerDeath>(hang.reply).verdict, Verdict::timeout);
  EXPECT_EQ(pool.busy(), 0);
}

TEST(WorkerPool, ADeathBelongsToTheOldestRequestAndTheQueuedOnesGoToANewWorker) {
  expect_each_request_its_own_end(std::chrono::microseconds(0));
}

TEST(WorkerPool, ACoalescingPoolStillReportsADeathAndAHangForTheirOwnRequests) {
  expect_each_request_its_own_end(std::chrono::milliseconds(5));
}

TEST(WorkerPool, BatchedRequestsStillGetADeathAndAHangForTheirOwnRequests) {
  // Depth 8: the crash goes out alone, the sleep and the hang in one batch.
  expect_each_request_its_own_end(std::chrono::milliseconds(5), 8);
}

// Whether the worker ran the request that creates `path` within `ms`.
bool touched(const std::filesystem::path& path, int ms) {
  for (int k = 0; k < ms / 10 && !std::filesystem::exists(path); ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return std::filesystem::exists(path);
}

TEST(WorkerPool, RequestsGoOutInBatchesAndAllBeforeTheParentWaits) {
  const auto dir = std::filesystem::temp_directory_path() / ("sdpacheck-batch-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  auto touch = [&](int k) {
    return nlohmann::json{{"do", "touch"}, {"path", (dir / std::to_string(k)).string()}};
  };
  constexpr int kSent = 10000, kHeld = 300;  // ms: a sent request runs well within kSent, even under load
  // Depth 8: a worker's requests go out two at a time, or at once when it holds nothing else.
  WorkerPool pool(1, act, {}, 8);
  pool.submit(0, touch(0));
  EXPECT_TRUE(touched(dir / "0", kSent));  // an idle worker's request goes at once
  pool.submit(1, touch(1));
  EXPECT_FALSE(touched(dir / "1", kHeld));  // held: the worker holds request 0's reply
  pool.submit(2, touch(2));
  EXPECT_TRUE(touched(dir / "1", kSent));  // the second made a batch
  EXPECT_TRUE(touched(dir / "2", kSent));
  pool.submit(3, touch(3));
  EXPECT_FALSE(touched(dir / "3", kHeld));
  pool.flush();
  EXPECT_TRUE(touched(dir / "3", kSent));
  pool.submit(4, touch(4));
  EXPECT_EQ(pool.wait().tag, 0);
  EXPECT_TRUE(touched(dir / "4", kSent));  // wait sent it before it polled
  for (int tag = 1; tag < 5; ++tag) EXPECT_EQ(pool.wait().tag, tag);
}

TEST(WorkerPool, AQueuedRequestsClockStartsWhenTheOneBeforeItIsAnswered) {
  // Two 250 ms requests under a 400 ms limit: together they take 500 ms,
  // each within its own limit.
  WorkerPool pool(1, act, {0.4, 0}, 2);
  pool.submit(0, {{"do", "sleep"}, {"ms", 250}});
  pool.submit(1, {{"do", "sleep"}, {"ms", 250}});
  EXPECT_TRUE(std::holds_alternative<nlohmann::json>(pool.wait().reply));
  EXPECT_TRUE(std::holds_alternative<nlohmann::json>(pool.wait().reply));
}

}  // namespace
}  // namespace sdpa
