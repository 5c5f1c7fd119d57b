//===- Collectives.cpp - Host collectives over shared memory ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The ranks of a group meet in a Meeting keyed by the call number (the
// n-th collective each rank issued on the group), publish their buffer
// pointers, and read each other's buffers directly between barriers.
// Reductions read the ranks in group order 0, 1, 2, ... for every element,
// so every rank gets the same bits whatever the timing.
//
//===----------------------------------------------------------------------===//

#include "HostBackend.h"
#include "Kernels.h"
#include "overlap/Runtime/Numeric.h"

#include <algorithm>
#include <cstring>

using namespace overlap::runtime;
using namespace overlap::host;

namespace {

/// One rank inside one Meeting, from joining to leaving.
class Session {
public:
  Session(World &world, GroupShared &group, int groupRank, uint64_t call)
      : world_(world), group_(group), rank_(groupRank) {
    std::lock_guard<std::mutex> lock(group.mutex);
    std::shared_ptr<Meeting> &slot = group.meetings[call];
    if (!slot)
      slot = std::make_shared<Meeting>(static_cast<int>(group.members.size()));
    meeting_ = slot;
    call_ = call;
  }

  ~Session() {
    std::lock_guard<std::mutex> lock(group_.mutex);
    if (++meeting_->left == size())
      group_.meetings.erase(call_);
  }

  int size() const { return static_cast<int>(group_.members.size()); }
  Meeting &meeting() { return *meeting_; }
  std::mutex &mutex() { return group_.mutex; }

  /// Barrier over the group; on timeout says which ranks never came.
  overlap_status arrive(std::string &what) {
    std::unique_lock<std::mutex> lock(group_.mutex);
    Meeting &m = *meeting_;
    uint64_t phase = m.phase;
    m.present[rank_] = 1;
    if (++m.arrived == size()) {
      m.arrived = 0;
      ++m.phase;
      std::fill(m.present.begin(), m.present.end(), 0);
      group_.cv.notify_all();
      return OVERLAP_SUCCESS;
    }
    Clock::time_point deadline = world_.deadline();
    overlap_status status = world_.waitUntil(lock, group_.cv, deadline,
                                             [&] { return m.phase != phase; });
    if (status == OVERLAP_ERROR_TIMEOUT) {
      std::string missing;
      for (int r = 0; r < size(); ++r) {
        if (m.present[r])
          continue;
        missing += missing.empty() ? "" : ", ";
        missing += std::to_string(group_.members[r]);
      }
      what = "rank(s) " + missing + " did not join within " +
             std::to_string(world_.options.waitTimeoutMs) + " ms (group of " +
             std::to_string(size()) + ", call " + std::to_string(call_) +
             " on the group)";
    }
    return status;
  }

private:
  World &world_;
  GroupShared &group_;
  const int rank_;
  uint64_t call_ = 0;
  std::shared_ptr<Meeting> meeting_;
};

/// The call as ranks must agree on it.
std::string describe(const char *call, const CollectiveArgs &args) {
  static const char *const ops[] = {"sum", "prod", "max", "min", "avg"};
  std::string text = call;
  if (args.kind == CollectiveKind::Barrier)
    return text;
  text += "(";
  text += dtypeName(args.dtype);
  if (args.kind == CollectiveKind::AllReduce ||
      args.kind == CollectiveKind::ReduceScatter) {
    text += ", ";
    text += ops[args.op];
  }
  // Shifts that differ (mod G: Api.cpp reduced it) are different
  // permutations: a mismatch, not a wrong peer.
  if (args.kind == CollectiveKind::Shift)
    text += ", shift " + std::to_string(args.shift);
  return text + ", count " + std::to_string(args.count) + ")";
}

/// After the first barrier: fails unless every rank made the same call.
overlap_status checkSameCall(Meeting &m, int groupRank, uint64_t call,
                             std::string &what) {
  for (size_t r = 0; r < m.kind.size(); ++r) {
    if (m.kind[r] == m.kind[groupRank])
      continue;
    what = "mismatched collectives as call " + std::to_string(call) +
           " on the group: this rank issued " + m.kind[groupRank] +
           ", group rank " + std::to_string(r) + " issued " + m.kind[r];
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  }
  return OVERLAP_SUCCESS;
}

/// Element range [begin, end) of chunk `index` of `count` chunks of `n`.
void chunk(int64_t n, int chunks, int index, int64_t &begin, int64_t &end) {
  begin = n * index / chunks;
  end = n * (index + 1) / chunks;
}

} // namespace

std::string overlap::host::describeCollective(const char *call,
                                              const CollectiveArgs &args) {
  return describe(call, args);
}

overlap_status overlap::host::runCollective(World &world, GroupShared &group,
                                            int groupRank, uint64_t call,
                                            const char *callName,
                                            const CollectiveArgs &args,
                                            std::string &what) {
  Session session(world, group, groupRank, call);
  const int size = session.size();
  Meeting &m = session.meeting();
  {
    std::lock_guard<std::mutex> lock(session.mutex());
    m.kind[groupRank] = describe(callName, args);
    m.src[groupRank] = args.src;
    m.dst[groupRank] = args.dst;
  }
  // After the first barrier every rank's pointers are published and every
  // rank's data is ready (the barrier's mutex orders the memory).
  if (overlap_status status = session.arrive(what))
    return status;
  if (overlap_status status = checkSameCall(m, groupRank, call, what))
    return status;

  const size_t elem = overlap_dtype_size(args.dtype);
  const int64_t count = args.count;
  std::vector<const void *> srcs(size);

  switch (args.kind) {
  case CollectiveKind::Barrier:
    return OVERLAP_SUCCESS;

  case CollectiveKind::AllReduce: {
    // Each rank reduces its chunk over all ranks, then writes that chunk
    // into every rank's destination; three barriers keep the reads of the
    // sources before any in-place write, and the writes before the return.
    int64_t begin, end;
    chunk(count, size, groupRank, begin, end);
    std::vector<char> result(static_cast<size_t>(end - begin) * elem);
    for (int p = 0; p < size; ++p)
      srcs[p] = static_cast<const char *>(m.src[p]) + begin * elem;
    reduceKernel(args.dtype, args.op, srcs.data(), size, end - begin,
                 result.data());
    if (overlap_status status = session.arrive(what))
      return status;
    if (!result.empty())
      for (int p = 0; p < size; ++p)
        std::memcpy(static_cast<char *>(m.dst[p]) + begin * elem, result.data(),
                    result.size());
    return session.arrive(what);
  }

  case CollectiveKind::ReduceScatter: {
    std::vector<char> result(static_cast<size_t>(count) * elem);
    for (int p = 0; p < size; ++p)
      srcs[p] = static_cast<const char *>(m.src[p]) + groupRank * count * elem;
    reduceKernel(args.dtype, args.op, srcs.data(), size, count, result.data());
    // No rank may overwrite (in place) or free a source before all ranks
    // have read it.
    if (overlap_status status = session.arrive(what))
      return status;
    if (!result.empty())
      std::memcpy(args.dst, result.data(), result.size());
    return OVERLAP_SUCCESS;
  }

  case CollectiveKind::AllGather: {
    size_t bytes = static_cast<size_t>(count) * elem;
    char *dst = static_cast<char *>(args.dst);
    for (int p = 0; p < size; ++p) {
      char *block = dst + p * bytes;
      if (bytes && block != m.src[p])
        std::memmove(block, m.src[p], bytes);
    }
    return session.arrive(what);
  }

  case CollectiveKind::AllToAll: {
    // Block p of this rank's dst is block groupRank of rank p's src. No
    // rank may reuse its src before every peer has read it: the closing
    // barrier.
    size_t bytes = static_cast<size_t>(count) * elem;
    char *dst = static_cast<char *>(args.dst);
    if (bytes)
      for (int p = 0; p < size; ++p)
        std::memcpy(dst + p * bytes,
                    static_cast<const char *>(m.src[p]) + groupRank * bytes,
                    bytes);
    return session.arrive(what);
  }

  case CollectiveKind::Shift: {
    // This rank's dst is the src of group rank (r - shift) mod G, copied
    // bit for bit; shift 0 is the rank's own src (in place: nothing to
    // copy). No rank may reuse its src before the peer that reads it has:
    // the closing barrier, as for the all-to-all.
    size_t bytes = static_cast<size_t>(count) * elem;
    const int from = static_cast<int>((groupRank - args.shift + size) % size);
    if (bytes && m.src[from] != args.dst)
      std::memmove(args.dst, m.src[from], bytes);
    return session.arrive(what);
  }
  }
  return OVERLAP_ERROR_INTERNAL;
}

overlap_status overlap::host::runSplit(World &world, HostGroup &parent,
                                       int color, int key,
                                       std::shared_ptr<GroupShared> &result,
                                       int &groupRank, std::string &what) {
  if (world.aborted.load(std::memory_order_acquire))
    return OVERLAP_ERROR_ABORTED;
  GroupShared &shared = *parent.shared;
  uint64_t call = parent.nextCall++;
  Session session(world, shared, parent.rank, call);
  Meeting &m = session.meeting();
  {
    std::lock_guard<std::mutex> lock(session.mutex());
    m.kind[parent.rank] = "overlap_group_split";
    m.color[parent.rank] = color;
    m.key[parent.rank] = key;
  }
  if (overlap_status status = session.arrive(what))
    return status;
  if (overlap_status status = checkSameCall(m, parent.rank, call, what))
    return status;
  if (color == OVERLAP_UNDEFINED_COLOR)
    return OVERLAP_SUCCESS;

  // Members of this color ordered by (key, parent rank), as MPI does.
  std::vector<int> order;
  for (int p = 0; p < session.size(); ++p)
    if (m.color[p] == color)
      order.push_back(p);
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return m.key[x] < m.key[y]; });
  std::vector<int> members;
  for (size_t i = 0; i < order.size(); ++i) {
    members.push_back(shared.members[order[i]]);
    if (order[i] == parent.rank)
      groupRank = static_cast<int>(i);
  }
  result = world.splitGroup(shared.id, call, color, members);
  return OVERLAP_SUCCESS;
}
