//===- TcpAttackTest.cpp - Strangers against a TCP job ----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The attacks of issue 48 against the TCP transport, run over loopback: a
// stranger that claims rank 1 (with the protocol and a guessed proof, or
// with another secret), a key probe, a squatter on rank 0's port, a
// connection to another address of the host, a job across hosts with no
// secret, and a joined peer that sends a frame whose header lies. Each
// rank is a forked process (docs/runtime.md, "Who can join a TCP job").
//
//===----------------------------------------------------------------------===//

#include "TcpJob.h"
#include "TcpTesting.h"

#include "gtest/gtest.h"

#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

using namespace overlap::process::tcp;
using overlap::testing::freePort;
using overlap::testing::setRankVariables;
using overlap::testing::tcp;
using overlap::testing::text;

namespace {

const char *const kSecret = "the job's secret, 32 bytes long!";

/// A child process running `body`, its stderr into `pipeOut` when given.
pid_t spawn(const std::function<int()> &body, int pipeOut = -1) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(60);
    if (pipeOut >= 0)
      ::dup2(pipeOut, 2);
    std::exit(body());
  }
  return pid;
}

int exitOf(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

std::string drain(int fd) {
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
    out.append(buffer, static_cast<size_t>(n));
  return out;
}

/// Joins as the rank the variables name; 0 when joined and finished, 2
/// (with the reason on stderr) when the transport refused.
int joinAndFinish(const std::function<void(overlap_mpi_comm)> &work = {}) {
  int rank = -1, size = 0, multiple = 0, tagUb = 0, initialized = 0;
  if (int rc = tcp().init(&rank, &size, &multiple, &tagUb, &initialized)) {
    std::fprintf(stderr, "init: %s\n", text(rc).c_str());
    return 2;
  }
  if (work)
    work(nullptr);
  return tcp().finalize() == 0 ? 0 : 4;
}

/// A lone rank `rank` of `size` with the test's secret that joins and ends
/// (its exit status: joinAndFinish's), meeting at `port` within `ms`.
pid_t spawnWithSecret(int rank, int size, int port, const char *ms,
                      int pipeOut = -1) {
  return spawn(
      [=] {
        setRankVariables(rank, size, port, ms);
        ::setenv("OVERLAP_JOB_SECRET", kSecret, 1);
        return joinAndFinish();
      },
      pipeOut);
}

int connectLoopback(const char *ip, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip, &address.sin_addr);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) ==
      0)
    return fd;
  ::close(fd);
  return -1;
}

/// A connection to `ip`:`port`, retried for about 2 s; -1 if none.
int connectSoon(const char *ip, int port) {
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 2000; ++tries)
    if ((fd = connectLoopback(ip, port)) < 0)
      ::usleep(1000);
  return fd;
}

bool readSome(int fd, void *data, size_t bytes, int ms) {
  char *p = static_cast<char *>(data);
  while (bytes) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, ms) <= 0)
      return false;
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n <= 0)
      return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

TEST(TcpAttack, StrangersCannotTakeARanksPlace) {
  // A job of 4 whose rank 1 comes late. Before it, a raw client speaks the
  // protocol and claims rank 1 with a guessed proof, and a transport with
  // another secret tries to join as rank 1. Both are refused; neither
  // learns the key or the secret; the real job runs and ends with 0.
  const int port = freePort();
  int pipes[2];
  ASSERT_EQ(::pipe(pipes), 0);
  auto rank = [&](int r, int delayMs, const char *secret) {
    return spawn(
        [=] {
          setRankVariables(r, 4, port, "20000");
          ::setenv("OVERLAP_JOB_SECRET", secret, 1);
          std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
          int code = joinAndFinish();
          std::fprintf(stderr, "[%s %d] exit %d\n",
                       secret == kSecret ? "rank" : "stranger", r, code);
          return code;
        },
        pipes[1]);
  };
  std::vector<pid_t> ranks = {rank(0, 0, kSecret)};
  pid_t raw = spawn(
      [&] {
        int fd = connectSoon("127.0.0.1", port);
        Greeting greeting;
        Challenge challenge;
        Hello hello;
        hello.rank = 1;
        hello.size = 4;
        std::memset(hello.proof, 0x5a, sizeof hello.proof);
        Answer answer;
        if (fd < 0 || ::send(fd, &greeting, sizeof greeting, 0) < 0 ||
            !readSome(fd, &challenge, sizeof challenge, 5000) ||
            challenge.status != 0 || ::send(fd, &hello, sizeof hello, 0) < 0 ||
            !readSome(fd, &answer, sizeof answer, 5000))
          return 10;
        std::string why(static_cast<size_t>(answer.bytes), '\0');
        if (answer.bytes > 4096 || !readSome(fd, &why[0], why.size(), 5000))
          return 11;
        std::fprintf(stderr, "[raw] status %u: %s\n", answer.status,
                     why.c_str());
        return answer.status == 1 ? 0 : 12;
      },
      pipes[1]);
  EXPECT_EQ(exitOf(raw), 0);
  pid_t stranger = rank(1, 0, "another secret, also 32 bytes..");
  EXPECT_EQ(exitOf(stranger), 2);
  for (int r = 1; r < 4; ++r)
    ranks.push_back(rank(r, r == 1 ? 300 : 0, kSecret));
  for (pid_t pid : ranks)
    EXPECT_EQ(exitOf(pid), 0);
  ::close(pipes[1]);
  std::string out = drain(pipes[0]);
  ::close(pipes[0]);
  EXPECT_NE(out.find("[raw] status 1: not admitted: the hello does not prove "
                     "this job's secret"),
            std::string::npos)
      << out;
  EXPECT_NE(
      out.find("init: rank 1: rank 0 at 127.0.0.1:" + std::to_string(port) +
               " (OVERLAP_PROCESS_ADDR) does not prove the job's "
               "secret"),
      std::string::npos)
      << out;
  // Nothing said to a stranger names the job's key or secret.
  EXPECT_EQ(out.find("tcp-test"), std::string::npos) << out;
  EXPECT_EQ(out.find(kSecret), std::string::npos) << out;
  for (int r = 0; r < 4; ++r)
    EXPECT_NE(out.find("[rank " + std::to_string(r) + "] exit 0"),
              std::string::npos)
        << out;
}

TEST(TcpAttack, AKeyProbeLearnsNothing) {
  // The first version's hello with a wrong key hash got the key back in
  // clear. Now a client of another version hears only that.
  const int port = freePort();
  pid_t root = spawnWithSecret(0, 2, port, "3000");
  int fd = connectSoon("127.0.0.1", port);
  ASSERT_GE(fd, 0);
  struct {
    uint32_t magic = kMagic, version = 1;
    int32_t rank = 1, size = 2;
    uint64_t keyHash = 12345;
    uint32_t pid = 1;
    uint16_t port = 1, reserved = 0;
  } oldHello;
  ASSERT_EQ(::send(fd, &oldHello, sizeof oldHello, 0),
            static_cast<ssize_t>(sizeof oldHello));
  std::string heard(8192, '\0');
  size_t got = 0;
  for (ssize_t n; got < heard.size() &&
                  (n = ::recv(fd, &heard[got], heard.size() - got, 0)) > 0;)
    got += static_cast<size_t>(n);
  heard.resize(got);
  ::close(fd);
  EXPECT_NE(heard.find("not an Overlap process transport of version 2"),
            std::string::npos)
      << heard;
  EXPECT_EQ(heard.find("tcp-test"), std::string::npos) << heard;
  EXPECT_EQ(heard.find(kSecret), std::string::npos) << heard;
  EXPECT_EQ(exitOf(root), 2); // rank 1 never came
}

TEST(TcpAttack, ASquatterOnTheRootPortLearnsNothingOfTheRank) {
  // Something else holds rank 0's port and answers as rank 0 would, with a
  // made-up proof: the rank sends it only a nonce, then gives up.
  const int port = freePort();
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(
      ::bind(listener, reinterpret_cast<sockaddr *>(&address), sizeof address),
      0);
  ASSERT_EQ(::listen(listener, 4), 0);
  int pipes[2];
  ASSERT_EQ(::pipe(pipes), 0);
  pid_t victim = spawnWithSecret(1, 2, port, "3000", pipes[1]);
  ::close(pipes[1]);
  int fd = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(fd, 0);
  std::string heard(4096, '\0');
  ssize_t n = 0;
  pollfd pfd{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 5000), 1);
  ::usleep(200000); // all it would say before an answer
  n = ::recv(fd, &heard[0], heard.size(), 0);
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof(Greeting)));
  Challenge challenge;
  std::memset(challenge.nonce, 1, sizeof challenge.nonce);
  std::memset(challenge.proof, 2, sizeof challenge.proof);
  ASSERT_EQ(::send(fd, &challenge, sizeof challenge, 0),
            static_cast<ssize_t>(sizeof challenge));
  EXPECT_FALSE(readSome(fd, &heard[0], 1, 5000)); // closed, nothing more
  ::close(fd);
  ::close(listener);
  EXPECT_EQ(exitOf(victim), 2);
  std::string out = drain(pipes[0]);
  ::close(pipes[0]);
  EXPECT_NE(out.find("does not prove the job's secret"), std::string::npos)
      << out;
}

TEST(TcpAttack, RankZeroListensOnlyWhereItWasTold) {
  // OVERLAP_PROCESS_ADDR says 127.0.0.1: another address of this host
  // (127.0.0.2, loopback too) must not reach it.
  const int port = freePort();
  pid_t root = spawnWithSecret(0, 2, port, "1500");
  bool reachedGiven = false, reachedOther = false;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < until) {
    if (int fd = connectLoopback("127.0.0.2", port); fd >= 0) {
      reachedOther = true;
      ::close(fd);
    }
    if (!reachedGiven)
      if (int fd = connectLoopback("127.0.0.1", port); fd >= 0) {
        reachedGiven = true;
        ::close(fd);
      }
    ::usleep(2000);
  }
  EXPECT_TRUE(reachedGiven);
  EXPECT_FALSE(reachedOther);
  EXPECT_EQ(exitOf(root), 2);
}

TEST(TcpAttack, AJobAcrossHostsNeedsASecret) {
  int pipes[2];
  ASSERT_EQ(::pipe(pipes), 0);
  auto start = std::chrono::steady_clock::now();
  pid_t rank1 = spawn(
      [] {
        setRankVariables(1, 2, 1, "20000");
        ::setenv("OVERLAP_PROCESS_ADDR", "192.0.2.1:29502", 1); // TEST-NET-1
        ::unsetenv("OVERLAP_JOB_SECRET");
        ::unsetenv("OVERLAP_JOB_SECRET_FILE");
        ::unsetenv("OVERLAP_BOOTSTRAP_DIR");
        return joinAndFinish();
      },
      pipes[1]);
  ::close(pipes[1]);
  EXPECT_EQ(exitOf(rank1), 2);
  std::string out = drain(pipes[0]);
  ::close(pipes[0]);
  EXPECT_NE(out.find("rank 1: rank 0 at 192.0.2.1:29502 (OVERLAP_PROCESS_ADDR) "
                     "is on another host and no secret was given for the "
                     "job: set OVERLAP_JOB_SECRET"),
            std::string::npos)
      << out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

/// In a joined rank process: writes `frame` raw on the connection to rank 0
/// (the socket whose peer port is rank 0's, `port`).
void sendRawToRankZero(int port, const Frame &frame) {
  for (int fd = 3; fd < 1024; ++fd) {
    sockaddr_in peer{};
    socklen_t length = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &length) == 0 &&
        ntohs(peer.sin_port) == port)
      ::send(fd, &frame, sizeof frame, 0);
  }
}

/// Two joined ranks: rank 1 writes `frame` raw on its connection to rank 0
/// (as a forged one would arrive) and waits; rank 0 waits in a max and ends
/// with `end(status of the max)` when the max returns. Rank 0's exit status
/// (rank 1 is killed after it); rank 0's stderr goes to `pipeOut`.
int rankZeroAfterRawFrame(const Frame &frame, int (*end)(int rc),
                          int pipeOut = -1) {
  const int port = freePort();
  std::vector<pid_t> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(spawn(
        [&, r] {
          setRankVariables(r, 2, port, "20000");
          int rank = -1, size = 0, multiple = 0, tagUb = 0, initialized = 0;
          if (tcp().init(&rank, &size, &multiple, &tagUb, &initialized))
            return 2;
          overlap_mpi_comm comm = nullptr;
          if (tcp().dupWorld(&comm))
            return 3;
          if (r == 1) {
            sendRawToRankZero(port, frame);
            ::pause(); // until killed, or the alarm
            return 5;
          }
          int64_t value = 0;
          return end(tcp().allreduceMax(comm, &value));
        },
        pipeOut));
  int status = exitOf(ranks[0]);
  ::kill(ranks[1], SIGKILL);
  exitOf(ranks[1]);
  return status;
}

TEST(TcpAttack, AnAbortFrameOfCodeZeroEndsTheReceiverWithOne) {
  // The receiver's side of "an abort never exits 0": a peer sends an Abort
  // frame whose code is 0; rank 0, waiting in a max, ends with 1, not 0.
  Frame abort;
  abort.kind = Abort;
  abort.tag = 0;
  EXPECT_EQ(rankZeroAfterRawFrame(abort, [](int) { return 7; }), 1);
}

TEST(TcpAttack, AFrameWhoseHeaderLiesDropsItsSenderNotTheReader) {
  // A joined rank 1 writes a Data header claiming 2^40 bytes on its
  // connection to rank 0. Rank 0 drops it with the reason (the reader
  // thread threw std::bad_alloc, and the process died, before) and the
  // call waiting on it fails with that reason.
  int pipes[2];
  ASSERT_EQ(::pipe(pipes), 0);
  Frame lie;
  lie.kind = Data;
  lie.bytes = uint64_t(1) << 40;
  int status = rankZeroAfterRawFrame(
      lie,
      [](int rc) -> int {
        std::fprintf(stderr, "[0] max: %s\n", rc ? text(rc).c_str() : "ok");
        // Not finalized (rank 1 never says goodbye): _Exit, so that the
        // job's threads and buffers are not a leak report at exit.
        std::fflush(stderr);
        std::_Exit(rc ? 6 : 7);
      },
      pipes[1]);
  ::close(pipes[1]);
  EXPECT_EQ(status, 6);
  std::string out = drain(pipes[0]);
  ::close(pipes[0]);
  EXPECT_NE(out.find("rank 1 sent a frame of kind 1 with 1099511627776 bytes: "
                     "more than 2147483647"),
            std::string::npos)
      << out;
}

} // namespace
