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

#include "TcpAuth.h"
#include "TcpJob.h"

#include "overlap/Runtime/Bootstrap.h"

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/// The length of `address` as bind and connect take it.
socklen_t lengthOf(const sockaddr_storage &address) {
  return address.ss_family == AF_INET6 ? sizeof(sockaddr_in6)
                                       : sizeof(sockaddr_in);
}

/// A socket listening at `address` (its port 0: any free one). Only that
/// address: a job listens where it was told to, not on every interface.
int listenAt(const sockaddr_storage &address, int backlog, std::string &why) {
  int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const socklen_t length = lengthOf(address);
  if (::bind(fd, reinterpret_cast<const sockaddr *>(&address), length) != 0 ||
      ::listen(fd, backlog) != 0) {
    why = std::string(std::strerror(errno));
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Whether `address` is one of this host's (a socket can be bound to it).
bool isLocal(sockaddr_storage address) {
  setPort(address, 0);
  int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return false;
  const socklen_t length = lengthOf(address);
  bool bound =
      ::bind(fd, reinterpret_cast<const sockaddr *>(&address), length) == 0;
  ::close(fd);
  return bound;
}

/// Connects to `address`, retrying a refused connection (the listener may
/// not be up yet) until `deadline`.
int connectTo(const sockaddr_storage &address, Clock::time_point deadline,
              std::string &why) {
  const socklen_t length = lengthOf(address);
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

/// The nonces of one connection's handshake and the key both sides prove.
struct Handshake {
  Digest key{};
  uint8_t connecting[32] = {}; ///< the connecting side's nonce
  uint8_t listening[32] = {};  ///< the listening side's nonce

  /// HMAC over the role, both nonces and `fields`.
  Digest prove(const char *role, const std::string &fields) const {
    std::string message(role);
    message += '\0';
    message.append(reinterpret_cast<const char *>(connecting), 32);
    message.append(reinterpret_cast<const char *>(listening), 32);
    message += fields;
    return hmacSha256(key, message);
  }
};

Digest digestOf(const uint8_t (&bytes)[32]) {
  Digest out;
  std::memcpy(out.data(), bytes, out.size());
  return out;
}

/// The fields of a Hello its proof covers.
std::string helloFields(const Hello &hello) {
  return std::to_string(hello.magic) + "/" + std::to_string(hello.version) +
         "/" + std::to_string(hello.rank) + "/" + std::to_string(hello.size) +
         "/" + std::to_string(hello.pid) + "/" +
         std::to_string(hello.listenPort);
}

std::string answerFields(uint32_t status, const std::string &payload) {
  return std::to_string(status) + "/" + payload;
}

/// An answer that proves nothing (the other side did not prove the key):
/// it says only why, never anything of the job.
void refuse(int fd, const std::string &why) {
  Answer answer;
  answer.status = 1;
  answer.bytes = why.size();
  writeAll(fd, &answer, sizeof answer);
  writeAll(fd, why.data(), why.size());
}

/// The listening side, up to the connecting side's proved hello: false
/// (with `why`, and the other side answered) when it does not speak this
/// protocol or cannot prove `key`.
bool admit(int fd, const Digest &key, Clock::time_point by, Hello &theirs,
           Handshake &shake, std::string &why) {
  // Magic and version first: a client of another protocol is answered at
  // once, whatever it sends next.
  // A rank greets as soon as it connects: a connection that says nothing
  // for 2 s is dropped, so a silent stranger holds a listener that long.
  Greeting greeting;
  const size_t head = offsetof(Greeting, nonce);
  if (!readAll(fd, &greeting, head,
               std::min(by, Clock::now() + std::chrono::seconds(2)), why))
    return false; // not one of ours, or gone
  Challenge challenge;
  if (greeting.magic != kMagic || greeting.version != kVersion) {
    why = "not an Overlap process transport of version " +
          std::to_string(kVersion);
    challenge.status = 1;
    challenge.bytes = why.size();
    writeAll(fd, &challenge, sizeof challenge);
    writeAll(fd, why.data(), why.size());
    return false;
  }
  if (!readAll(fd, reinterpret_cast<char *>(&greeting) + head,
               sizeof greeting - head, by, why))
    return false;
  shake.key = key;
  std::memcpy(shake.connecting, greeting.nonce, 32);
  if (!randomBytes(shake.listening, 32)) {
    why = "no random bytes for a nonce";
    return false;
  }
  std::memcpy(challenge.nonce, shake.listening, 32);
  Digest proof = shake.prove("listening", "");
  std::memcpy(challenge.proof, proof.data(), 32);
  if (!writeAll(fd, &challenge, sizeof challenge) ||
      !readAll(fd, &theirs, sizeof theirs, by, why))
    return false;
  if (!sameDigest(digestOf(theirs.proof),
                  shake.prove("connecting", helloFields(theirs)))) {
    why = "it does not prove the job's secret";
    refuse(fd, "not admitted: the hello does not prove this job's secret "
               "(another job, or another OVERLAP_JOB_SECRET)");
    return false;
  }
  return true;
}

/// The listening side's proved answer.
bool answer(int fd, const Handshake &shake, uint32_t status,
            const std::string &payload) {
  Answer answer;
  answer.status = status;
  answer.bytes = payload.size();
  Digest proof = shake.prove("answer", answerFields(status, payload));
  std::memcpy(answer.proof, proof.data(), 32);
  return writeAll(fd, &answer, sizeof answer) &&
         (payload.empty() || writeAll(fd, payload.data(), payload.size()));
}

/// The connecting side, up to its hello: false with `why` when the other
/// side does not speak this protocol or cannot prove `key` (then nothing
/// of this rank was said).
bool introduce(int fd, const Digest &key, Hello &mine, Clock::time_point by,
               Handshake &shake, std::string &why) {
  Greeting greeting;
  shake.key = key;
  if (!randomBytes(greeting.nonce, 32)) {
    why = "no random bytes for a nonce";
    return false;
  }
  std::memcpy(shake.connecting, greeting.nonce, 32);
  Challenge challenge;
  if (!writeAll(fd, &greeting, sizeof greeting) ||
      !readAll(fd, &challenge, sizeof challenge, by, why)) {
    why = "did not answer: " + (why.empty() ? std::strerror(errno) : why);
    return false;
  }
  if (challenge.magic != kMagic) {
    why = "is not an Overlap process transport";
    return false;
  }
  if (challenge.status != 0) {
    std::string text(
        static_cast<size_t>(std::min<uint64_t>(challenge.bytes, 256)), '\0');
    std::string ignored;
    if (!text.empty())
      readAll(fd, &text[0], text.size(), by, ignored);
    for (char &c : text) // a stranger's text: printable characters only
      if (c < 0x20 || c > 0x7e)
        c = '?';
    why = "refused the protocol: " + text;
    return false;
  }
  std::memcpy(shake.listening, challenge.nonce, 32);
  if (!sameDigest(digestOf(challenge.proof), shake.prove("listening", ""))) {
    why = "does not prove the job's secret (another job listens there, "
          "or its OVERLAP_JOB_SECRET differs)";
    return false;
  }
  Digest proof = shake.prove("connecting", helloFields(mine));
  std::memcpy(mine.proof, proof.data(), 32);
  if (!writeAll(fd, &mine, sizeof mine)) {
    why = std::strerror(errno);
    return false;
  }
  return true;
}

/// The connecting side: the listening side's answer, at most `most` bytes
/// of payload, its proof checked. False with `why` when there is none, it
/// is not proved, or it is a refusal (then `why` is the reason).
bool hearAnswer(int fd, const Handshake &shake, Clock::time_point by,
                size_t most, std::string &payload, std::string &why) {
  Answer heard;
  if (!readAll(fd, &heard, sizeof heard, by, why)) {
    why = "did not answer: " + why;
    return false;
  }
  if (heard.magic != kMagic ||
      heard.bytes > (heard.status ? 4096 : static_cast<uint64_t>(most))) {
    why = "answered malformed";
    return false;
  }
  payload.assign(static_cast<size_t>(heard.bytes), '\0');
  if (!payload.empty() && !readAll(fd, &payload[0], payload.size(), by, why)) {
    why = "did not answer: " + why;
    return false;
  }
  bool proved =
      sameDigest(digestOf(heard.proof),
                 shake.prove("answer", answerFields(heard.status, payload)));
  if (!proved) // a stranger's text: printable characters only
    for (char &c : payload)
      if (c < 0x20 || c > 0x7e)
        c = '?';
  if (heard.status != 0) {
    why = (proved ? "gave up: "
                  : "refused (without proving the job's "
                    "secret): ") +
          payload;
    return false;
  }
  if (!proved) {
    why = "answered without proving the job's secret";
    return false;
  }
  return true;
}

/// The next connection at `listener` that proves `key` (strangers are
/// answered and dropped): its fd, kRetry when none came this time, or
/// kTimedOut once `deadline` passed.
constexpr int kRetry = -1, kTimedOut = -2;
int admitNext(int listener, const Digest &key, Clock::time_point deadline,
              sockaddr_storage &from, Hello &theirs, Handshake &shake) {
  pollfd pfd{listener, POLLIN, 0};
  int ready = ::poll(&pfd, 1, remainingMs(deadline));
  if (ready < 0 && errno == EINTR)
    return kRetry;
  if (ready <= 0)
    return kTimedOut;
  socklen_t length = sizeof from;
  int fd = ::accept4(listener, reinterpret_cast<sockaddr *>(&from), &length,
                     SOCK_CLOEXEC);
  if (fd < 0)
    return kRetry;
  tune(fd);
  std::string refused;
  if (!admit(fd, key, helloBy(deadline), theirs, shake, refused)) {
    ::close(fd); // a stranger, or gone: answered if it spoke
    return kRetry;
  }
  return fd;
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
  Joining joining;
  joining.jobKey = config.key;
  joining.timeout = std::chrono::milliseconds(config.timeoutMs);
  joining.deadline = Clock::now() + joining.timeout;
  joining.waited = " within " + std::to_string(config.timeoutMs) +
                   " ms (OVERLAP_BOOTSTRAP_TIMEOUT_MS)";
  bool given = false;
  if (!givenSecret(env, joining.secret, given, why)) {
    why = "rank " + std::to_string(rank) + ": " + why;
    return 1;
  }
  // No secret given: rank 0 makes one and hands it to the others through a
  // file only this user can read (Bootstrap.h's rendezvous), which reaches
  // the ranks of one host, or of hosts that share OVERLAP_BOOTSTRAP_DIR.
  if (!given) {
    if (rank != 0 && config.privateDirectory && !isLocal(rootAddress)) {
      why = "rank " + std::to_string(rank) + ": rank 0 at " + root +
            " is on another host and no secret was given for the job: set "
            "OVERLAP_JOB_SECRET (or OVERLAP_JOB_SECRET_FILE) to the same "
            "random string on every rank, or OVERLAP_BOOTSTRAP_DIR to a "
            "directory of this user's that every host shares "
            "(docs/runtime.md, \"Who can join a TCP job\")";
      return 1;
    }
    if (!config.privateDirectory) {
      struct stat st;
      std::string risk =
          ::lstat(config.directory.c_str(), &st) != 0 ? std::strerror(errno)
          : S_ISLNK(st.st_mode)                       ? "is a symbolic link"
          : !S_ISDIR(st.st_mode)
              ? "is not a directory"
              : bootstrap::notThisUsersAlone(st,
                                             "others could read or replace the "
                                             "secret handed through it");
      if (!risk.empty()) {
        why = "rank " + std::to_string(rank) +
              ": no secret was given for the job, and rank 0 hands one only "
              "through a directory of this user's alone: "
              "OVERLAP_BOOTSTRAP_DIR=" +
              config.directory + " " + risk +
              " (chmod 700 it, or set OVERLAP_JOB_SECRET)";
        return 1;
      }
    }
    bootstrap::RendezvousConfig handing = config;
    handing.key += ";tcp-secret;port=" + std::to_string(port);
    joining.handing =
        std::make_unique<bootstrap::Rendezvous>(handing, rank, size);
  }

  world_.id = kWorldId;
  world_.rank = rank;
  for (int r = 0; r < size; ++r)
    world_.world.push_back(r);
  for (int r = 0; r < size; ++r)
    peers_.push_back(std::make_unique<Peer>());
  if (int rc = rank == 0 ? joinAsRoot(rootAddress, joining, why)
                         : joinAsOther(rootAddress, joining, why))
    return rc;
  if (::pipe2(wake_, O_CLOEXEC) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    return 1;
  }
  progress_ = std::thread([this] { progress(); });
  return 0;
}

int Job::joinAsRoot(const sockaddr_storage &at, Joining &joining,
                    std::string &why) {
  std::string ignored;
  if (joining.handing && !joining.handing->clear(why))
    return 1;
  int listener = listenAt(at, size + 16, why);
  if (listener < 0) {
    why = "rank 0 cannot listen at " + root + ": " + why +
          " (another job's rank 0, or another program, has the port, or it "
          "is no address of this host: set OVERLAP_PROCESS_ADDR)";
    if (joining.handing)
      joining.handing->publishFailure(why, ignored);
    return 1;
  }
  if (joining.handing) {
    joining.secret.assign(32, '\0');
    if (!randomBytes(&joining.secret[0], 32) ||
        !joining.handing->publish(joining.secret.data(), 32, why)) {
      why = "rank 0 cannot hand the job's secret to the other ranks: " +
            (why.empty() ? std::string("no random bytes") : why);
      ::close(listener);
      return 1;
    }
  }
  const Digest key = jobKey(joining.secret, joining.jobKey, size);
  std::vector<sockaddr_storage> addresses(static_cast<size_t>(size));
  std::vector<Handshake> shakes(static_cast<size_t>(size));
  int joined = 1;
  while (joined < size) {
    sockaddr_storage from{};
    Hello theirs;
    Handshake shake;
    int fd = admitNext(listener, key, joining.deadline, from, theirs, shake);
    if (fd == kTimedOut) {
      std::string missing;
      for (int r = 1; r < size; ++r)
        if (peers_[r]->fd < 0)
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      why = std::string(missing.find(',') == std::string::npos ? "rank "
                                                               : "ranks ") +
            missing + " did not connect to rank 0 at " + root + joining.waited +
            " (are they started, and is the address "
            "reachable?)";
      // The ranks that came hear why at once.
      for (int r = 1; r < size; ++r)
        if (peers_[r]->fd >= 0) {
          answer(peers_[r]->fd, shakes[size_t(r)], 1, why);
          ::close(peers_[r]->fd);
          peers_[r]->fd = -1;
        }
      if (joining.handing)
        joining.handing->publishFailure(why, ignored);
      ::close(listener);
      return 1;
    }
    if (fd < 0)
      continue;
    if (theirs.rank <= 0 || theirs.rank >= size ||
        peers_[theirs.rank]->fd >= 0) {
      answer(fd, shake, 1,
             "rank " + std::to_string(theirs.rank) +
                 " is out of range or already connected");
      ::close(fd);
      continue;
    }
    setPort(from, theirs.listenPort);
    addresses[static_cast<size_t>(theirs.rank)] = from;
    shakes[static_cast<size_t>(theirs.rank)] = shake;
    peers_[theirs.rank]->fd = fd;
    ++joined;
  }
  ::close(listener);
  std::string payload(reinterpret_cast<const char *>(addresses.data()),
                      addresses.size() * sizeof(sockaddr_storage));
  for (int r = 1; r < size; ++r)
    if (!answer(peers_[r]->fd, shakes[size_t(r)], 0, payload)) {
      why = "rank 0 cannot answer rank " + std::to_string(r) + ": " +
            std::strerror(errno);
      if (joining.handing)
        joining.handing->publishFailure(why, ignored);
      return 1;
    }
  // Every rank proved the secret, so each has read it: no file is left.
  if (joining.handing)
    joining.handing->withdraw();
  return 0;
}

int Job::joinAsOther(const sockaddr_storage &rootAt, Joining &joining,
                     std::string &why) {
  const std::string me = "rank " + std::to_string(rank);
  if (joining.handing) {
    joining.secret.assign(32, '\0');
    if (!joining.handing->await(&joining.secret[0], 32, why)) {
      why = me +
            ": no secret from rank 0 (it hands one through a file of "
            "this user's when none is given): " +
            why;
      return 1;
    }
  }
  const Digest key = jobKey(joining.secret, joining.jobKey, size);
  int fd = connectTo(rootAt, joining.deadline, why);
  if (fd < 0) {
    why = me + " cannot reach rank 0 at " + root + joining.waited + ": " + why;
    return 1;
  }
  // Listen where rank 0 was reached from: the address the others are told.
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &length);
  setPort(local, 0);
  int listener = listenAt(local, size + 16, why);
  if (listener < 0) {
    why = me + " cannot listen at " + describe(local) + ": " + why;
    ::close(fd);
    return 1;
  }
  length = sizeof local;
  ::getsockname(listener, reinterpret_cast<sockaddr *>(&local), &length);
  Hello mine;
  mine.rank = rank;
  mine.size = size;
  mine.pid = static_cast<uint32_t>(::getpid());
  mine.listenPort = portOf(local);
  // Rank 0 answers by its own deadline, which may come a little after
  // this one's (it started first, or its clock is ahead of this one's
  // start): wait a grace period longer for its answer.
  const Clock::time_point answerBy =
      joining.deadline + std::chrono::seconds(10);
  std::vector<sockaddr_storage> addresses(static_cast<size_t>(size));
  const size_t bytes = addresses.size() * sizeof(sockaddr_storage);
  Handshake shake;
  std::string payload;
  if (!introduce(fd, key, mine, answerBy, shake, why) ||
      !hearAnswer(fd, shake, answerBy, bytes, payload, why) ||
      (payload.size() != bytes && (why = "answered malformed", true))) {
    why = me + ": rank 0 at " + root + " " + why;
    ::close(fd);
    ::close(listener);
    return 1;
  }
  std::memcpy(addresses.data(), payload.data(), bytes);
  peers_[0]->fd = fd;
  // Rank 0 may have answered in the grace after this rank's deadline: the
  // ranks meet each other within a timeout of their own from here.
  joining.deadline = std::max(joining.deadline, Clock::now() + joining.timeout);
  int rc = meetPeers(listener, addresses, key, mine, joining, why);
  ::close(listener);
  return rc;
}

int Job::meetPeers(int listener, const std::vector<sockaddr_storage> &at,
                   const Digest &key, Hello &mine, const Joining &joining,
                   std::string &why) {
  const std::string me = "rank " + std::to_string(rank);
  // Connect to the ranks below (1 .. rank-1), each answering.
  for (int r = 1; r < rank; ++r) {
    const sockaddr_storage &address = at[static_cast<size_t>(r)];
    int peer = connectTo(address, joining.deadline, why);
    Handshake shake;
    std::string payload;
    if (peer < 0 || !introduce(peer, key, mine, joining.deadline, shake, why) ||
        !hearAnswer(peer, shake, joining.deadline, 0, payload, why)) {
      why = me + ": rank " + std::to_string(r) + " at " + describe(address) +
            " " + (peer < 0 ? "cannot be reached: " : "") + why;
      if (peer >= 0)
        ::close(peer);
      return 1;
    }
    peers_[r]->fd = peer;
  }
  // Accept the ranks above.
  for (int accepted = 0; accepted < size - 1 - rank;) {
    sockaddr_storage from{};
    Hello theirs;
    Handshake shake;
    int peer = admitNext(listener, key, joining.deadline, from, theirs, shake);
    if (peer == kTimedOut) {
      why = me + ": the ranks above it did not all connect" + joining.waited;
      return 1;
    }
    if (peer < 0)
      continue;
    if (theirs.rank <= rank || theirs.rank >= size ||
        peers_[theirs.rank]->fd >= 0) {
      answer(peer, shake, 1,
             "rank " + std::to_string(theirs.rank) + " may not connect to " +
                 me + " (out of range, below it, or already connected)");
      ::close(peer);
      continue;
    }
    if (!answer(peer, shake, 0, "")) {
      ::close(peer);
      continue;
    }
    peers_[theirs.rank]->fd = peer;
    ++accepted;
  }
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
  // An abort never ends a process with success.
  if (code == 0)
    code = 1;
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
