//===- TcpJob.h - The TCP process transport's pieces -----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What TcpBootstrap.cpp (joining: the sockets between every pair of ranks)
// and TcpTransport.cpp (messages, communicators and the transport table)
// share: the handles of MpiTransport.h as this transport defines them, the
// wire format, and the Job that one process joins.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_PROCESS_TCPJOB_H
#define OVERLAP_LIB_RUNTIME_PROCESS_TCPJOB_H

#include "MpiTransport.h"
#include "TcpAuth.h"

#include "overlap/Runtime/Bootstrap.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>

struct overlap_mpi_comm_s {
  uint64_t id = 0;
  std::vector<int> world; ///< world rank of each rank of the communicator
  int rank = 0;           ///< this process's rank in it
  std::atomic<uint64_t> derived{0};
  int rankOf(int worldRank) const {
    auto it = std::find(world.begin(), world.end(), worldRank);
    return it == world.end() ? -1 : static_cast<int>(it - world.begin());
  }
};

struct overlap_mpi_message_s {
  uint64_t comm = 0;
  int source = 0; ///< world rank
  int tag = 0;
  uint64_t sendId = 0; ///< 0: no acknowledgement wanted
  std::string data;
};

struct overlap_mpi_request_s {
  bool barrier = false;
  overlap_mpi_comm comm = nullptr; ///< barrier
  std::vector<char> arrived;       ///< barrier, by communicator rank
  int dest = 0;                    ///< send, world rank
  uint64_t sendId = 0;             ///< send
  bool done = false;
};

namespace overlap {
namespace process {
namespace tcp {

constexpr uint32_t kMagic = 0x5054564f; // "OVTP" in little-endian bytes
constexpr uint32_t kVersion = 2;
constexpr uint64_t kWorldId = 1;
constexpr uint64_t kInternal = uint64_t(1) << 63;
constexpr int kBarrierTag = 1, kSplitTag = 2, kMaxTag = 3;

enum Kind : uint32_t { Data = 1, Ack = 2, Bye = 3, Abort = 4 };

/// The header of every message on a connection; `bytes` of payload follow.
struct Frame {
  uint32_t kind = 0;
  int32_t tag = 0;
  uint64_t comm = 0;
  uint64_t sendId = 0;
  uint64_t bytes = 0;
};

/// The most payload one frame may carry: the transport's counts are ints.
constexpr uint64_t kMaxFrameBytes = INT32_MAX;

/// Reassembles the frames of one connection from its bytes as they come,
/// and checks each header before it trusts it: a known kind, no payload
/// but on Data, at most kMaxFrameBytes. TcpTransport.cpp reads sockets
/// through it; fuzz/TcpFrameFuzzer.cpp feeds it anything.
class FrameReader {
public:
  enum Result { More, Complete, Malformed };
  /// Where the next bytes go, and how many are wanted (never 0).
  char *room();
  size_t wanted() const;
  /// `count` bytes (at most wanted()) were written at room(). Complete: the
  /// frame is in frame() and its payload in take(); Malformed: why().
  Result received(size_t count);
  const Frame &frame() const { return frame_; }
  std::unique_ptr<overlap_mpi_message_s> take() { return std::move(reading_); }
  const std::string &why() const { return why_; }

private:
  Frame frame_;
  size_t headerGot_ = 0;
  std::unique_ptr<overlap_mpi_message_s> reading_;
  size_t payloadGot_ = 0;
  bool inPayload_ = false;
  std::string why_;
};

struct Peer {
  int fd = -1;
  std::mutex write;
  bool bye = false;    ///< said goodbye (finalize)
  bool closed = false; ///< nothing more to read
  /// Why its connection was dropped ("" unless it sent a malformed frame).
  std::string broken;
  /// Closed without goodbye: it exited, crashed or was killed.
  bool dead() const { return closed && !bye; }
  FrameReader reader;
};

/// The joining handshake (TcpBootstrap.cpp; docs/runtime.md, "Who can join
/// a TCP job"). The side that connects says only which protocol it speaks
/// and sends a fresh nonce; the side that listens answers with its own
/// nonce and proves it holds the job's key; then the connecting side says
/// who it is and proves the key too; then the listening side answers, its
/// answer proved as well. A side that cannot prove the key learns nothing
/// of the job, and is answered.
struct Greeting {
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  uint8_t nonce[32] = {};
};

/// The listening side's first reply: status 0, its nonce and proof; or
/// status 1 (it does not speak this protocol), then `bytes` of reason.
struct Challenge {
  uint32_t magic = kMagic;
  uint32_t status = 0;
  uint8_t nonce[32] = {};
  uint8_t proof[32] = {};
  uint64_t bytes = 0;
};

/// Who the connecting rank is, and its proof over both nonces and these
/// fields.
struct Hello {
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  int32_t rank = 0;
  int32_t size = 0;
  uint32_t pid = 0;
  uint16_t listenPort = 0;
  uint16_t reserved = 0;
  uint8_t proof[32] = {};
};

/// The listening side's answer: accepted (status 0; from rank 0, then every
/// rank's address) or not (status 1, then the reason's bytes). Its proof
/// covers both nonces, the status and the payload (all zero when the
/// connecting side did not prove the key: such a refusal says only that).
struct Answer {
  uint32_t magic = kMagic;
  uint32_t status = 0;
  uint64_t bytes = 0;
  uint8_t proof[32] = {};
};

using Clock = std::chrono::steady_clock;

/// What a process needs while it joins its job.
struct Joining {
  std::string jobKey; ///< the rendezvous key (Bootstrap.h)
  std::string secret; ///< given, or rank 0's (handed through `handing`)
  std::unique_ptr<bootstrap::Rendezvous> handing;
  std::chrono::milliseconds timeout{0}; ///< OVERLAP_BOOTSTRAP_TIMEOUT_MS
  Clock::time_point deadline;
  std::string waited; ///< " within N ms (...)", for messages
};

/// Sends all `bytes`; false when the connection is gone.
bool writeAll(int fd, const void *data, size_t bytes);

/// The joined job of this process.
class Job {
public:
  int rank = 0, size = 1;
  std::string root; ///< rank 0's address, for messages

  int init(std::string &why);
  void finalize();
  [[noreturn]] void abort(int code);

  int fail(const std::string &text) {
    std::lock_guard<std::mutex> lock(errorsMutex_);
    errors_.push_back(text);
    return static_cast<int>(errors_.size());
  }
  std::string errorText(int code) {
    std::lock_guard<std::mutex> lock(errorsMutex_);
    if (code <= 0 || static_cast<size_t>(code) > errors_.size())
      return "error " + std::to_string(code);
    return errors_[static_cast<size_t>(code) - 1];
  }

  overlap_mpi_comm world() { return &world_; }

  int issend(overlap_mpi_comm comm, int dest, int tag, const void *data,
             int bytes, overlap_mpi_request *request);
  int test(overlap_mpi_request *request, int *done);
  int ibarrier(overlap_mpi_comm comm, overlap_mpi_request *request);
  int improbe(overlap_mpi_comm comm, int source, int tag, int *found,
              overlap_mpi_message *message, int *sourceOut, int *tagOut,
              int *bytes);
  int mrecv(overlap_mpi_message message, void *data, int bytes);
  /// Every rank of `comm` sends `mine` to every other and gets theirs.
  int exchange(overlap_mpi_comm comm, int tag, const std::string &mine,
               std::vector<std::string> &all);

private:
  /// Rank 0: listens at `at`, admits every other rank that proves the key
  /// and answers each with every rank's address.
  int joinAsRoot(const sockaddr_storage &at, Joining &joining,
                 std::string &why);
  /// Other ranks: join rank 0 at `rootAt`, then meetPeers.
  int joinAsOther(const sockaddr_storage &rootAt, Joining &joining,
                  std::string &why);
  /// Connects to the ranks below (each answers) and admits those above.
  int meetPeers(int listener, const std::vector<sockaddr_storage> &at,
                const Digest &key, Hello &mine, const Joining &joining,
                std::string &why);
  /// Sends one frame to world rank `to`; false if it cannot.
  bool sendFrame(int to, const Frame &frame, const void *data);
  /// Locked: the first queued message that matches, or end.
  std::list<overlap_mpi_message_s>::iterator find(uint64_t comm, int source,
                                                  int tag);
  /// Locked: why waiting on world rank `peer` is hopeless ("" if it is not).
  std::string deadReason(int peer) const;
  void progress();
  /// Reads what `peer` sent; false when its connection ended.
  bool readFrom(int peer);
  void deliver(int peer, std::unique_ptr<overlap_mpi_message_s> message,
               const Frame &frame);

  overlap_mpi_comm_s world_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::thread progress_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> nextSendId_{1};

  std::mutex mutex_;
  std::condition_variable changed_;
  std::list<overlap_mpi_message_s> queue_;
  std::map<uint64_t, overlap_mpi_request> sends_;

  std::mutex errorsMutex_;
  std::vector<std::string> errors_;
};

/// The job this process joined (null before).
extern Job *job;

} // namespace tcp
} // namespace process
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_PROCESS_TCPJOB_H
