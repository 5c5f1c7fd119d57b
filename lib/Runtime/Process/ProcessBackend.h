//===- ProcessBackend.h - Host ranks as processes of an MPI job -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The host backend with one rank per process. A ProcessContext is a
// HostContext (streams as worker threads, signals, GEMM, pack, copies: all
// local) whose groups are MPI communicators and whose collectives exchange
// messages over them, then compute with the threaded backend's kernels in
// the same order. A ProcessWorld is what one overlap_process_launch shares
// across the job: its communicators, the messages still in flight, and a
// monitor thread that turns another process's failure into this process's
// abort (and ends the job with MPI_Abort if this process stays blocked
// after a failure).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_PROCESS_PROCESSBACKEND_H
#define OVERLAP_LIB_RUNTIME_PROCESS_PROCESSBACKEND_H

#include "Host/HostBackend.h"
#include "MpiTransport.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace overlap {
namespace process {

/// The loaded transport and what MPI said when this process joined.
struct Mpi {
  const overlap_mpi_transport *api = nullptr;
  int rank = 0, size = 1;
  int tagUpperBound = 32767;
  /// "Open MPI v4.1.4, ...": the first line of MPI_Get_library_version.
  std::string library;
  /// A duplicate of MPI_COMM_WORLD for overlap_process_gather / _max.
  overlap_mpi_comm utility = nullptr;

  /// Joined over TCP (torchrun) rather than MPI.
  bool tcp = false;

  /// "MPI_Comm_split: MPI_ERR_COMM: invalid communicator" (over TCP, the
  /// call without its MPI_ prefix).
  std::string error(const char *call, int code) const;
  /// How abort ends the job, for messages: "MPI_Abort", or over TCP "an
  /// abort to every rank".
  const char *abortName() const {
    return tcp ? "an abort to every rank" : "MPI_Abort";
  }
};

/// The joined job, or null before overlap_process_init succeeded.
Mpi *joinedMpi();

/// The transport table served over TCP sockets (TcpTransport.cpp), for jobs
/// no MPI launcher started (torchrun).
const overlap_mpi_transport *tcpTransport();

/// Sleeps a little longer each time nothing happened, so that polling ranks
/// leave the CPU to the ranks they wait for (mpirun --oversubscribe).
class Backoff {
public:
  void idle();
  void progress() { idle_ = 0; }

private:
  int idle_ = 0;
};

/// What the ranks of one group share on this process: its communicator and
/// the world rank of each group rank (for messages).
struct GroupState {
  overlap_mpi_comm comm = nullptr;
  std::vector<int> members;
  int rank = 0;
  int size() const { return static_cast<int>(members.size()); }
};

struct ProcessGroup : overlap_group {
  std::shared_ptr<GroupState> state;
  uint64_t nextCall = 0; // calls issued by this rank on the group
};

/// The job's side of one overlap_process_launch.
class ProcessWorld {
public:
  ProcessWorld(Mpi &mpi, host::World &world);
  ~ProcessWorld();

  Mpi &mpi;
  host::World &world;

  /// Duplicates MPI_COMM_WORLD for the world group and for abort messages
  /// (collective). On failure returns false with the reason.
  bool open(std::string &error);
  std::shared_ptr<GroupState> worldState() const { return worldState_; }

  /// The message tag of call `call` on a group.
  int tagOf(uint64_t call) const;

  /// A communicator made by a split, freed when the launch ends (never
  /// earlier: a peer may still have a message on it for this rank).
  void keep(overlap_mpi_comm comm);
  /// A send that did not complete (its collective failed): kept, with its
  /// buffer, until it completes at the end of the launch.
  void keep(overlap_mpi_request request, std::shared_ptr<std::string> buffer);

  /// Sends this rank's root cause to every other rank, once.
  void broadcastAbort(overlap_status status, const std::string &message);

  /// Receives abort messages from other ranks into `world` and watches for
  /// a process that stays blocked after a failure (MPI_Abort after
  /// max(2 x wait timeout, 30 s)).
  void startMonitor();
  /// After the rank's function returned and its streams drained: receives
  /// and drops whatever other ranks still send it, until every rank's
  /// messages have been received (a nonblocking barrier entered once its
  /// own sends completed), then stops the monitor.
  /// Gives up (false, naming the wait) after `by`.
  bool drain(host::Clock::time_point by, std::string &error);
  /// The status and text every rank returns: the root cause of the lowest
  /// rank that failed by itself, or success. Collective, after drain().
  /// Gives up after `by`, naming the ranks whose outcome did not come.
  bool agree(host::Clock::time_point by, overlap_status &status,
             std::string &text, std::string &error);
  /// How long the end of a launch may wait for the other ranks, and a
  /// failed rank's monitor for this one: max(2 x wait timeout, 30 s).
  std::chrono::milliseconds endGrace() const;

private:
  /// " within N ms ...: stopped, hung or unreachable", for messages.
  std::string lateText() const;
  void monitor();
  /// Receives one abort message if there is one; false on an MPI error.
  bool pollAbort(bool record);
  /// Tests the kept sends; true when none is left.
  bool testKept();

  std::shared_ptr<GroupState> worldState_;
  overlap_mpi_comm worldComm_ = nullptr, abortComm_ = nullptr;

  std::mutex mutex_;
  std::vector<overlap_mpi_comm> comms_;
  struct Pending {
    overlap_mpi_request request;
    std::shared_ptr<std::string> buffer;
  };
  std::vector<Pending> kept_;
  bool abortSent_ = false;

  std::atomic<bool> stop_{false};
  std::thread monitor_;
};

/// One rank as a process.
class ProcessContext final : public host::HostContext {
public:
  ProcessContext(ProcessWorld &process, host::World &world, int rank);
  ~ProcessContext() override;

  overlap_group *worldGroup() override { return &worldGroup_; }
  overlap_status split(overlap_group *parent, int color, int key,
                       overlap_group **group) override;
  void destroyGroup(overlap_group *group) override;
  overlap_status collective(const runtime::Site &site, overlap_group *group,
                            const runtime::CollectiveArgs &args) override;

protected:
  void onFail() override;

private:
  ProcessWorld &process_;
  ProcessGroup worldGroup_;
  std::vector<std::unique_ptr<ProcessGroup>> groups_;
};

/// The messages of one call on a group: `payloads[p]` goes to group rank p
/// (this rank's entry is not sent); `received[p]` is what p sent, header
/// removed. Fails with the threaded backend's texts: ranks that did not
/// join within the timeout, mismatched calls (`kind` differs), an abort.
/// Every rank sends every other rank a message, empty payloads too, so that
/// every rank sees every rank's `kind`. What p must send is `expected[p]`
/// bytes, or as many as this rank sends p when `expected` is empty (calls
/// whose traffic is symmetric).
struct Exchange {
  std::vector<std::pair<const void *, size_t>> payloads;
  std::vector<size_t> expected;
  std::vector<std::string> received;
};
overlap_status exchange(ProcessWorld &process, const GroupState &group,
                        uint64_t call, const std::string &kind,
                        Exchange &messages, std::string &what);

/// The body of one collective call on one rank (ProcessCollectives.cpp).
overlap_status runCollective(ProcessWorld &process, const GroupState &group,
                             uint64_t call, const char *callName,
                             const runtime::CollectiveArgs &args,
                             std::string &what);

} // namespace process
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_PROCESS_PROCESSBACKEND_H
