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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
constexpr uint32_t kVersion = 1;
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

struct Peer {
  int fd = -1;
  std::mutex write;
  bool bye = false;    ///< said goodbye (finalize)
  bool closed = false; ///< nothing more to read
  /// Closed without goodbye: it exited, crashed or was killed.
  bool dead() const { return closed && !bye; }
  // The frame being read.
  Frame frame;
  size_t headerGot = 0;
  std::unique_ptr<overlap_mpi_message_s> reading;
  size_t payloadGot = 0;
};

/// What a rank says first on every connection it opens.
struct Hello {
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  int32_t rank = 0;
  int32_t size = 0;
  uint64_t keyHash = 0;
  uint32_t pid = 0;
  uint16_t listenPort = 0;
  uint16_t reserved = 0;
};

/// Rank 0's answer: accepted (status 0, then every rank's address) or not
/// (status 1, then the reason's bytes).
struct Answer {
  uint32_t magic = kMagic;
  uint32_t status = 0;
  uint64_t bytes = 0;
};

using Clock = std::chrono::steady_clock;

/// Sends all `bytes`; false when the connection is gone.
bool writeAll(int fd, const void *data, size_t bytes);
/// An FNV-1a hash of the job key, which every Hello carries.
uint64_t hashKey(const std::string &key);

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
