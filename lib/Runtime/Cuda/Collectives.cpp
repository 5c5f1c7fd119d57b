//===- Collectives.cpp - NCCL groups and collectives -----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// One NCCL communicator per group: the world is the caller's (or the
// bootstrap's), sub-groups come from ncclCommSplit (splitShare: they share
// the parent's resources; overlap_group_split_cached in Api.cpp makes each
// one once per context). Collectives run on the stream the call names.
// NCCL, unlike the host backend, neither detects mismatched calls across
// ranks nor reduces in rank order; docs/cuda.md says what that means for
// results.
//
//===----------------------------------------------------------------------===//

#include "BoundedCall.h"
#include "CudaBackend.h"

#include "overlap/Runtime/Bootstrap.h"

#include <optional>
#include <utility>

using namespace overlap;
using namespace overlap::cuda;
using runtime::CollectiveKind;
using runtime::Site;

static ncclDataType_t ncclType(overlap_dtype dtype) {
  switch (dtype) {
  case OVERLAP_F16:
    return ncclFloat16;
  case OVERLAP_BF16:
    return ncclBfloat16;
  case OVERLAP_F64:
    return ncclFloat64;
  case OVERLAP_I8:
    return ncclInt8;
  case OVERLAP_I32:
    return ncclInt32;
  case OVERLAP_I64:
    return ncclInt64;
  case OVERLAP_I16:
    // NCCL has no 16-bit integer: moved as f16 bits (gathers and
    // all-to-all copy them unchanged); reductions are refused before.
    return ncclFloat16;
  default:
    return ncclFloat32;
  }
}

static ncclRedOp_t ncclOp(overlap_reduce_op op) {
  switch (op) {
  case OVERLAP_PROD:
    return ncclProd;
  case OVERLAP_MAX:
    return ncclMax;
  case OVERLAP_MIN:
    return ncclMin;
  case OVERLAP_AVG:
    return ncclAvg;
  default:
    return ncclSum;
  }
}

ncclResult_t CudaContext::boundedSplit(const Site &site, overlap_group *parent,
                                       int color, int key, ncclComm_t *made,
                                       ncclConfig_t *config,
                                       overlap_status &timedOut) {
  timedOut = OVERLAP_SUCCESS;
  auto *owner = static_cast<CudaGroup *>(parent);
  ncclComm_t from = commOf(parent);
  // A communicator the caller handed in is not ours to give up: no bound.
  if (!owner->owned)
    return ncclCommSplit(from, color, key, made, config);
  const int64_t bound = splitTimeoutMs(options);
  // The split runs on a thread of its own; at the deadline this thread
  // leaves it there. Nothing aborts `from` beside the split: NCCL forbids
  // operating on a communicator from two threads at once, and on a
  // communicator and a child that shares its resources (splitShare) at
  // once (NCCL's "Thread Safety"); an abort would free the communicator
  // under the split. The config is copied into the call: a late split
  // finds it alive.
  const int device = this->device;
  ncclConfig_t copied = *config;
  std::optional<std::pair<ncclResult_t, ncclComm_t>> done =
      runtime::callWithin<std::pair<ncclResult_t, ncclComm_t>>(
          bound, [from, color, key, copied, device]() mutable {
            ncclComm_t child = nullptr;
            ncclResult_t r = ncclInternalError;
            if (cudaSetDevice(device) == cudaSuccess)
              r = ncclCommSplit(from, color, key, &child, &copied);
            return std::make_pair(r, child);
          });
  if (done) {
    *made = done->second;
    return done->first;
  }
  // Still in the split: every communicator of the context may share the
  // parent's resources (Overlap creates them all with splitShare), so none
  // is touched again, not even at destruction. They leak with the thread;
  // the process is expected to exit on the error.
  *made = nullptr;
  strandCommunicators();
  timedOut = fail(
      OVERLAP_ERROR_TIMEOUT,
      runtime::formatError(
          site, rank,
          "ncclCommSplit did not return within " + std::to_string(bound) +
              " ms (the larger of wait_timeout_ms and "
              "OVERLAP_BOOTSTRAP_TIMEOUT_MS): a rank of the parent group did "
              "not split with it (it failed, or runs another program); the "
              "split was left blocked on its own thread and the context's "
              "NCCL communicators are abandoned (never aborted under it)"));
  return ncclInternalError;
}

void CudaContext::strandCommunicators() {
  for (CudaGroup *g : allGroups()) {
    g->comm = nullptr;
    for (auto &entry : g->zeroSm) {
      // The window and its memory stay with the abandoned communicator.
      entry.second.comm = nullptr;
      entry.second.window = nullptr;
      entry.second.buffer = nullptr;
    }
  }
  commsStranded_ = true;
}

overlap_status CudaContext::split(overlap_group *parent, int color, int key,
                                  overlap_group **group) {
  Site site = Site::thread("overlap_group_split");
  ncclComm_t made = nullptr;
  ncclConfig_t config = ncclSplitConfigFor(options);
  overlap_status timedOut = OVERLAP_SUCCESS;
  ncclResult_t splitResult = boundedSplit(
      site, parent,
      color == OVERLAP_UNDEFINED_COLOR ? NCCL_SPLIT_NOCOLOR : color, key, &made,
      &config, timedOut);
  if (timedOut != OVERLAP_SUCCESS)
    return timedOut;
  if (overlap_status s = check(site, "ncclCommSplit", splitResult))
    return s;
  if (!made) {
    *group = nullptr;
    return OVERLAP_SUCCESS;
  }
  auto result = std::make_unique<CudaGroup>();
  result->comm = made;
  result->owned = true;
  if (overlap_status s = check(site, "ncclCommUserRank",
                               ncclCommUserRank(made, &result->rank))) {
    (void)ncclCommDestroy(made);
    return s;
  }
  if (overlap_status s =
          check(site, "ncclCommCount", ncclCommCount(made, &result->size))) {
    (void)ncclCommDestroy(made);
    return s;
  }
  return runtime::adoptGroup(groups_, std::move(result), group);
}

int64_t overlap::cuda::splitTimeoutMs(const Options &options) {
  int64_t bootstrap = 60000;
  std::string ignored; // a malformed value was refused at bootstrap
  if (!bootstrap::bootstrapTimeoutMs(bootstrap::processEnv(), bootstrap,
                                     ignored))
    bootstrap = 60000;
  return std::max<int64_t>(options.waitTimeoutMs, bootstrap);
}

void CudaContext::destroyGroup(overlap_group *group) {
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (groups_[i].get() != group)
      continue;
    // The zero-SM windows and communicators go first: they were split
    // from this communicator and deregister over their own. Their streams
    // must be idle (bounded); a context that failed aborts them.
    bool idle = status() == OVERLAP_SUCCESS;
    for (const auto &entry : groups_[i]->zeroSm)
      idle = idle &&
             drain({entry.first}, "overlap_group_destroy") == OVERLAP_SUCCESS;
    zeroSmRelease(*groups_[i], !idle, idle);
    if (groups_[i]->comm)
      check(Site::thread("overlap_group_destroy"), "ncclCommDestroy",
            ncclCommDestroy(groups_[i]->comm));
    groups_.erase(groups_.begin() + i);
    return;
  }
}

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 28, 0)
/// Before NCCL 2.28 there is no ncclAlltoAll: one send and one receive per
/// peer in a group, which NCCL runs as one operation.
static overlap_status allToAllBySendRecv(CudaContext &ctx, const Site &site,
                                         ncclComm_t comm, cudaStream_t s,
                                         const runtime::CollectiveArgs &args) {
  int size = 0;
  if (overlap_status st =
          ctx.check(site, "ncclCommCount", ncclCommCount(comm, &size)))
    return st;
  const size_t count = size_t(args.count);
  const size_t bytes = count * overlap_dtype_size(args.dtype);
  const auto *src = static_cast<const char *>(args.src);
  auto *dst = static_cast<char *>(args.dst);
  if (overlap_status st = ctx.check(site, "ncclGroupStart", ncclGroupStart()))
    return st;
  ncclResult_t result = ncclSuccess;
  for (int p = 0; p < size && result == ncclSuccess; ++p) {
    result = ncclSend(src + p * bytes, count, ncclType(args.dtype), p, comm, s);
    if (result == ncclSuccess)
      result =
          ncclRecv(dst + p * bytes, count, ncclType(args.dtype), p, comm, s);
  }
  ncclResult_t ended = ncclGroupEnd();
  return ctx.check(site, "ncclSend/ncclRecv",
                   result != ncclSuccess ? result : ended);
}
#endif

overlap_status CudaContext::collective(const Site &site, overlap_group *group,
                                       const runtime::CollectiveArgs &args) {
  ncclComm_t comm = commOf(group);
  cudaStream_t s = stream(site.stream);
  const size_t count = size_t(args.count);
  if (args.dtype == OVERLAP_I16 && (args.kind == CollectiveKind::AllReduce ||
                                    args.kind == CollectiveKind::ReduceScatter))
    return failCall(site, "ncclAllReduce/ncclReduceScatter",
                    "NCCL reduces no 16-bit integers (ncclInt8, ncclInt32 "
                    "and ncclInt64 it does): widen the i16 buffer to i32",
                    OVERLAP_ERROR_INVALID_ARGUMENT);
  switch (args.kind) {
  case CollectiveKind::AllReduce:
    if (!count)
      return OVERLAP_SUCCESS;
    return check(site, "ncclAllReduce",
                 ncclAllReduce(args.src, args.dst, count, ncclType(args.dtype),
                               ncclOp(args.op), comm, s));
  case CollectiveKind::ReduceScatter:
    if (!count)
      return OVERLAP_SUCCESS;
    return check(site, "ncclReduceScatter",
                 ncclReduceScatter(args.src, args.dst, count,
                                   ncclType(args.dtype), ncclOp(args.op), comm,
                                   s));
  case CollectiveKind::AllGather: {
    if (!count)
      return OVERLAP_SUCCESS;
    // The copy-engine path (zero_sm_all_gather); the plain one when it is
    // off or the group fell back.
    bool handled = false;
    if (overlap_status st =
            zeroSmAllGather(site, *static_cast<CudaGroup *>(group), args,
                            ncclType(args.dtype), handled))
      return st;
    if (handled)
      return OVERLAP_SUCCESS;
    return check(site, "ncclAllGather",
                 ncclAllGather(args.src, args.dst, count, ncclType(args.dtype),
                               comm, s));
  }
  case CollectiveKind::AllToAll:
    if (!count)
      return OVERLAP_SUCCESS;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    return check(
        site, "ncclAlltoAll",
        ncclAlltoAll(args.src, args.dst, count, ncclType(args.dtype), comm, s));
#else
    return allToAllBySendRecv(*this, site, comm, s, args);
#endif
  case CollectiveKind::Shift: {
    if (!count)
      return OVERLAP_SUCCESS;
    const int size = group->size, me = group->rank;
    // Api.cpp took the shift mod G: 0 is a copy on the stream (in place:
    // nothing to do), which NCCL has no call for.
    if (args.shift == 0) {
      if (args.src == args.dst)
        return OVERLAP_SUCCESS;
      return check(site, "cudaMemcpyAsync (shift 0)",
                   cudaMemcpyAsync(args.dst, args.src,
                                   count * overlap_dtype_size(args.dtype),
                                   cudaMemcpyDeviceToDevice, s));
    }
    const int to = int((me + args.shift) % size);
    const int from = int((me - args.shift + size) % size);
    // One send and one receive in a group, which NCCL runs as one
    // operation (no deadlock whatever the order of the ranks). Compiled,
    // not run: no GPU where this was written.
    if (overlap_status st = check(site, "ncclGroupStart", ncclGroupStart()))
      return st;
    ncclResult_t result =
        ncclSend(args.src, count, ncclType(args.dtype), to, comm, s);
    if (result == ncclSuccess)
      result = ncclRecv(args.dst, count, ncclType(args.dtype), from, comm, s);
    ncclResult_t ended = ncclGroupEnd();
    return check(site, "ncclSend/ncclRecv (shift)",
                 result != ncclSuccess ? result : ended);
  }
  case CollectiveKind::Barrier:
    // NCCL has no barrier; a one-word all-reduce orders the group's streams.
    return check(site, "ncclAllReduce (barrier)",
                 ncclAllReduce(barrierScratch_, barrierScratch_, 1, ncclInt32,
                               ncclSum, comm, s));
  }
  return OVERLAP_ERROR_INTERNAL;
}
