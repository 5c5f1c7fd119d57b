//===- TcpTransportTest.cpp - The process transport over TCP ----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// lib/Runtime/Process/TcpTransport.cpp on its own: each test forks four
// rank processes that join over loopback (OVERLAP_RANK, OVERLAP_PROCESS_ADDR)
// and check the calls the process backend makes: messages matched by
// source and tag in the order sent, synchronous sends, self sends, splits
// by color and key, barriers, the max; a peer that dies makes the calls
// waiting on it fail with the reason; an abort ends every rank.
//
//===----------------------------------------------------------------------===//

#include "ProcessBackend.h"
#include "TcpTesting.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <netinet/in.h>
#include <signal.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace overlap::process;
using overlap::testing::freePort;
using overlap::testing::tcp;
using overlap::testing::text;

namespace {

constexpr int kRanks = 4;

/// In a rank process: a failed check prints where and exits 1.
#define CHECK_RANK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "rank %d: %s:%d: %s\n", rank, __FILE__, __LINE__,   \
                   #cond);                                                     \
      std::_Exit(1);                                                           \
    }                                                                          \
  } while (0)

void setRankVariables(int rank, int port, const char *timeoutMs) {
  overlap::testing::setRankVariables(rank, kRanks, port, timeoutMs);
}

/// Runs `body(rank)` in kRanks forked processes joined over TCP; returns
/// each process's exit status (-signal if killed; 99 if it ran past 60 s).
/// `beforeRanks(port)`, when given, runs in the parent before they start.
std::vector<int> runRanks(const std::function<void(int)> &body,
                          const std::function<void(int)> &beforeRanks = {}) {
  const int port = freePort();
  if (beforeRanks)
    beforeRanks(port);
  std::vector<pid_t> pids;
  std::fflush(nullptr); // the children would print what is buffered again
  for (int r = 0; r < kRanks; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::alarm(60);
      setRankVariables(r, port, "20000");
      body(r);
      // exit, not _Exit: a sanitizer's report makes the status non-zero.
      std::exit(0);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status)             ? WEXITSTATUS(status)
                    : WTERMSIG(status) == SIGALRM ? 99
                                                  : -WTERMSIG(status));
  }
  return codes;
}

/// Finalizes the joined transport in a rank process (exit 4 if it fails).
#define CHECK_RANK_FINALIZE()                                                  \
  do {                                                                         \
    if (tcp().finalize() != 0)                                                 \
      std::_Exit(4);                                                           \
  } while (0)

int join(int expectRank) {
  int rank = -1, size = 0, multiple = 0, tagUb = 0, initialized = 0;
  int rc = tcp().init(&rank, &size, &multiple, &tagUb, &initialized);
  if (rc) {
    std::fprintf(stderr, "init: %s\n", text(rc).c_str());
    std::_Exit(2);
  }
  if (rank != expectRank || size != kRanks || !multiple || !initialized)
    std::_Exit(3);
  return rank;
}

/// Every rank process ended with exit status `code`.
void expectExits(const std::vector<int> &codes, int code) {
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(codes[r], code) << "rank " << r;
}

/// runRanks with each rank joined: `body(rank, comm)` gets its rank and a
/// duplicate of the world communicator, freed when `body` returns, before
/// the transport is finalized. Every process must end with status `code`.
void expectRanksExit(int code,
                     const std::function<void(int, overlap_mpi_comm)> &body) {
  expectExits(runRanks([&body](int expect) {
                int rank = join(expect);
                overlap_mpi_comm comm = nullptr;
                CHECK_RANK(tcp().dupWorld(&comm) == 0);
                body(rank, comm);
                tcp().commFree(comm);
                CHECK_RANK(tcp().finalize() == 0);
              }),
              code);
}

/// Receives one message from `source` with `tag`, polling.
std::string receive(overlap_mpi_comm comm, int source, int tag, int rank,
                    int *from = nullptr) {
  for (;;) {
    int found = 0, src = -1, gotTag = -1, bytes = 0;
    overlap_mpi_message message = nullptr;
    int rc = tcp().improbe(comm, source, tag, &found, &message, &src, &gotTag,
                           &bytes);
    CHECK_RANK(rc == 0);
    if (!found) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    CHECK_RANK(tag < 0 || gotTag == tag);
    std::string out(static_cast<size_t>(bytes), '\0');
    CHECK_RANK(tcp().mrecv(message, bytes ? &out[0] : nullptr, bytes) == 0);
    if (from)
      *from = src;
    return out;
  }
}

void waitDone(overlap_mpi_request &request, int rank) {
  for (int done = 0; !done;) {
    CHECK_RANK(tcp().test(&request, &done) == 0);
    if (!done)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  CHECK_RANK(request == nullptr);
}

} // namespace

TEST(TcpTransport, MessagesInOrderBySourceAndTag) {
  expectRanksExit(0, [](int rank, overlap_mpi_comm comm) {
    int next = (rank + 1) % kRanks, prev = (rank + kRanks - 1) % kRanks;
    // Three messages on tag 7 and one on tag 9 to the next rank, and one to
    // itself; taken by tag first, then in the order sent.
    std::vector<overlap_mpi_request> sends(5, nullptr);
    std::vector<std::string> payloads = {"a" + std::to_string(rank),
                                         "b" + std::to_string(rank),
                                         std::string(1 << 20, 'c'), "tag9"};
    for (int i = 0; i < 3; ++i)
      CHECK_RANK(tcp().issend(comm, next, 7, payloads[i].data(),
                              static_cast<int>(payloads[i].size()),
                              &sends[i]) == 0);
    CHECK_RANK(tcp().issend(comm, next, 9, payloads[3].data(), 4, &sends[3]) ==
               0);
    CHECK_RANK(tcp().issend(comm, rank, 5, "self", 4, &sends[4]) == 0);
    CHECK_RANK(receive(comm, rank, 5, rank) == "self");
    CHECK_RANK(receive(comm, prev, 9, rank) == "tag9");
    CHECK_RANK(receive(comm, prev, 7, rank) == "a" + std::to_string(prev));
    int from = -1;
    CHECK_RANK(receive(comm, -1, 7, rank, &from) == "b" + std::to_string(prev));
    CHECK_RANK(from == prev);
    CHECK_RANK(receive(comm, prev, -1, rank) == std::string(1 << 20, 'c'));
    for (auto &request : sends)
      waitDone(request, rank);
    // Nothing is left, and another communicator's messages are not seen.
    overlap_mpi_comm other = nullptr;
    CHECK_RANK(tcp().dupWorld(&other) == 0);
    overlap_mpi_request request = nullptr;
    CHECK_RANK(tcp().issend(other, next, 7, "x", 1, &request) == 0);
    int found = 1, src = 0, tag = 0, bytes = 0;
    overlap_mpi_message message = nullptr;
    CHECK_RANK(
        tcp().improbe(comm, -1, -1, &found, &message, &src, &tag, &bytes) == 0);
    CHECK_RANK(!found);
    CHECK_RANK(receive(other, prev, 7, rank) == "x");
    waitDone(request, rank);
    tcp().commFree(other);
  });
}

TEST(TcpTransport, SplitBarrierAndMax) {
  expectRanksExit(0, [](int rank, overlap_mpi_comm comm) {
    // Even and odd ranks, ordered by the negated rank: {2, 0} and {3, 1}.
    overlap_mpi_comm half = nullptr;
    CHECK_RANK(tcp().split(comm, rank % 2, -rank, &half) == 0);
    CHECK_RANK(half != nullptr);
    int halfRank = -1;
    CHECK_RANK(tcp().commRank(half, &halfRank) == 0);
    CHECK_RANK(halfRank == (rank >= 2 ? 0 : 1));
    // A message to half rank 1 of each half reaches world rank 0 or 1.
    if (halfRank == 0) {
      overlap_mpi_request request = nullptr;
      std::string mine = std::to_string(rank);
      CHECK_RANK(tcp().issend(half, 1, 3, mine.data(), 1, &request) == 0);
      waitDone(request, rank);
    } else {
      int from = -1;
      CHECK_RANK(receive(half, -1, 3, rank, &from) == std::to_string(rank + 2));
      CHECK_RANK(from == 0);
    }
    int64_t value = 10 * rank + 1;
    CHECK_RANK(tcp().allreduceMax(half, &value) == 0);
    CHECK_RANK(value == 10 * (rank % 2 + 2) + 1);
    value = rank == 1 ? 100 : rank;
    CHECK_RANK(tcp().allreduceMax(comm, &value) == 0);
    CHECK_RANK(value == 100);
    // MPI_UNDEFINED (a negative color) gives no communicator.
    overlap_mpi_comm none = half;
    CHECK_RANK(tcp().split(comm, rank == 3 ? -1 : 0, 0, &none) == 0);
    CHECK_RANK((none == nullptr) == (rank == 3));
    // A barrier completes only when every rank has entered it: rank 2
    // enters late, after the others found theirs not done.
    if (rank == 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    overlap_mpi_request barrier = nullptr;
    CHECK_RANK(tcp().ibarrier(comm, &barrier) == 0);
    int done = 0;
    if (rank != 2) {
      CHECK_RANK(tcp().test(&barrier, &done) == 0);
      CHECK_RANK(!done);
    }
    waitDone(barrier, rank);
    tcp().commFree(none);
    tcp().commFree(half);
  });
}

TEST(TcpTransport, ADeadPeerFailsTheCallsThatWaitOnIt) {
  expectRanksExit(0, [](int rank, overlap_mpi_comm comm) {
    if (rank == 3)
      std::_Exit(0); // gone without its goodbye
    // Waiting for rank 3's message, its barrier or its max fails, naming it.
    int rc = 0;
    for (int found = 0; !rc && !found;) {
      int src = 0, tag = 0, bytes = 0;
      overlap_mpi_message message = nullptr;
      rc = tcp().improbe(comm, 3, -1, &found, &message, &src, &tag, &bytes);
      CHECK_RANK(!found);
    }
    CHECK_RANK(text(rc).find("rank 3's connection closed before it finished") !=
               std::string::npos);
    int64_t value = 0;
    rc = tcp().allreduceMax(comm, &value);
    CHECK_RANK(rc != 0 && text(rc).find("rank 3") != std::string::npos);
    // The others still talk.
    overlap_mpi_request request = nullptr;
    if (rank < 2) {
      CHECK_RANK(tcp().issend(comm, 1 - rank, 4, "ok", 2, &request) == 0);
      CHECK_RANK(receive(comm, 1 - rank, 4, rank) == "ok");
      waitDone(request, rank);
    }
    // A send to it fails at once or when tested.
    rc = tcp().issend(comm, 3, 4, "late", 4, &request);
    if (rc == 0)
      for (int done = 0; !rc && !done;)
        rc = tcp().test(&request, &done);
    CHECK_RANK(rc != 0);
  });
}

TEST(TcpTransport, AbortEndsEveryRank) {
  expectRanksExit(5, [](int rank, overlap_mpi_comm comm) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      tcp().abort(5);
    }
    // The others wait in a max rank 1 never joins: its abort ends them.
    int64_t value = 0;
    tcp().allreduceMax(comm, &value);
    std::_Exit(1);
  });
}

TEST(TcpTransport, AnAbortOfCodeZeroEndsNoRankWithSuccess) {
  // Exit status 0 means a finished run: an abort never ends a rank so,
  // whatever code it names (issue 48: a frame of code 0 ended rank 0 with
  // status 0 and no result).
  expectRanksExit(1, [](int rank, overlap_mpi_comm comm) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      tcp().abort(0);
    }
    int64_t value = 0;
    tcp().allreduceMax(comm, &value);
    std::_Exit(7);
  });
}

TEST(TcpTransport, RankZeroGivesUpOnAnAbsentRankAndTellsTheOthers) {
  const int port = freePort();
  std::vector<pid_t> pids;
  int pipes[2];
  ASSERT_EQ(::pipe(pipes), 0);
  std::fflush(nullptr);
  for (int r = 0; r < kRanks - 1; ++r) { // rank 3 never comes
    pid_t pid = ::fork();
    if (pid == 0) {
      ::alarm(60);
      ::dup2(pipes[1], 2);
      setRankVariables(r, port, "1000");
      int rank = r, size = 0, multiple = 0, tagUb = 0, initialized = 0;
      int rc = tcp().init(&rank, &size, &multiple, &tagUb, &initialized);
      std::fprintf(stderr, "[%d] %s\n", r, rc ? text(rc).c_str() : "joined");
      std::_Exit(rc ? 4 : 0);
    }
    pids.push_back(pid);
  }
  ::close(pipes[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipes[0], buffer, sizeof buffer)) > 0;)
    out.append(buffer, static_cast<size_t>(n));
  ::close(pipes[0]);
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 4) << out;
  }
  EXPECT_NE(out.find("[0] rank 3 did not connect to rank 0 at 127.0.0.1:" +
                     std::to_string(port) +
                     " (OVERLAP_PROCESS_ADDR) within 1000 ms"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[1] rank 1: rank 0 at 127.0.0.1:" + std::to_string(port) +
                     " (OVERLAP_PROCESS_ADDR) gave up: rank 3 did not connect"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[2] rank 2: rank 0 at"), std::string::npos) << out;
}

TEST(TcpTransport, ASilentConnectionDoesNotHoldUpTheJob) {
  // Something connects to rank 0's port and says nothing (a port scanner,
  // a stale client): rank 0 drops it after a few seconds and the ranks
  // still join, well before the bootstrap timeout (20 s here). The silent
  // client is a process of its own (a thread here would be copied into
  // the forked ranks, which the sanitizers refuse).
  pid_t silent = -1;
  auto start = std::chrono::steady_clock::now();
  auto codes = runRanks(
      [](int expect) {
        join(expect);
        CHECK_RANK_FINALIZE();
      },
      [&](int port) {
        std::fflush(nullptr);
        silent = ::fork();
        if (silent != 0)
          return;
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        for (int tries = 0; tries < 2000; ++tries) {
          int fd = ::socket(AF_INET, SOCK_STREAM, 0);
          if (::connect(fd, reinterpret_cast<sockaddr *>(&address),
                        sizeof address) == 0) {
            ::sleep(30); // holds the connection, silent, until killed
            std::_Exit(0);
          }
          ::close(fd);
          ::usleep(1000);
        }
        std::_Exit(1);
      });
  auto waited = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  if (silent > 0) {
    ::kill(silent, SIGKILL);
    ::waitpid(silent, nullptr, 0);
  }
  expectExits(codes, 0);
  EXPECT_LT(waited, 15);
}
