//===- TcpBootstrap.cpp - Joining a job over TCP ----------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// How the processes of a job that no MPI launcher started (torchrun) meet:
// rank 0 listens at a known address ($OVERLAP_PROCESS_ADDR, else torchrun's
// $MASTER_ADDR and $MASTER_PORT + 2: MASTER_PORT is torchrun's own store,
// + 1 NCCL's bootstrap); every other rank listens on a port of its own,
// connects to rank 0 and says who it is (rank, size, job key); rank 0
// answers with every rank's address, or with why it gave up (a rank that
// did not come within $OVERLAP_BOOTSTRAP_TIMEOUT_MS); then each rank
// connects to the ranks below it. One socket per pair of ranks. Also the
// end of a job: goodbye (finalize) and abort.
//
//===----------------------------------------------------------------------===//

#include "TcpJob.h"

#include "overlap/Runtime/Bootstrap.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace overlap;
using namespace overlap::process::tcp;

Job *overlap::process::tcp::job = nullptr;

bool overlap::process::tcp::writeAll(int fd, const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

uint64_t overlap::process::tcp::hashKey(const std::string &key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : key)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

namespace {

/// How long an accepted connection may take to say who it is: a
/// connection that says nothing (not one of the job's ranks) must not hold
/// up the ones that come after it until the bootstrap's deadline.
Clock::time_point helloBy(Clock::time_point deadline) {
  return std::min(deadline, Clock::now() + std::chrono::seconds(5));
}

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - Clock::now())
                  .count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, INT_MAX));
}

/// Reads exactly `bytes` before `deadline`; false with `why` otherwise.
bool readAll(int fd, void *data, size_t bytes, Clock::time_point deadline,
             std::string &why) {
  char *p = static_cast<char *>(data);
  while (bytes) {
    pollfd pfd{fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, remainingMs(deadline));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0) {
      why = ready == 0 ? "timed out" : std::strerror(errno);
      return false;
    }
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      why = n == 0 ? "the connection closed" : std::strerror(errno);
      return false;
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

void tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/// "host:port" of a socket address, for messages.
std::string describe(const sockaddr_storage &address) {
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr *>(&address),
                    sizeof address, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  return std::string(host) + ":" + port;
}

uint16_t portOf(const sockaddr_storage &address) {
  if (address.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6 &>(address).sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in &>(address).sin_port);
}

void setPort(sockaddr_storage &address, uint16_t port) {
  if (address.ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6 &>(address).sin6_port = htons(port);
  else
    reinterpret_cast<sockaddr_in &>(address).sin_port = htons(port);
}

/// A socket listening on every address of `family`, on `port` (0: any).
int listenOn(int family, uint16_t port, int backlog, std::string &why) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage address{};
  address.ss_family = static_cast<sa_family_t>(family);
  if (family == AF_INET6) {
    int zero = 0; // IPv4 peers too
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    reinterpret_cast<sockaddr_in6 &>(address).sin6_addr = in6addr_any;
  } else {
    reinterpret_cast<sockaddr_in &>(address).sin_addr.s_addr =
        htonl(INADDR_ANY);
  }
  setPort(address, port);
  socklen_t length =
      family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (::bind(fd, reinterpret_cast<sockaddr *>(&address), length) != 0 ||
      ::listen(fd, backlog) != 0) {
    why = std::string(std::strerror(errno));
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Connects to `address`, retrying a refused connection (the listener may
/// not be up yet) until `deadline`.
int connectTo(const sockaddr_storage &address, Clock::time_point deadline,
              std::string &why) {
  socklen_t length = address.ss_family == AF_INET6 ? sizeof(sockaddr_in6)
                                                   : sizeof(sockaddr_in);
  auto pause = std::chrono::milliseconds(5);
  for (;;) {
    int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      why = std::string("socket: ") + std::strerror(errno);
      return -1;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr *>(&address), length) ==
        0) {
      tune(fd);
      return fd;
    }
    int code = errno;
    ::close(fd);
    if (Clock::now() >= deadline) {
      why = std::strerror(code);
      return -1;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

} // namespace

namespace {

/// Rank 0's address from the environment: $OVERLAP_PROCESS_ADDR
/// ("host:port"), else $MASTER_ADDR and $MASTER_PORT + 2.
bool rootAddress(const bootstrap::Env &env, std::string &host, int &port,
                 std::string &source, std::string &why) {
  auto parsePort = [&](const std::string &text, const char *name) {
    char *end = nullptr;
    long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end || value < 1 || value > 65535) {
      why = std::string(name) + "=" + text + " is not a port (1-65535)";
      return false;
    }
    port = static_cast<int>(value);
    return true;
  };
  if (auto given = env("OVERLAP_PROCESS_ADDR")) {
    source = "OVERLAP_PROCESS_ADDR";
    size_t colon = given->rfind(':');
    if (colon == std::string::npos || colon == 0) {
      why = "OVERLAP_PROCESS_ADDR=" + *given + " is not host:port";
      return false;
    }
    host = given->substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    return parsePort(given->substr(colon + 1), "OVERLAP_PROCESS_ADDR's port");
  }
  auto addr = env("MASTER_ADDR");
  auto masterPort = env("MASTER_PORT");
  if (!addr || !masterPort) {
    why = "no address for rank 0: set OVERLAP_PROCESS_ADDR=host:port (torchrun "
          "sets MASTER_ADDR and MASTER_PORT, and rank 0 then listens on "
          "MASTER_PORT + 2)";
    return false;
  }
  source = "MASTER_ADDR and MASTER_PORT + 2";
  host = *addr;
  if (!parsePort(*masterPort, "MASTER_PORT"))
    return false;
  if (port > 65533) {
    why = "MASTER_PORT=" + *masterPort + ": MASTER_PORT + 2 is no port";
    return false;
  }
  port += 2;
  return true;
}

bool resolve(const std::string &host, int port, sockaddr_storage &address,
             std::string &why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  int rc =
      ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0 || !found) {
    why = "cannot resolve " + host + ": " + ::gai_strerror(rc);
    return false;
  }
  std::memset(&address, 0, sizeof address);
  std::memcpy(&address, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  return true;
}

} // namespace

int Job::init(std::string &why) {
  bootstrap::Env env = bootstrap::processEnv();
  bootstrap::Launch launch;
  if (!bootstrap::detectLaunch(env, launch, why))
    return 1;
  rank = launch.rank;
  size = launch.size;
  bootstrap::RendezvousConfig config;
  if (!bootstrap::rendezvousConfig(env, launch, config, why))
    return 1;
  std::string host, source;
  int port = 0;
  if (!rootAddress(env, host, port, source, why))
    return 1;
  root = host + ":" + std::to_string(port) + " (" + source + ")";
  sockaddr_storage rootAddress{};
  if (!resolve(host, port, rootAddress, why))
    return 1;
  const uint64_t key = hashKey(config.key);
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(config.timeoutMs);
  const std::string waited = " within " + std::to_string(config.timeoutMs) +
                             " ms (OVERLAP_BOOTSTRAP_TIMEOUT_MS)";

  world_.id = kWorldId;
  world_.rank = rank;
  for (int r = 0; r < size; ++r)
    world_.world.push_back(r);
  for (int r = 0; r < size; ++r)
    peers_.push_back(std::make_unique<Peer>());

  Hello mine;
  mine.rank = rank;
  mine.size = size;
  mine.keyHash = key;
  mine.pid = static_cast<uint32_t>(::getpid());

  std::vector<sockaddr_storage> addresses(static_cast<size_t>(size));
  int listener = -1;
  if (rank == 0) {
    listener = listenOn(rootAddress.ss_family, static_cast<uint16_t>(port),
                        size + 16, why);
    if (listener < 0) {
      why = "rank 0 cannot listen at " + root + ": " + why +
            " (another job's rank 0, or another program, has the port: set "
            "OVERLAP_PROCESS_ADDR to a free one)";
      return 1;
    }
    int joined = 1;
    while (joined < size) {
      pollfd pfd{listener, POLLIN, 0};
      int ready = ::poll(&pfd, 1, remainingMs(deadline));
      if (ready < 0 && errno == EINTR)
        continue;
      if (ready <= 0) {
        std::string missing;
        for (int r = 1; r < size; ++r)
          if (peers_[r]->fd < 0)
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        why = std::string(missing.find(',') == std::string::npos ? "rank "
                                                                 : "ranks ") +
              missing + " did not connect to rank 0 at " + root + waited +
              " (are they started, and is the address reachable?)";
        // The ranks that came hear why at once.
        Answer failed;
        failed.status = 1;
        failed.bytes = why.size();
        for (int r = 1; r < size; ++r)
          if (peers_[r]->fd >= 0) {
            writeAll(peers_[r]->fd, &failed, sizeof failed);
            writeAll(peers_[r]->fd, why.data(), why.size());
            ::close(peers_[r]->fd);
            peers_[r]->fd = -1;
          }
        ::close(listener);
        return 1;
      }
      sockaddr_storage from{};
      socklen_t length = sizeof from;
      int fd = ::accept4(listener, reinterpret_cast<sockaddr *>(&from), &length,
                         SOCK_CLOEXEC);
      if (fd < 0)
        continue;
      tune(fd);
      Hello theirs;
      std::string readWhy;
      Answer answer;
      std::string reject;
      if (!readAll(fd, &theirs, sizeof theirs, helloBy(deadline), readWhy)) {
        ::close(fd); // not one of ours, or gone
        continue;
      }
      if (theirs.magic != kMagic || theirs.version != kVersion)
        reject = "not an Overlap process transport of version " +
                 std::to_string(kVersion);
      else if (theirs.keyHash != key || theirs.size != size)
        reject = "rank 0 at " + root + " runs another job (" +
                 std::to_string(size) + " ranks, key " + config.key + ")";
      else if (theirs.rank <= 0 || theirs.rank >= size ||
               peers_[theirs.rank]->fd >= 0)
        reject = "rank " + std::to_string(theirs.rank) +
                 " is out of range or already connected";
      if (!reject.empty()) {
        answer.status = 1;
        answer.bytes = reject.size();
        writeAll(fd, &answer, sizeof answer);
        writeAll(fd, reject.data(), reject.size());
        ::close(fd);
        continue;
      }
      setPort(from, theirs.listenPort);
      addresses[static_cast<size_t>(theirs.rank)] = from;
      peers_[theirs.rank]->fd = fd;
      ++joined;
    }
    ::close(listener);
    Answer answer;
    answer.bytes = addresses.size() * sizeof(sockaddr_storage);
    for (int r = 1; r < size; ++r)
      if (!writeAll(peers_[r]->fd, &answer, sizeof answer) ||
          !writeAll(peers_[r]->fd, addresses.data(), answer.bytes)) {
        why = "rank 0 cannot answer rank " + std::to_string(r) + ": " +
              std::strerror(errno);
        return 1;
      }
  } else {
    listener = listenOn(rootAddress.ss_family, 0, size + 16, why);
    if (listener < 0) {
      why = "rank " + std::to_string(rank) + " cannot listen: " + why;
      return 1;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    ::getsockname(listener, reinterpret_cast<sockaddr *>(&bound), &length);
    mine.listenPort = portOf(bound);
    int fd = connectTo(rootAddress, deadline, why);
    if (fd < 0) {
      why = "rank " + std::to_string(rank) + " cannot reach rank 0 at " + root +
            waited + ": " + why;
      ::close(listener);
      return 1;
    }
    // Rank 0 answers by its own deadline, which may come a little after
    // this one's (it started first, or its clock is ahead of this one's
    // start): wait a grace period longer for its answer.
    const Clock::time_point answerBy = deadline + std::chrono::seconds(10);
    Answer answer;
    std::string readWhy;
    bool wrote = writeAll(fd, &mine, sizeof mine);
    if (!wrote || !readAll(fd, &answer, sizeof answer, answerBy, readWhy)) {
      why = "rank " + std::to_string(rank) + ": rank 0 at " + root +
            " did not answer: " +
            (wrote ? readWhy : std::string(std::strerror(errno))) +
            (readWhy == "timed out" ? waited + " + 10 s" : "");
      ::close(fd);
      ::close(listener);
      return 1;
    }
    if (answer.magic != kMagic ||
        answer.bytes > (answer.status
                            ? 4096
                            : addresses.size() * sizeof(sockaddr_storage))) {
      why = "rank " + std::to_string(rank) + ": what listens at " + root +
            " is not rank 0 of an Overlap job (set OVERLAP_PROCESS_ADDR to a "
            "free port)";
      ::close(fd);
      ::close(listener);
      return 1;
    }
    std::string payload(static_cast<size_t>(answer.bytes), '\0');
    if (!readAll(fd, payload.empty() ? nullptr : &payload[0], payload.size(),
                 answerBy, readWhy) ||
        answer.status != 0 ||
        payload.size() != addresses.size() * sizeof(sockaddr_storage)) {
      why = "rank " + std::to_string(rank) + ": rank 0 at " + root +
            (answer.status ? " gave up: " + payload
                           : " did not answer: " + readWhy);
      ::close(fd);
      ::close(listener);
      return 1;
    }
    std::memcpy(addresses.data(), payload.data(), payload.size());
    peers_[0]->fd = fd;
    // Connect to the ranks below (1 .. rank-1), accept from those above.
    for (int r = 1; r < rank; ++r) {
      int peer = connectTo(addresses[static_cast<size_t>(r)], deadline, why);
      if (peer < 0 || !writeAll(peer, &mine, sizeof mine)) {
        why = "rank " + std::to_string(rank) + " cannot reach rank " +
              std::to_string(r) + " at " +
              describe(addresses[static_cast<size_t>(r)]) + ": " + why;
        ::close(listener);
        return 1;
      }
      peers_[r]->fd = peer;
    }
    for (int accepted = 0; accepted < size - 1 - rank;) {
      pollfd pfd{listener, POLLIN, 0};
      int ready = ::poll(&pfd, 1, remainingMs(deadline));
      if (ready < 0 && errno == EINTR)
        continue;
      if (ready <= 0) {
        why = "rank " + std::to_string(rank) +
              ": the ranks above it did not all connect" + waited;
        ::close(listener);
        return 1;
      }
      int peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (peer < 0)
        continue;
      tune(peer);
      Hello theirs;
      std::string readWhy;
      if (!readAll(peer, &theirs, sizeof theirs, helloBy(deadline), readWhy) ||
          theirs.magic != kMagic || theirs.keyHash != key ||
          theirs.rank <= rank || theirs.rank >= size ||
          peers_[theirs.rank]->fd >= 0) {
        ::close(peer);
        continue;
      }
      peers_[theirs.rank]->fd = peer;
      ++accepted;
    }
    ::close(listener);
  }
  if (::pipe2(wake_, O_CLOEXEC) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    return 1;
  }
  progress_ = std::thread([this] { progress(); });
  return 0;
}

void Job::finalize() {
  Frame bye;
  bye.kind = Bye;
  for (int r = 0; r < size; ++r)
    if (r != rank)
      sendFrame(r, bye, nullptr);
  // Everything a peer sent before its goodbye has been read once the
  // goodbye is: then no socket is closed with unread bytes (which would
  // reset the connection and lose what the peer still had in flight).
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(60), [&] {
      for (int r = 0; r < size; ++r)
        if (r != rank && !peers_[r]->bye && !peers_[r]->closed)
          return false;
      return true;
    });
  }
  stopping_.store(true);
  char byte = 0;
  if (::write(wake_[1], &byte, 1) < 0) {
  }
  if (progress_.joinable())
    progress_.join();
  for (auto &peer : peers_)
    if (peer->fd >= 0)
      ::close(peer->fd);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void Job::abort(int code) {
  Frame frame;
  frame.kind = Abort;
  frame.tag = code;
  for (int r = 0; r < size; ++r) {
    if (r == rank || peers_[r]->fd < 0)
      continue;
    // A thread stuck writing to this peer keeps its lock: skip it (its
    // connection closes when this process ends, and the peer sees why).
    std::unique_lock<std::mutex> lock(peers_[r]->write, std::try_to_lock);
    if (lock.owns_lock())
      writeAll(peers_[r]->fd, &frame, sizeof frame);
  }
  std::fflush(stderr);
  std::_Exit(code);
}
