// The worker process: replies, deaths (signal, abort, exit, hang, memory)
// reported with their cause, a new worker after each death, errors passed on.
#include "harness/isolate/worker.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

// Requests: {"do": "echo"|"pid"|"segfault"|"abort"|"exit"|"hang"|"alloc"|"input"|"throw"}.
nlohmann::json act(const nlohmann::json& request) {
  const std::string what = request.at("do");
  if (what == "pid") return getpid();
  if (what == "segfault") raise(SIGSEGV);
  if (what == "abort") std::abort();
  if (what == "exit") std::exit(3);
  if (what == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
  if (what == "alloc") {
    static std::vector<char*> kept;
    for (;;) {
      char* block = new char[8 << 20];
      std::memset(block, 1, 8 << 20);
      kept.push_back(block);
    }
  }
  if (what == "input") throw InputError("case.q_len: bad");
  if (what == "throw") throw std::logic_error("kernel raised");
  return request;
}

WorkerDeath death(Worker& w, const char* what) {
  auto reply = w.call({{"do", what}});
  EXPECT_TRUE(std::holds_alternative<WorkerDeath>(reply)) << what;
  return std::holds_alternative<WorkerDeath>(reply) ? std::get<WorkerDeath>(reply) : WorkerDeath{};
}

TEST(Worker, OneProcessAnswersManyRequests) {
  Worker w(act, {});
  nlohmann::json first = std::get<nlohmann::json>(w.call({{"do", "pid"}}));
  for (int i = 0; i < 20; ++i) {
    auto reply = w.call({{"do", "echo"}, {"i", i}, {"x", 0.1 + i}});
    EXPECT_EQ(std::get<nlohmann::json>(reply).at("x").get<double>(), 0.1 + i);  // exact
  }
  EXPECT_EQ(std::get<nlohmann::json>(w.call({{"do", "pid"}})), first);
  EXPECT_NE(first.get<int>(), getpid());
  EXPECT_EQ(w.starts(), 1);
}

TEST(Worker, ASignalIsACrashNamingItAndTheNextCallRestarts) {
  Worker w(act, {});
  WorkerDeath d = death(w, "segfault");
  EXPECT_EQ(d.verdict, Verdict::crash);
  EXPECT_EQ(d.detail, "the worker killed by SIGSEGV (Segmentation fault)");
  EXPECT_NE(death(w, "abort").detail.find("SIGABRT"), std::string::npos);
  EXPECT_EQ(death(w, "exit").detail, "the worker exited with status 3");
  EXPECT_EQ(std::get<nlohmann::json>(w.call({{"do", "echo"}})).at("do"), "echo");
  EXPECT_EQ(w.starts(), 4);
}

TEST(Worker, AHangIsATimeout) {
  Worker w(act, {0.2, 0});
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(death(w, "hang").verdict, Verdict::timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(std::get<nlohmann::json>(w.call({{"do", "echo"}})).at("do"), "echo");
}

TEST(Worker, UnboundedAllocationIsOom) {
  Worker w(act, {10, 64});
  WorkerDeath d = death(w, "alloc");
  EXPECT_EQ(d.verdict, Verdict::oom) << d.detail;
  EXPECT_NE(d.detail.find("64 MiB"), std::string::npos) << d.detail;
  EXPECT_EQ(std::get<nlohmann::json>(w.call({{"do", "echo"}})).at("do"), "echo");
}

TEST(Worker, ErrorsOfTheHandlerArePassedOnAndTheWorkerStays) {
  Worker w(act, {});
  EXPECT_THROW(w.call({{"do", "input"}}), InputError);
  EXPECT_THROW(w.call({{"do", "throw"}}), std::runtime_error);
  EXPECT_EQ(std::get<nlohmann::json>(w.call({{"do", "echo"}})).at("do"), "echo");
  EXPECT_EQ(w.starts(), 1);
}

// Binary bytes travel as they are, in a one-field message (a campaign's
// draw requests and counted replies) and as a bare reply, next to messages
// that go as MessagePack: every form reads back byte for byte.
TEST(Worker, BinaryMessagesComeBackByteForByte) {
  Worker w(
      [](const nlohmann::json& request) -> nlohmann::json {
        if (request.is_object() && request.size() == 1 && request.begin().value().is_binary()) {
          std::vector<uint8_t> bytes = request.begin().value().get_binary();
          bytes.insert(bytes.begin(), request.begin().key().begin(), request.begin().key().end());
          return nlohmann::json::binary(bytes);  // the key, then the bytes
        }
        return request;
      },
      {});
  for (const std::string& key : {std::string("draw"), std::string(), std::string(300, 'k')}) {
    for (std::vector<uint8_t> bytes : {std::vector<uint8_t>{}, std::vector<uint8_t>{0, 255, 1, 0}}) {
      auto reply = std::get<nlohmann::json>(w.call({{key, nlohmann::json::binary(bytes)}}));
      ASSERT_TRUE(reply.is_binary()) << key.size();
      std::vector<uint8_t> want(key.begin(), key.end());
      want.insert(want.end(), bytes.begin(), bytes.end());
      EXPECT_EQ(reply.get_binary(), want) << key.size();
    }
  }
  const nlohmann::json two = {{"a", nlohmann::json::binary({1, 2})}, {"b", 1}};
  EXPECT_EQ(std::get<nlohmann::json>(w.call(two)), two);
  EXPECT_EQ(w.starts(), 1);
}

// A frame as the worker's protocol writes one: the payload's length, then
// the payload (its form byte, 0: MessagePack, then the message).
std::vector<uint8_t> msgpack_frame(const nlohmann::json& j) {
  std::vector<uint8_t> payload{0};
  nlohmann::json::to_msgpack(j, payload);
  const uint64_t n = payload.size();
  std::vector<uint8_t> frame(sizeof n + payload.size());
  std::memcpy(frame.data(), &n, sizeof n);
  std::copy(payload.begin(), payload.end(), frame.begin() + sizeof n);
  return frame;
}

void write_bytes(int fd, const std::vector<uint8_t>& bytes, size_t from, size_t to) {
  while (from < to) {
    const ssize_t w = write(fd, bytes.data() + from, to - from);
    ASSERT_GT(w, 0);
    from += static_cast<size_t>(w);
  }
}

// Frames {"i": 0} .. {"i": n - 1}, one after another.
std::vector<uint8_t> numbered_frames(int n) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < n; ++i) {
    const std::vector<uint8_t> f = msgpack_frame({{"i", i}});
    bytes.insert(bytes.end(), f.begin(), f.end());
  }
  return bytes;
}

// Frames written together are taken from one read, in order, without
// reading again; a frame cut between writes, and one larger than a read's
// chunk, come back whole; a writer gone mid-frame is end of file.
TEST(FrameBuffer, TakesTheFramesOfOneReadInOrderAndWaitsForTheRestOfAFrame) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const std::vector<uint8_t> three = numbered_frames(3);
  write_bytes(fds[1], three, 0, three.size());
  FrameBuffer in;
  nlohmann::json out;
  EXPECT_FALSE(in.has_frame());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(in.next(fds[0], out));
    EXPECT_EQ(out, nlohmann::json({{"i", i}}));
    EXPECT_EQ(in.has_frame(), i < 2) << i;  // the next ones came with the first read
  }
  const std::vector<uint8_t> big = msgpack_frame({{"s", std::string(200000, 'x')}});
  for (size_t cut : {size_t{3}, size_t{8}, big.size() / 2}) {
    write_bytes(fds[1], big, 0, cut);
    std::thread rest([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      write_bytes(fds[1], big, cut, big.size());
    });
    const bool taken = in.next(fds[0], out);
    rest.join();
    ASSERT_TRUE(taken) << cut;
    EXPECT_EQ(out["s"].get<std::string>().size(), 200000u) << cut;
    EXPECT_FALSE(in.has_frame()) << cut;
  }
  write_bytes(fds[1], big, 0, 100);
  close(fds[1]);
  EXPECT_FALSE(in.next(fds[0], out));
  close(fds[0]);
}

// held() parses the frames behind the one taken without taking them, and
// stops at a frame not yet whole.
TEST(FrameBuffer, HeldFramesAreThoseBehindTheTakenOneAndStayToBeTaken) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const std::vector<uint8_t> bytes = numbered_frames(4);
  const std::vector<uint8_t> cut = msgpack_frame({{"i", 4}});
  write_bytes(fds[1], bytes, 0, bytes.size());
  write_bytes(fds[1], cut, 0, cut.size() - 1);  // the fifth frame but its last byte
  FrameBuffer in;
  nlohmann::json out;
  EXPECT_TRUE(in.held(8).empty());  // nothing read yet
  ASSERT_TRUE(in.next(fds[0], out));
  EXPECT_EQ(out, nlohmann::json({{"i", 0}}));
  const auto all = in.held(8);
  ASSERT_EQ(all.size(), 3u);  // 1, 2, 3: the fifth is not whole
  for (int i = 0; i < 3; ++i) EXPECT_EQ(all[i], nlohmann::json({{"i", i + 1}}));
  EXPECT_EQ(in.held(2).size(), 2u);
  for (int i = 1; i < 4; ++i) {
    ASSERT_TRUE(in.next(fds[0], out));
    EXPECT_EQ(out, nlohmann::json({{"i", i}}));
  }
  write_bytes(fds[1], cut, cut.size() - 1, cut.size());
  ASSERT_TRUE(in.next(fds[0], out));
  EXPECT_EQ(out, nlohmann::json({{"i", 4}}));
  close(fds[0]);
  close(fds[1]);
}

// A worker's look-ahead sees each request once, with those held behind it
// up to its depth; one that throws leaves every request answered.
TEST(Worker, ALookaheadSeesEachRequestOnceWithThoseHeldBehindIt) {
  // In the worker: the requests each look saw, by "i"; every reply carries them.
  static nlohmann::json looks = nlohmann::json::array();
  WorkerLookahead lookahead{[](const std::vector<nlohmann::json>& requests) {
                              nlohmann::json ids = nlohmann::json::array();
                              for (const auto& r : requests) ids.push_back(r.at("i"));
                              looks.push_back(ids);
                              if (requests.size() == 2) throw std::runtime_error("a look that fails");
                            },
                            3};
  Worker w([](const nlohmann::json&) { return looks; }, {}, lookahead);
  for (int i = 0; i < 5; ++i) w.submit({{"i", i}});
  w.flush();  // one write: the worker's first read holds all five
  std::vector<nlohmann::json> replies;
  while (replies.size() < 5) {
    if (auto reply = w.collect(true)) replies.push_back(std::get<nlohmann::json>(*reply));
  }
  const nlohmann::json first = nlohmann::json::parse("[[0, 1, 2]]");
  const nlohmann::json second = nlohmann::json::parse("[[0, 1, 2], [3, 4]]");
  EXPECT_EQ(replies[0], first);
  EXPECT_EQ(replies[2], first);
  EXPECT_EQ(replies[3], second);
  EXPECT_EQ(replies[4], second);
}

// A worker that looks ahead and dies is charged nothing: the death may be a
// look's at a later request. Its requests run again in a worker that does
// not look ahead, where a death is its own request's.
TEST(Worker, ADeathInAWorkerThatLooksAheadIsChargedToItsOwnRequest) {
  for (bool handler_dies_too : {true, false}) {
    // The look dies on seeing request 2 behind the one it serves; the
    // handler dies on serving it, or not.
    WorkerLookahead lookahead{[](const std::vector<nlohmann::json>& requests) {
                                for (size_t r = 1; r < requests.size(); ++r)
                                  if (requests[r].value("poison", false)) raise(SIGSEGV);
                              },
                              8};
    Worker w(
        [handler_dies_too](const nlohmann::json& r) {
          if (handler_dies_too && r.value("poison", false)) raise(SIGSEGV);
          return r.at("i");
        },
        {}, lookahead);
    for (int i = 0; i < 5; ++i) w.submit({{"i", i}, {"poison", i == 2}});
    w.flush();
    std::vector<std::variant<nlohmann::json, WorkerDeath>> replies;
    while (replies.size() < 5) {
      pollfd p{w.fd(), POLLIN, 0};
      const int ready = poll(&p, 1, kWorkerPollMillis);
      if (auto reply = w.collect(ready > 0)) replies.push_back(std::move(*reply));
    }
    for (int i = 0; i < 5; ++i) {
      const bool dies = handler_dies_too && i == 2;
      ASSERT_EQ(std::holds_alternative<WorkerDeath>(replies[i]), dies) << i << " " << handler_dies_too;
      if (!dies) EXPECT_EQ(std::get<nlohmann::json>(replies[i]), i);
    }
    EXPECT_EQ(w.starts(), handler_dies_too ? 3 : 2);  // the looking worker, then one per death
  }
}

// A frame declared past the limit is an error before its bytes are held.
TEST(FrameBuffer, RefusesAFrameLongerThanItsLimit) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::vector<uint8_t> header(sizeof(uint64_t));
  const uint64_t n = FrameBuffer::kMaxFrameBytes + 1;
  std::memcpy(header.data(), &n, sizeof n);
  write_bytes(fds[1], header, 0, header.size());
  FrameBuffer in;
  nlohmann::json out;
  try {
    in.next(fds[0], out);
    FAIL() << "a frame past the limit was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("past the limit of 1073741824"), std::string::npos) << e.what();
  }
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace sdpa
