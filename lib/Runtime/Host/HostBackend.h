//===- HostBackend.h - Ranks as threads, streams as workers ----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The host backend: a World of R ranks in one process. Each rank is a
// HostContext whose streams are worker threads running their queues in
// order; signal flags are atomics; collectives meet in shared memory. Any
// blocking step (a wait, a collective, a split) polls the world's abort flag
// and a deadline, so a lost signal or a missing peer becomes an error and
// the first error stops every rank.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_HOST_HOSTBACKEND_H
#define OVERLAP_LIB_RUNTIME_HOST_HOSTBACKEND_H

#include "Context.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace overlap {
namespace host {

using Clock = std::chrono::steady_clock;

/// overlap_host_options with the defaults and the environment resolved.
struct Options {
  int numStreams = 2;
  int64_t waitTimeoutMs = 10000;
  bool chaos = false;
  uint64_t chaosSeed = 0;
  int64_t chaosMaxDelayUs = 1000;
};

/// One collective call of one group, while its ranks are inside it.
struct Meeting {
  explicit Meeting(int size)
      : kind(size), src(size), dst(size), color(size), key(size),
        present(size) {}
  /// What each rank called, e.g. "overlap_all_reduce(f32, sum, count 8)":
  /// ranks that disagree fail instead of mixing their buffers.
  std::vector<std::string> kind;
  std::vector<const void *> src;
  std::vector<void *> dst;
  std::vector<int> color, key;
  std::vector<char> present; // arrived at the current phase
  int arrived = 0;
  uint64_t phase = 0;
  int left = 0;
};

/// What the ranks of one group share.
struct GroupShared {
  uint64_t id = 0;
  std::vector<int> members; // world rank of each group rank
  std::mutex mutex;
  std::condition_variable cv;
  std::map<uint64_t, std::shared_ptr<Meeting>> meetings; // by call number
};

struct HostGroup : overlap_group {
  std::shared_ptr<GroupShared> shared;
  uint64_t nextCall = 0; // collectives issued by this rank on the group
};

struct HostSignals : overlap_signals {
  std::unique_ptr<std::atomic<uint64_t>[]> flags;
  std::mutex mutex;
  std::condition_variable cv;
};

class World {
public:
  World(int ranks, const Options &options);

  const int ranks;
  const Options options;
  std::shared_ptr<GroupShared> worldShared;

  /// Set once the first error of any rank is recorded.
  std::atomic<bool> aborted{false};

  /// Records the root cause (the first call wins) and sets `aborted`.
  void abort(int rank, overlap_status status, const std::string &message);
  overlap_status rootStatus();
  /// The rank of the root cause, -1 while there is none.
  int rootRank();
  std::string rootError();
  /// "rank R failed first: <its message>", for the ranks it takes down.
  std::string abandonedText();

  /// The group of color `color` made by call `call` of overlap_group_split
  /// on the parent `parentId`; made by the first member that asks.
  std::shared_ptr<GroupShared> splitGroup(uint64_t parentId, uint64_t call,
                                          int color,
                                          const std::vector<int> &members);

  /// When a wait or a barrier that starts now times out.
  Clock::time_point deadline() const {
    return runtime::deadlineAfter(Clock::now(), options.waitTimeoutMs);
  }

  /// Waits on `cv` until `ready()`; OVERLAP_ERROR_ABORTED as soon as the
  /// world aborts, OVERLAP_ERROR_TIMEOUT at `deadline`.
  template <typename Ready>
  overlap_status waitUntil(std::unique_lock<std::mutex> &lock,
                           std::condition_variable &cv,
                           Clock::time_point deadline, Ready ready) {
    while (!ready()) {
      if (aborted.load(std::memory_order_acquire))
        return OVERLAP_ERROR_ABORTED;
      Clock::time_point now = Clock::now();
      if (now >= deadline)
        return OVERLAP_ERROR_TIMEOUT;
      // Wake-ups are notified; the slice only bounds how late an abort or
      // a deadline is noticed.
      Clock::duration slice = std::chrono::milliseconds(2);
      cv.wait_for(lock, std::min<Clock::duration>(deadline - now, slice));
    }
    return OVERLAP_SUCCESS;
  }

private:
  std::mutex mutex_;
  int rootRank_ = -1;
  overlap_status rootStatus_ = OVERLAP_SUCCESS;
  std::string rootError_;
  uint64_t nextGroupId_ = 1;
  std::map<std::tuple<uint64_t, uint64_t, int>, std::shared_ptr<GroupShared>>
      splits_;
};

class HostContext;

/// One stream: a worker thread running its queue in order.
class Stream {
public:
  /// Work of one task: returns a status and, on failure, says what went
  /// wrong (the stream adds call, rank, stream and tile).
  using Work = std::function<overlap_status(std::string &what)>;

  Stream(HostContext &ctx, int index);
  ~Stream();

  /// Enqueues `work`. `signals`: the work is a signal, so the task enqueued
  /// just before it is one whose results another stream may wait for (a
  /// producer, which chaos mode holds back).
  void enqueue(const runtime::Site &site, Work work, bool signals = false);
  void synchronize();

private:
  struct Task {
    runtime::Site site;
    Work work;
    uint64_t seq = 0;
    bool producer = false;
  };
  void loop();
  void run(Task &task, bool producer);
  /// Chaos mode's delay before a task, drawn from the stream's sequence.
  std::chrono::microseconds chaosDelay(bool producer);
  /// Sleeps in slices, returning early once this rank or the world failed.
  void sleepUnlessFailed(std::chrono::microseconds delay);

  HostContext &ctx_;
  const int index_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Task> queue_;
  uint64_t enqueued_ = 0, done_ = 0;
  /// A task that had left the queue when a signal marked it a producer.
  uint64_t producerSeq_ = 0;
  bool stop_ = false;
  std::mt19937_64 chaos_;
  std::thread worker_;
};

/// One rank. The process backend (lib/Runtime/Process) derives from it and
/// replaces groups and collectives; streams, signals and kernels are these.
class HostContext : public overlap_context {
public:
  HostContext(World &world, int rank);
  ~HostContext() override;

  World &world;

  overlap_group *worldGroup() override { return &worldGroup_; }
#define OVERLAP_CONTEXT_OP(Result, Name, Parameters)                           \
  Result Name Parameters override;
#include "ContextInterface.def"

protected:
  void onFail() override;

  void enqueue(const runtime::Site &site, Stream::Work work,
               bool signals = false) {
    streams_[site.stream]->enqueue(site, std::move(work), signals);
  }

private:
  HostGroup worldGroup_;
  std::vector<std::unique_ptr<HostGroup>> groups_;
  std::vector<std::unique_ptr<HostSignals>> signals_;
  std::vector<std::unique_ptr<Stream>> streams_;
};

/// The body of one collective call on one rank (Collectives.cpp).
overlap_status runCollective(World &world, GroupShared &group, int groupRank,
                             uint64_t call, const char *callName,
                             const runtime::CollectiveArgs &args,
                             std::string &what);

/// The call as the ranks of a group must agree on it, e.g.
/// "overlap_all_reduce(f32, sum, count 8)" (Collectives.cpp).
std::string describeCollective(const char *call,
                               const runtime::CollectiveArgs &args);

/// overlap_host_options with the defaults and the environment resolved; on
/// failure the text, starting with `caller`, is in hostLaunchError()
/// (HostContext.cpp).
overlap_status resolveHostOptions(const char *caller,
                                  const overlap_host_options *in, Options &out);

/// This thread's overlap_host_launch_error() text.
std::string &hostLaunchError();

/// The rendezvous of overlap_group_split (Collectives.cpp).
overlap_status runSplit(World &world, HostGroup &parent, int color, int key,
                        std::shared_ptr<GroupShared> &result, int &groupRank,
                        std::string &what);

} // namespace host
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_HOST_HOSTBACKEND_H
