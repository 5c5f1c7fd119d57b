//===- Context.h - Backend-neutral context, groups and signals -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The C entry points (Api.cpp) check their arguments, format error messages
// and keep each context's sticky error; a backend derives from the structs
// here and implements the work itself. Arguments reaching a backend are
// already valid.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_CONTEXT_H
#define OVERLAP_LIB_RUNTIME_CONTEXT_H

#include "overlap/Runtime/overlap_runtime.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <tuple>
#include <vector>

namespace overlap {
namespace runtime {

/// Where an error happened: the call, the stream and the tile or flag.
struct Site {
  enum class Kind { None, Tile, Flag };
  const char *call = "";
  int stream = -1; // -1: the rank's own thread
  Kind kind = Kind::None;
  int64_t index = -1;

  static Site tile(const char *call, int stream, int64_t tile) {
    return {call, stream, tile >= 0 ? Kind::Tile : Kind::None, tile};
  }
  static Site flag(const char *call, int stream, int64_t flag) {
    return {call, stream, Kind::Flag, flag};
  }
  static Site thread(const char *call) { return {call, -1, Kind::None, -1}; }
};

/// "compute", "comm", or the index of a further stream.
std::string streamName(int stream);

/// "call: rank R, stream S, tile T: what".
std::string formatError(const Site &site, int rank, const std::string &what);

struct GemmArgs {
  int64_t batch, m, n, k;
  overlap_dtype abType, cType;
  const void *a, *b;
  void *c;
  int64_t lda, ldb, ldc;
  int64_t strideA, strideB, strideC;
  /// OVERLAP_GEMM_TRANSPOSE_A / _B: A stored k x m, B n x k.
  bool transA = false, transB = false;
  /// OVERLAP_GEMM_OVERWRITE: the sum starts from +0.0, C is not read.
  bool overwrite = false;
};

enum class CollectiveKind {
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  Barrier,
  Shift
};

struct CollectiveArgs {
  CollectiveKind kind;
  overlap_dtype dtype;
  overlap_reduce_op op;
  const void *src;
  void *dst;
  int64_t count; // per rank, as in the C calls
  /// Shift: the offset taken mod the group size by Api.cpp, in [0, G), so
  /// that backends and the ranks' agreement see one value per permutation.
  int64_t shift = 0;
};

struct PackArgs {
  bool unpack;
  int64_t elemBytes;
  const void *src; // strided side for pack, packed side for unpack
  void *dst;
  int64_t n0, n1, n2, s0, s1;
};

/// Reads a non-negative integer environment variable (decimal, or 0x hex);
/// `present` says whether it is set and non-empty. False if malformed.
inline bool readEnvUnsigned(const char *name, bool &present, uint64_t &value) {
  const char *text = std::getenv(name);
  present = text && *text;
  if (!present)
    return true;
  char *end = nullptr;
  errno = 0;
  unsigned long long parsed = std::strtoull(text, &end, 0);
  if (errno || *end || text[0] == '-')
    return false;
  value = parsed;
  return true;
}

/// `start` plus `ms` milliseconds, saturated at the clock's end: a long
/// timeout never wraps a deadline into the past (milliseconds from about
/// 9.2e12 overflow the clock's nanoseconds).
inline std::chrono::steady_clock::time_point
deadlineAfter(std::chrono::steady_clock::time_point start, int64_t ms) {
  using Clock = std::chrono::steady_clock;
  const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                           Clock::time_point::max() - start)
                           .count();
  if (ms >= left)
    return Clock::time_point::max();
  return start + std::chrono::milliseconds(ms);
}

/// The wait timeout of a backend's options: `option` when positive, else
/// $OVERLAP_WAIT_TIMEOUT_MS, else 10000 ms; either way within
/// 1..OVERLAP_MAX_WAIT_TIMEOUT_MS. False, with `error` saying why, when not.
inline bool resolveWaitTimeoutMs(int64_t option, int64_t &out,
                                 std::string &error) {
  const std::string limit = std::to_string(OVERLAP_MAX_WAIT_TIMEOUT_MS);
  if (option < 0 || option > OVERLAP_MAX_WAIT_TIMEOUT_MS) {
    error = "wait_timeout_ms is " + std::to_string(option) +
            ", expected 0 (the default) to " + limit +
            " ms (OVERLAP_MAX_WAIT_TIMEOUT_MS)";
    return false;
  }
  if (option) {
    out = option;
    return true;
  }
  bool present = false;
  uint64_t value = 0;
  if (!readEnvUnsigned("OVERLAP_WAIT_TIMEOUT_MS", present, value) ||
      (present &&
       (value == 0 || value > uint64_t(OVERLAP_MAX_WAIT_TIMEOUT_MS)))) {
    error = "OVERLAP_WAIT_TIMEOUT_MS must be a positive integer of at most " +
            limit + " (ms)";
    return false;
  }
  out = present ? static_cast<int64_t>(value) : 10000;
  return true;
}

/// Hands a group a backend's split made to the backend's list, which owns
/// it, and returns it through `group`.
template <typename G>
overlap_status adoptGroup(std::vector<std::unique_ptr<G>> &groups,
                          std::unique_ptr<G> made, overlap_group **group) {
  *group = made.get();
  groups.push_back(std::move(made));
  return OVERLAP_SUCCESS;
}

/// Destroys `group` if `groups` owns it.
template <typename G>
void destroyOwnedGroup(std::vector<std::unique_ptr<G>> &groups,
                       overlap_group *group) {
  for (auto it = groups.begin(); it != groups.end(); ++it) {
    if (it->get() == group) {
      groups.erase(it);
      return;
    }
  }
}

} // namespace runtime
} // namespace overlap

/// A process group as seen by one rank.
struct overlap_group {
  virtual ~overlap_group() = default;
  int rank = 0; // index of this rank in the group
  int size = 1;
};

/// A set of epoch-counted flags of one context.
struct overlap_signals {
  virtual ~overlap_signals() = default;
  int32_t count = 0;
  uint64_t epoch = 1; // captured by signal/wait when they are enqueued
};

/// One rank. Backends derive from it; Api.cpp owns the error bookkeeping.
struct overlap_context {
  overlap_context(int rank, int size, int numStreams)
      : rank(rank), size(size), numStreams(numStreams) {}
  virtual ~overlap_context() = default;

  const int rank, size, numStreams;

  /// Signal sets of overlap_signals_acquire by (key, flag count); the
  /// backend owns them. The count is part of the key: two compiled programs
  /// on one context (a plan and its one-tile reference in overlap-exec)
  /// number their regions alike, and key 0 of one is not key 0 of the other.
  using SignalKey = std::pair<int64_t, int32_t>;
  std::map<SignalKey, overlap_signals *> keyedSignals;

  /// Groups of overlap_group_split_cached by (parent, tag, color, key); the
  /// backend owns them. A null group (OVERLAP_UNDEFINED_COLOR) is kept too,
  /// so that no rank splits a second time.
  using SplitKey = std::tuple<overlap_group *, uint64_t, int, int>;
  std::map<SplitKey, overlap_group *> cachedSplits;

  /// Guards keyedSignals and cachedSplits: threads that share a context (a
  /// runner calling two programs at once, a framework's worker threads) may
  /// acquire and split at the same time.
  std::mutex cacheMutex;

  /// Open overlap_fuse_begin calls per stream (Api.cpp keeps the nesting;
  /// the backend sees the outermost pair). Streams are enqueued from one
  /// thread each, as every other call's.
  int &fuseDepth(int stream) {
    if (fuseDepths.size() < size_t(numStreams))
      fuseDepths.assign(size_t(numStreams), 0);
    return fuseDepths[size_t(stream)];
  }
  std::vector<int> fuseDepths;

  overlap_status status() const {
    return status_.load(std::memory_order_acquire);
  }
  const char *lastError();

  /// Records the first error (later ones are dropped) and tells the backend
  /// so it can abort the other ranks. Returns `status`. Thread-safe.
  overlap_status fail(overlap_status status, const std::string &message);

  // Backend interface. Stream indices, groups, signals and sizes are valid.
  virtual overlap_group *worldGroup() = 0;
  // The operations every backend implements, one row each.
#define OVERLAP_CONTEXT_OP(Result, Name, Parameters)                           \
  virtual Result Name Parameters = 0;
#include "ContextInterface.def"
  /// Orders every stream after all work enqueued so far on every stream,
  /// without blocking the host where the backend can (overlap_streams_join).
  virtual overlap_status joinStreams() { return synchronize(-1); }
  /// Stream-ordered memory; `stream` -1: every stream. Backends without
  /// stream-ordered memory allocate at once and free after a synchronize.
  virtual overlap_status allocAsync(int stream, size_t bytes, void **ptr) {
    (void)stream;
    return alloc(bytes, ptr);
  }
  virtual overlap_status freeAsync(int stream, void *ptr) {
    overlap_status s = synchronize(stream);
    free(ptr);
    return s;
  }

protected:
  /// Called once, after the first error has been recorded.
  virtual void onFail() {}

private:
  std::atomic<overlap_status> status_{OVERLAP_SUCCESS};
  std::mutex errorMutex_;
  std::string error_;
};

#endif // OVERLAP_LIB_RUNTIME_CONTEXT_H
