//===- Api.cpp - C entry points: checks, errors, dispatch -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Every C call of overlap_runtime.h except the host launcher. Arguments are
// checked here, once for all backends, so that a bad call fails at the call
// with a message naming it, the rank, the stream and the tile, instead of
// crashing a worker thread later.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "overlap/Runtime/Numeric.h"

#include <csetjmp>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace overlap::runtime;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

std::string overlap::runtime::streamName(int stream) {
  if (stream == OVERLAP_STREAM_COMPUTE)
    return "compute";
  if (stream == OVERLAP_STREAM_COMM)
    return "comm";
  return std::to_string(stream);
}

std::string overlap::runtime::formatError(const Site &site, int rank,
                                          const std::string &what) {
  std::string text = site.call;
  text += ": rank " + std::to_string(rank);
  if (site.stream >= 0)
    text += ", stream " + streamName(site.stream);
  if (site.kind == Site::Kind::Tile)
    text += ", tile " + std::to_string(site.index);
  else if (site.kind == Site::Kind::Flag)
    text += ", flag " + std::to_string(site.index);
  return text + ": " + what;
}

const char *overlap_context::lastError() {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return error_.c_str();
}

overlap_status overlap_context::fail(overlap_status status,
                                     const std::string &message) {
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (status_.load(std::memory_order_relaxed) != OVERLAP_SUCCESS)
      return status;
    error_ = message;
    status_.store(status, std::memory_order_release);
  }
  onFail();
  return status;
}

namespace {

/// One C call: its site, and helpers that fail the context with a message.
struct Call {
  overlap_context *ctx;
  Site site;

  overlap_status bad(const std::string &what) const {
    return ctx->fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                     formatError(site, ctx->rank, what));
  }

  /// Sticky error, then stream range.
  overlap_status begin() const {
    if (overlap_status s = ctx->status())
      return s;
    if (site.stream < -1 || site.stream >= ctx->numStreams)
      return bad("no such stream (the context has " +
                 std::to_string(ctx->numStreams) + ")");
    return OVERLAP_SUCCESS;
  }

  /// begin(), for work queued on a stream: -1 ("no stream") is refused too.
  overlap_status beginQueued() const {
    if (overlap_status s = begin())
      return s;
    if (site.stream < 0)
      return bad("no such stream");
    return OVERLAP_SUCCESS;
  }
};

std::string str(int64_t v) { return std::to_string(v); }

bool validDtype(overlap_dtype t) {
  return t >= OVERLAP_F32 && t <= OVERLAP_I64;
}

bool floatGemmDtype(overlap_dtype t) {
  return t == OVERLAP_F32 || t == OVERLAP_F16 || t == OVERLAP_BF16;
}

bool validOp(overlap_reduce_op op) {
  return op >= OVERLAP_SUM && op <= OVERLAP_AVG;
}

} // namespace

extern "C" {

const char *overlap_status_name(overlap_status status) {
  switch (status) {
  case OVERLAP_SUCCESS:
    return "OVERLAP_SUCCESS";
  case OVERLAP_ERROR_INVALID_ARGUMENT:
    return "OVERLAP_ERROR_INVALID_ARGUMENT";
  case OVERLAP_ERROR_TIMEOUT:
    return "OVERLAP_ERROR_TIMEOUT";
  case OVERLAP_ERROR_ABORTED:
    return "OVERLAP_ERROR_ABORTED";
  case OVERLAP_ERROR_OUT_OF_MEMORY:
    return "OVERLAP_ERROR_OUT_OF_MEMORY";
  case OVERLAP_ERROR_UNSUPPORTED:
    return "OVERLAP_ERROR_UNSUPPORTED";
  case OVERLAP_ERROR_BACKEND:
    return "OVERLAP_ERROR_BACKEND";
  case OVERLAP_ERROR_INTERNAL:
    return "OVERLAP_ERROR_INTERNAL";
  }
  return "OVERLAP_ERROR_UNKNOWN";
}

const char *overlap_last_error(overlap_context *ctx) {
  return ctx ? ctx->lastError() : "overlap_last_error: null context";
}

overlap_status overlap_context_status(overlap_context *ctx) {
  return ctx ? ctx->status() : OVERLAP_ERROR_INVALID_ARGUMENT;
}

int overlap_context_rank(overlap_context *ctx) { return ctx ? ctx->rank : -1; }
int overlap_context_size(overlap_context *ctx) { return ctx ? ctx->size : 0; }
int overlap_context_num_streams(overlap_context *ctx) {
  return ctx ? ctx->numStreams : 0;
}
overlap_group *overlap_context_world(overlap_context *ctx) {
  return ctx ? ctx->worldGroup() : nullptr;
}

overlap_status overlap_stream_synchronize(overlap_context *ctx,
                                          int32_t stream) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::tile("overlap_stream_synchronize", stream, -1)};
  if (stream < 0 || stream >= ctx->numStreams)
    return call.bad("no such stream (the context has " + str(ctx->numStreams) +
                    ")");
  return ctx->synchronize(stream);
}

overlap_status overlap_context_synchronize(overlap_context *ctx) {
  return ctx ? ctx->synchronize(-1) : OVERLAP_ERROR_INVALID_ARGUMENT;
}

overlap_status overlap_streams_join(overlap_context *ctx) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  if (overlap_status s = ctx->status())
    return s;
  return ctx->joinStreams();
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

/// What both splits check before splitting: the context is usable, the
/// result pointer is there (cleared), the color is >= 0 or undefined.
static overlap_status beginSplit(Call &call, int color, overlap_group **group) {
  if (overlap_status s = call.begin())
    return s;
  if (!group)
    return call.bad("null result pointer");
  *group = nullptr;
  if (color < 0 && color != OVERLAP_UNDEFINED_COLOR)
    return call.bad("color " + str(color) +
                    " is negative but not OVERLAP_UNDEFINED_COLOR");
  return OVERLAP_SUCCESS;
}

overlap_status overlap_group_split(overlap_context *ctx, overlap_group *parent,
                                   int color, int key, overlap_group **group) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::thread("overlap_group_split")};
  if (overlap_status s = beginSplit(call, color, group))
    return s;
  return ctx->split(parent ? parent : ctx->worldGroup(), color, key, group);
}

overlap_status overlap_group_split_cached(overlap_context *ctx,
                                          overlap_group *parent, uint64_t tag,
                                          int color, int key,
                                          overlap_group **group) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::thread("overlap_group_split_cached")};
  if (overlap_status s = beginSplit(call, color, group))
    return s;
  if (!parent)
    parent = ctx->worldGroup();
  const overlap_context::SplitKey cacheKey{parent, tag, color, key};
  // Held across the split: a second thread asking for the same group waits
  // for it rather than splitting again.
  std::lock_guard<std::mutex> lock(ctx->cacheMutex);
  auto it = ctx->cachedSplits.find(cacheKey);
  if (it != ctx->cachedSplits.end()) {
    *group = it->second;
    return OVERLAP_SUCCESS;
  }
  // Only a split that succeeded is kept: after a failure the context's
  // error is sticky, and every later call returns it.
  if (overlap_status s = ctx->split(parent, color, key, group))
    return s;
  ctx->cachedSplits.emplace(cacheKey, *group);
  return OVERLAP_SUCCESS;
}

int overlap_group_rank(overlap_group *group) {
  return group ? group->rank : -1;
}
int overlap_group_size(overlap_group *group) { return group ? group->size : 0; }

overlap_status overlap_group_destroy(overlap_context *ctx,
                                     overlap_group *group) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  if (!group)
    return OVERLAP_SUCCESS;
  if (group == ctx->worldGroup())
    return Call{ctx, Site::thread("overlap_group_destroy")}.bad(
        "the world group cannot be destroyed");
  // A later group may reuse the address: no cached split may name this one,
  // as its result or as its parent.
  std::lock_guard<std::mutex> lock(ctx->cacheMutex);
  for (auto it = ctx->cachedSplits.begin(); it != ctx->cachedSplits.end();) {
    if (it->second == group || std::get<0>(it->first) == group)
      it = ctx->cachedSplits.erase(it);
    else
      ++it;
  }
  ctx->destroyGroup(group);
  return OVERLAP_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

overlap_status overlap_alloc(overlap_context *ctx, size_t bytes, void **ptr) {
  if (!ptr)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  *ptr = nullptr;
  if (bytes == 0)
    return OVERLAP_SUCCESS;
  if (ctx)
    return ctx->alloc(bytes, ptr);
  // Host memory without a context: the host backend's allocation.
  size_t rounded = (bytes + 63) / 64 * 64;
  *ptr = std::aligned_alloc(64, rounded);
  return *ptr ? OVERLAP_SUCCESS : OVERLAP_ERROR_OUT_OF_MEMORY;
}

overlap_status overlap_free(overlap_context *ctx, void *ptr) {
  if (!ptr)
    return OVERLAP_SUCCESS;
  if (ctx)
    ctx->free(ptr);
  else
    std::free(ptr);
  return OVERLAP_SUCCESS;
}

/// A stream index or -1 ("every stream"), without the sticky check (memory
/// calls still run on a failed context, so that it can be cleaned up).
static overlap_status checkStreamOrAll(overlap_context *ctx, const char *call,
                                       int32_t stream) {
  if (stream >= -1 && stream < ctx->numStreams)
    return OVERLAP_SUCCESS;
  return Call{ctx, Site::tile(call, stream, -1)}.bad(
      "no such stream (the context has " + str(ctx->numStreams) +
      "; -1 means all)");
}

overlap_status overlap_alloc_async(overlap_context *ctx, int32_t stream,
                                   size_t bytes, void **ptr) {
  if (!ptr)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  *ptr = nullptr;
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  if (overlap_status s = checkStreamOrAll(ctx, "overlap_alloc_async", stream))
    return s;
  if (bytes == 0)
    return OVERLAP_SUCCESS;
  return ctx->allocAsync(stream, bytes, ptr);
}

overlap_status overlap_free_async(overlap_context *ctx, int32_t stream,
                                  void *ptr) {
  if (!ptr)
    return OVERLAP_SUCCESS;
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  if (overlap_status s = checkStreamOrAll(ctx, "overlap_free_async", stream))
    return s;
  return ctx->freeAsync(stream, ptr);
}

overlap_status overlap_memcpy(overlap_context *ctx, int32_t stream,
                              int64_t tile, void *dst, const void *src,
                              size_t bytes) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::tile("overlap_memcpy", stream, tile)};
  if (overlap_status s = call.begin())
    return s;
  if (bytes && (!dst || !src))
    return call.bad("null buffer");
  if (stream < 0)
    return call.bad("no such stream");
  return bytes ? ctx->copy(call.site, dst, src, bytes) : OVERLAP_SUCCESS;
}

overlap_status overlap_memset(overlap_context *ctx, int32_t stream,
                              int64_t tile, void *dst, int32_t value,
                              size_t bytes) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::tile("overlap_memset", stream, tile)};
  if (overlap_status s = call.begin())
    return s;
  if (bytes && !dst)
    return call.bad("null buffer");
  if (value < 0 || value > 255)
    return call.bad("value " + std::to_string(value) + " is not a byte");
  if (stream < 0)
    return call.bad("no such stream");
  return bytes ? ctx->fill(call.site, dst, static_cast<uint8_t>(value), bytes)
               : OVERLAP_SUCCESS;
}

} // extern "C"

namespace {
/// The innermost overlap_context_call_guarded of this thread.
struct Guard {
  overlap_context *ctx;
  std::jmp_buf *back;
};
thread_local Guard *guard = nullptr;

/// Puts the outer guard back however the guarded frame is left: by return,
/// by the longjmp that lands in it, or by an exception fn threw.
struct RestoreGuard {
  Guard *outer;
  ~RestoreGuard() { guard = outer; }
};

/// Fails `ctx` with a check's message ("overlap: " and the newline off,
/// the rank before it). Its strings end here, before any longjmp.
void failWithCheck(overlap_context *ctx, const char *message, size_t length) {
  std::string text(message, length);
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  const std::string tool = "overlap: ";
  if (text.compare(0, tool.size(), tool) == 0)
    text.erase(0, tool.size());
  ctx->fail(OVERLAP_ERROR_INVALID_ARGUMENT,
            "rank " + std::to_string(ctx->rank) + ": " + text);
}
} // namespace

extern "C" {

overlap_status overlap_context_call_guarded(overlap_context *ctx,
                                            void (*fn)(void *), void *arg) {
  if (!ctx || !fn)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  std::jmp_buf back;
  Guard mine{ctx, &back};
  RestoreGuard restore{guard};
  guard = &mine;
  // Only C frames (the entry's, and fn's, which calls it) lie between here
  // and overlap_check_failed: nothing with a destructor is skipped.
  if (setjmp(back) == 0) {
    fn(arg);
    return OVERLAP_SUCCESS;
  }
  return OVERLAP_ERROR_INVALID_ARGUMENT;
}

void overlap_check_failed(const char *message, int64_t length) {
  if (length < 0 || !message)
    length = 0;
  if (Guard *g = guard) {
    failWithCheck(g->ctx, message ? message : "", static_cast<size_t>(length));
    std::longjmp(*g->back, 1); // nothing with a destructor lives here
  }
  if (length && ::write(2, message, static_cast<size_t>(length)) < 0) {
  }
  std::abort();
}

overlap_status overlap_launch_host_func(overlap_context *ctx, int32_t stream,
                                        void (*fn)(void *), void *user) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::tile("overlap_launch_host_func", stream, -1)};
  if (overlap_status s = call.beginQueued())
    return s;
  if (!fn)
    return call.bad("null function");
  return ctx->hostFunc(call.site, fn, user);
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

overlap_status overlap_gemm(overlap_context *ctx, int32_t stream, int64_t tile,
                            int64_t batch, int64_t m, int64_t n, int64_t k,
                            overlap_dtype ab_type, const void *a, int64_t lda,
                            int64_t stride_a, const void *b, int64_t ldb,
                            int64_t stride_b, overlap_dtype c_type, void *c,
                            int64_t ldc, int64_t stride_c, int32_t flags) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::tile("overlap_gemm", stream, tile)};
  if (overlap_status s = call.beginQueued())
    return s;
  if (batch < 0 || m < 0 || n < 0 || k < 0)
    return call.bad("negative size (batch " + str(batch) + ", m " + str(m) +
                    ", n " + str(n) + ", k " + str(k) + ")");
  if (!floatGemmDtype(ab_type))
    return call.bad("A/B element type " + str(ab_type) +
                    " is not one the GEMM takes (f32, f16, bf16)");
  if (!floatGemmDtype(c_type) || (c_type != OVERLAP_F32 && c_type != ab_type))
    return call.bad("C element type " + str(c_type) +
                    " is neither f32 nor the A/B type " + str(ab_type));
  constexpr int32_t known = OVERLAP_GEMM_TRANSPOSE_A |
                            OVERLAP_GEMM_TRANSPOSE_B | OVERLAP_GEMM_OVERWRITE;
  if (flags & ~known)
    return call.bad("unknown flag bits " + str(flags & ~known) +
                    " (OVERLAP_GEMM_TRANSPOSE_A 1, _TRANSPOSE_B 2, "
                    "_OVERWRITE 4)");
  const bool transA = flags & OVERLAP_GEMM_TRANSPOSE_A;
  const bool transB = flags & OVERLAP_GEMM_TRANSPOSE_B;
  const bool overwrite = flags & OVERLAP_GEMM_OVERWRITE;
  // With k = 0, C = C + 0 leaves C as it is; overwritten, C is zero (the
  // kernel's sum of nothing, rounded), so only an empty C returns here.
  if (batch == 0 || m == 0 || n == 0 || (k == 0 && !overwrite))
    return OVERLAP_SUCCESS;
  if (!c || (k > 0 && (!a || !b)))
    return call.bad("null matrix");
  // With k = 0 (an overwrite of zeros) A and B have no element.
  if (k > 0 && lda < (transA ? m : k))
    return call.bad("lda (" + str(lda) + ") < " +
                    (transA ? "m (" + str(m) : "k (" + str(k)) + ")" +
                    (transA ? ", A transposed" : ""));
  if (k > 0 && ldb < (transB ? k : n))
    return call.bad("ldb (" + str(ldb) + ") < " +
                    (transB ? "k (" + str(k) : "n (" + str(n)) + ")" +
                    (transB ? ", B transposed" : ""));
  if (ldc < n)
    return call.bad("ldc (" + str(ldc) + ") < n (" + str(n) + ")");
  if (stride_a < 0 || stride_b < 0 || stride_c < 0)
    return call.bad("negative batch stride");
  if (batch > 1 && stride_c < (m - 1) * ldc + n)
    return call.bad("stride_c (" + str(stride_c) +
                    ") makes the C matrices of the batch overlap");
  GemmArgs args{batch, m,   n,   k,   ab_type,  c_type,   a,       b,
                c,     lda, ldb, ldc, stride_a, stride_b, stride_c};
  args.transA = transA;
  args.transB = transB;
  args.overwrite = overwrite;
  return ctx->gemm(call.site, args);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

static overlap_status collective(const char *name, overlap_context *ctx,
                                 int32_t stream, int64_t tile,
                                 overlap_group *group, CollectiveArgs args) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::tile(name, stream, tile)};
  if (overlap_status s = call.beginQueued())
    return s;
  if (!group)
    group = ctx->worldGroup();
  if (args.kind != CollectiveKind::Barrier) {
    if (!validDtype(args.dtype))
      return call.bad("unknown element type " + str(args.dtype));
    if (args.count < 0)
      return call.bad("negative count " + str(args.count));
    if (args.count > 0 && (!args.src || !args.dst))
      return call.bad("null buffer");
  }
  if (args.kind == CollectiveKind::AllToAll && args.count > 0) {
    // Every rank reads its peers' src while writing its own dst: the two
    // must not share bytes, or a block would be read after it changed.
    const uintptr_t bytes = uintptr_t(group->size) * uintptr_t(args.count) *
                            overlap_dtype_size(args.dtype);
    const uintptr_t src = reinterpret_cast<uintptr_t>(args.src);
    const uintptr_t dst = reinterpret_cast<uintptr_t>(args.dst);
    if (src < dst + bytes && dst < src + bytes)
      return call.bad("send and receive buffers overlap (" +
                      str(int64_t(bytes)) + " bytes each)");
  }
  if (args.kind == CollectiveKind::Shift) {
    // One value per permutation: backends and the ranks' agreement see the
    // offset in [0, G), so -1 and G - 1 are the same call.
    const int64_t size = group->size, given = args.shift;
    args.shift = (args.shift % size + size) % size;
    const uintptr_t elem = overlap_dtype_size(args.dtype);
    if (args.count > 0 && uintptr_t(args.count) > UINTPTR_MAX / elem)
      return call.bad("count " + str(args.count) + " of " +
                      dtypeName(args.dtype) + " overflows the address space");
    const uintptr_t bytes = uintptr_t(args.count) * elem;
    const uintptr_t src = reinterpret_cast<uintptr_t>(args.src);
    const uintptr_t dst = reinterpret_cast<uintptr_t>(args.dst);
    // A shift of 0 (mod G) is a local copy and may be in place; any other
    // reads the peer's src while its own dst is written, so they must be
    // apart. Partial overlap is refused either way (CUDA's copy is
    // undefined on it).
    const bool inPlace = src == dst && args.shift == 0;
    if (bytes && !inPlace && src < dst + bytes && dst < src + bytes)
      return call.bad(
          "send and receive buffers overlap (" + str(int64_t(bytes)) +
          " bytes each, shift " + str(given) + " in a group of " + str(size) +
          (args.shift == 0 ? ": in place needs src == dst" : "") + ")");
  }
  if ((args.kind == CollectiveKind::AllReduce ||
       args.kind == CollectiveKind::ReduceScatter) &&
      !validOp(args.op))
    return call.bad("unknown reduction " + str(args.op));
  return ctx->collective(call.site, group, args);
}

overlap_status overlap_all_reduce(overlap_context *ctx, int32_t stream,
                                  int64_t tile, overlap_group *group,
                                  overlap_dtype dtype, overlap_reduce_op op,
                                  const void *src, void *dst, int64_t count) {
  return collective("overlap_all_reduce", ctx, stream, tile, group,
                    {CollectiveKind::AllReduce, dtype, op, src, dst, count});
}

overlap_status overlap_reduce_scatter(overlap_context *ctx, int32_t stream,
                                      int64_t tile, overlap_group *group,
                                      overlap_dtype dtype, overlap_reduce_op op,
                                      const void *src, void *dst,
                                      int64_t count) {
  return collective(
      "overlap_reduce_scatter", ctx, stream, tile, group,
      {CollectiveKind::ReduceScatter, dtype, op, src, dst, count});
}

overlap_status overlap_all_gather(overlap_context *ctx, int32_t stream,
                                  int64_t tile, overlap_group *group,
                                  overlap_dtype dtype, const void *src,
                                  void *dst, int64_t count) {
  return collective(
      "overlap_all_gather", ctx, stream, tile, group,
      {CollectiveKind::AllGather, dtype, OVERLAP_SUM, src, dst, count});
}

overlap_status overlap_all_to_all(overlap_context *ctx, int32_t stream,
                                  int64_t tile, overlap_group *group,
                                  overlap_dtype dtype, const void *src,
                                  void *dst, int64_t count) {
  return collective(
      "overlap_all_to_all", ctx, stream, tile, group,
      {CollectiveKind::AllToAll, dtype, OVERLAP_SUM, src, dst, count});
}

overlap_status overlap_shift(overlap_context *ctx, int32_t stream, int64_t tile,
                             overlap_group *group, overlap_dtype dtype,
                             int64_t shift, const void *src, void *dst,
                             int64_t count) {
  CollectiveArgs args{
      CollectiveKind::Shift, dtype, OVERLAP_SUM, src, dst, count};
  args.shift = shift;
  return collective("overlap_shift", ctx, stream, tile, group, args);
}

/// overlap_fuse_begin / overlap_fuse_end: the stream checked, the nesting
/// kept per stream here (an end without a begin is refused), the backend
/// told of the outermost pair only.
static overlap_status fuseCalls(const char *name, bool begin,
                                overlap_context *ctx, int32_t stream) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::tile(name, stream, -1)};
  if (overlap_status s = call.beginQueued())
    return s;
  int &depth = ctx->fuseDepth(stream);
  if (!begin && depth == 0)
    return call.bad("no overlap_fuse_begin open on this stream");
  depth += begin ? 1 : -1;
  if ((begin && depth > 1) || (!begin && depth > 0))
    return OVERLAP_SUCCESS;
  return ctx->fuseCalls(call.site, begin);
}

overlap_status overlap_fuse_begin(overlap_context *ctx, int32_t stream) {
  return fuseCalls("overlap_fuse_begin", true, ctx, stream);
}

overlap_status overlap_fuse_end(overlap_context *ctx, int32_t stream) {
  return fuseCalls("overlap_fuse_end", false, ctx, stream);
}

overlap_status overlap_barrier(overlap_context *ctx, int32_t stream,
                               int64_t tile, overlap_group *group) {
  return collective(
      "overlap_barrier", ctx, stream, tile, group,
      {CollectiveKind::Barrier, OVERLAP_F32, OVERLAP_SUM, nullptr, nullptr, 0});
}

//===----------------------------------------------------------------------===//
// Signals
//===----------------------------------------------------------------------===//

/// What both signal-set calls check first: the context is usable, the
/// result pointer is there (cleared), the set has at least one flag.
static overlap_status beginSignals(Call &call, int32_t n,
                                   overlap_signals **sigs) {
  if (overlap_status s = call.begin())
    return s;
  if (!sigs)
    return call.bad("null result pointer");
  *sigs = nullptr;
  if (n < 1)
    return call.bad("a signal set needs at least one flag, got " + str(n));
  return OVERLAP_SUCCESS;
}

overlap_status overlap_signals_create(overlap_context *ctx, int32_t n,
                                      overlap_signals **sigs) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::thread("overlap_signals_create")};
  if (overlap_status s = beginSignals(call, n, sigs))
    return s;
  return ctx->createSignals(n, sigs);
}

overlap_status overlap_signals_acquire(overlap_context *ctx, int64_t key,
                                       int32_t n, overlap_signals **sigs) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::thread("overlap_signals_acquire")};
  if (overlap_status s = beginSignals(call, n, sigs))
    return s;
  std::lock_guard<std::mutex> lock(ctx->cacheMutex);
  auto it = ctx->keyedSignals.find({key, n});
  if (it == ctx->keyedSignals.end()) {
    if (overlap_status s = ctx->createSignals(n, sigs))
      return s;
    ctx->keyedSignals[{key, n}] = *sigs;
    return OVERLAP_SUCCESS;
  }
  ++it->second->epoch;
  *sigs = it->second;
  return OVERLAP_SUCCESS;
}

overlap_status overlap_signals_next_epoch(overlap_context *ctx,
                                          overlap_signals *sigs) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  if (!sigs)
    return Call{ctx, Site::thread("overlap_signals_next_epoch")}.bad(
        "null signal set");
  ++sigs->epoch;
  return OVERLAP_SUCCESS;
}

overlap_status overlap_signals_destroy(overlap_context *ctx,
                                       overlap_signals *sigs) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  if (!sigs)
    return OVERLAP_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(ctx->cacheMutex);
    for (const auto &entry : ctx->keyedSignals)
      if (entry.second == sigs)
        return Call{ctx, Site::thread("overlap_signals_destroy")}.bad(
            "the set of key " + str(entry.first.first) +
            " belongs to the context (from overlap_signals_acquire)");
  }
  ctx->destroySignals(sigs);
  return OVERLAP_SUCCESS;
}

static overlap_status signalOrWait(const char *name, bool isWait,
                                   overlap_context *ctx, int32_t stream,
                                   overlap_signals *sigs, int32_t index) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::flag(name, stream, index)};
  if (overlap_status s = call.beginQueued())
    return s;
  if (!sigs)
    return call.bad("null signal set");
  if (index < 0 || index >= sigs->count)
    return call.bad("no such flag (the set has " + str(sigs->count) + ")");
  return isWait ? ctx->wait(call.site, sigs, index)
                : ctx->signal(call.site, sigs, index);
}

overlap_status overlap_signal(overlap_context *ctx, int32_t stream,
                              overlap_signals *sigs, int32_t index) {
  return signalOrWait("overlap_signal", false, ctx, stream, sigs, index);
}

overlap_status overlap_wait(overlap_context *ctx, int32_t stream,
                            overlap_signals *sigs, int32_t index) {
  return signalOrWait("overlap_wait", true, ctx, stream, sigs, index);
}

//===----------------------------------------------------------------------===//
// Pack / unpack
//===----------------------------------------------------------------------===//

static overlap_status packOrUnpack(const char *name, bool unpack,
                                   overlap_context *ctx, int32_t stream,
                                   int64_t tile, int64_t elemBytes,
                                   const void *src, int64_t n0, int64_t n1,
                                   int64_t n2, int64_t s0, int64_t s1,
                                   void *dst) {
  if (!ctx)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  Call call{ctx, Site::tile(name, stream, tile)};
  if (overlap_status s = call.beginQueued())
    return s;
  if (elemBytes < 1)
    return call.bad("element size " + str(elemBytes) + " < 1");
  if (n0 < 0 || n1 < 0 || n2 < 0)
    return call.bad("negative extent");
  if (n0 == 0 || n1 == 0 || n2 == 0)
    return OVERLAP_SUCCESS;
  if (!src || !dst)
    return call.bad("null buffer");
  if (s0 < 0 || s1 < 0)
    return call.bad("negative stride");
  if (unpack && n1 > 1 && s1 < n2)
    return call.bad("rows overlap: s1 (" + str(s1) + ") < n2 (" + str(n2) +
                    ")");
  if (unpack && n0 > 1 && s0 < (n1 - 1) * s1 + n2)
    return call.bad("planes overlap: s0 (" + str(s0) +
                    ") < (n1 - 1) * s1 + n2 (" + str((n1 - 1) * s1 + n2) + ")");
  PackArgs args{unpack, elemBytes, src, dst, n0, n1, n2, s0, s1};
  return ctx->pack(call.site, args);
}

overlap_status overlap_pack(overlap_context *ctx, int32_t stream, int64_t tile,
                            int64_t elem_bytes, const void *src, int64_t n0,
                            int64_t n1, int64_t n2, int64_t s0, int64_t s1,
                            void *packed) {
  return packOrUnpack("overlap_pack", false, ctx, stream, tile, elem_bytes, src,
                      n0, n1, n2, s0, s1, packed);
}

overlap_status overlap_unpack(overlap_context *ctx, int32_t stream,
                              int64_t tile, int64_t elem_bytes,
                              const void *packed, int64_t n0, int64_t n1,
                              int64_t n2, int64_t s0, int64_t s1, void *dst) {
  return packOrUnpack("overlap_unpack", true, ctx, stream, tile, elem_bytes,
                      packed, n0, n1, n2, s0, s1, dst);
}

//===----------------------------------------------------------------------===//
// Numbers
//===----------------------------------------------------------------------===//

uint16_t overlap_f32_to_f16(float value) { return f32ToF16(value); }
float overlap_f16_to_f32(uint16_t bits) { return f16ToF32(bits); }
uint16_t overlap_f32_to_bf16(float value) { return f32ToBf16(value); }
float overlap_bf16_to_f32(uint16_t bits) { return bf16ToF32(bits); }

size_t overlap_dtype_size(overlap_dtype dtype) {
  switch (dtype) {
  case OVERLAP_F32:
  case OVERLAP_I32:
    return 4;
  case OVERLAP_F16:
  case OVERLAP_BF16:
  case OVERLAP_I16:
    return 2;
  case OVERLAP_F64:
  case OVERLAP_I64:
    return 8;
  case OVERLAP_I8:
    return 1;
  case OVERLAP_DTYPE_MAX_ENUM:
    break;
  }
  return 0;
}

} // extern "C"
