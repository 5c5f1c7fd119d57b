//===- ZeroSmAllGather.cpp - All-gathers on NCCL's copy engines -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The zero_sm_all_gather knob. NCCL 2.28 runs an all-gather on the copy
// engines, with no CTA, when the communicator's CTAPolicy is
// NCCL_CTA_POLICY_ZERO and the buffers lie in a window registered with
// NCCL_WIN_COLL_SYMMETRIC (driver >= 12.5, one node): the GEMM beside it
// keeps every SM. Per (group, stream) the context splits a zero-CTA
// communicator off the group's (same color, key = rank: the same ranks)
// and keeps one ncclMemAlloc'd staging buffer registered as one window.
// An all-gather copies its source into the rank's slot of the window,
// gathers in place, and copies the window out to its destination.
//
// Why the windows cannot drift apart across ranks (the garbage outputs
// reported of symmetric pools, sglang#32664, come from ranks whose
// allocations in one registered pool landed at different offsets): each
// window holds one buffer at offset 0, no sub-allocation; its size is a
// function of (group size, count, element size), which NCCL already
// requires to be equal on every rank; it is made, grown and destroyed at
// the same collective call on every rank, because every rank enqueues the
// same collectives in the same order (what NCCL requires anyway); and the
// only offset used is the one NCCL's in-place all-gather defines (rank ×
// count × element size). Steps that may fail on one rank alone (the
// allocation, the registration) are followed by an agreement (a min
// all-reduce on the group's own communicator), so that every rank falls
// back together instead of half of them waiting in a collective the others
// never call.
//
// Nothing here fails a run: a set-up step that fails records its reason in
// the group, warns once on stderr and leaves the group to the plain
// ncclAllGather (overlap_cuda_describe lists the fallbacks).
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "ZeroSmSetup.h"

#include <unistd.h>

#include <cstdio>

using namespace overlap;
using namespace overlap::cuda;
using runtime::Site;

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0) && defined(NCCL_CTA_POLICY_ZERO)
#define OVERLAP_HAVE_ZERO_SM 1
#else
#define OVERLAP_HAVE_ZERO_SM 0
#endif

std::string CudaContext::groupName(const CudaGroup &group) const {
  if (&group == &world_)
    return "world";
  for (size_t i = 0; i < groups_.size(); ++i)
    if (groups_[i].get() == &group)
      return "group #" + std::to_string(i) + " (" + std::to_string(group.size) +
             " ranks)";
  return "a group of " + std::to_string(group.size) + " ranks";
}

void CudaContext::zeroSmDisable(CudaGroup &group, const std::string &reason) {
  if (!group.zeroSmFallback.empty())
    return;
  group.zeroSmFallback = reason;
  zeroSmFellBack_ = true;
  // As for CUDA_DEVICE_MAX_CONNECTIONS: a run that loses its overlap
  // silently is worth one line, once per group.
  std::fprintf(stderr,
               "overlap: warning: rank %d: zero_sm_all_gather is off in %s: "
               "%s\n",
               rank, groupName(group).c_str(), reason.c_str());
}

std::string CudaContext::zeroSmReport() const {
  std::string text;
  if (!options.zeroSmAllGather)
    return text;
  auto add = [&](const CudaGroup &g) {
    if (!g.zeroSmFallback.empty())
      text += "; zero-sm all-gather fallback in " + groupName(g) + ": " +
              g.zeroSmFallback;
  };
  add(world_);
  for (const auto &g : groups_)
    add(*g);
  return text;
}

overlap_status CudaContext::zeroSmAgreeMin(ncclComm_t comm, int s, int value,
                                           int &lowest, std::string &why) {
  lowest = value;
  cudaStream_t stream = streams_[s];
  auto failed = [&](const char *api, const std::string &error) {
    why = std::string(api) + " (agreement) failed: " + error;
    return OVERLAP_SUCCESS;
  };
  if (!zeroSmFlag_) {
    void *flag = nullptr, *host = nullptr;
    if (cudaError_t e = cudaMalloc(&flag, sizeof(int))) {
      (void)cudaGetLastError(); // an allocation failure is not sticky
      return failed("cudaMalloc", describe(e));
    }
    if (cudaError_t e =
            cudaHostAlloc(&host, sizeof(int), cudaHostAllocDefault)) {
      (void)cudaGetLastError();
      (void)cudaFree(flag);
      return failed("cudaHostAlloc", describe(e));
    }
    zeroSmFlag_ = static_cast<int *>(flag);
    zeroSmHostFlag_ = static_cast<int *>(host);
  }
  *zeroSmHostFlag_ = value;
  if (cudaError_t e = cudaMemcpyAsync(zeroSmFlag_, zeroSmHostFlag_, sizeof(int),
                                      cudaMemcpyHostToDevice, stream))
    return failed("cudaMemcpyAsync", describe(e));
  if (ncclResult_t r = ncclAllReduce(zeroSmFlag_, zeroSmFlag_, 1, ncclInt32,
                                     ncclMin, comm, stream))
    return failed("ncclAllReduce", describe(r));
  if (cudaError_t e = cudaMemcpyAsync(zeroSmHostFlag_, zeroSmFlag_, sizeof(int),
                                      cudaMemcpyDeviceToHost, stream))
    return failed("cudaMemcpyAsync", describe(e));
  // Bounded: a stream stuck behind a wait is the context's timeout error.
  if (overlap_status st = drain({s}, "overlap_all_gather"))
    return st;
  lowest = *zeroSmHostFlag_;
  return OVERLAP_SUCCESS;
}

#if OVERLAP_HAVE_ZERO_SM
/// The set-up steps of one (group, stream) over NCCL (ZeroSmSetup.h).
class overlap::cuda::ZeroSmNccl final : public ZeroSmSetupSteps {
public:
  ZeroSmNccl(CudaContext &ctx, const Site &site, CudaGroup &group,
             ZeroSmStream &z)
      : ctx(ctx), site(site), group(group), z(z) {}

  /// The context's error that made a step Fatal.
  overlap_status fatal() const {
    return status != OVERLAP_SUCCESS ? status : ctx.status();
  }

  std::string prerequisiteProblem() override {
    int loaded = 0, driver = 0;
    if (ncclGetVersion(&loaded) != ncclSuccess)
      loaded = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess)
      driver = 0;
    return zeroSmPrerequisiteProblem(NCCL_VERSION_CODE, loaded, driver);
  }
  int nodeKey() override {
    char hostname[256] = {0};
    if (gethostname(hostname, sizeof hostname - 1) != 0)
      hostname[0] = 0;
    return zeroSmNodeKey(hostname);
  }
  ZeroSmStep agreeMin(int value, int &lowest, std::string &error) override {
    if ((status =
             ctx.zeroSmAgreeMin(group.comm, site.stream, value, lowest, error)))
      return ZeroSmStep::Fatal;
    return error.empty() ? ZeroSmStep::Done : ZeroSmStep::Failed;
  }
  ZeroSmStep split(std::string &error) override {
    // Collective over the group, as every split: every rank gets here at
    // the same all-gather.
    ncclConfig_t config = zeroSmSplitConfig(ctx.options);
    overlap_status timedOut = OVERLAP_SUCCESS;
    ncclResult_t r =
        ctx.boundedSplit(site, &group, 0, group.rank, &made, &config, timedOut);
    if ((status = timedOut))
      return ZeroSmStep::Fatal;
    if (r != ncclSuccess || !made) {
      error = r != ncclSuccess ? describe(r) : "no communicator was made";
      return ZeroSmStep::Failed;
    }
    return ZeroSmStep::Done;
  }
  void keepSplit() override { z.comm = made; }
  void strandSplit() override {
    // Neither aborted (the child shares the group's abort flag when the
    // group was made with splitShare, as Overlap makes them: the group and
    // the world would go with it) nor destroyed (its peers made none).
    made = nullptr;
  }
  ZeroSmStep drainOldWindow() override {
    if ((status = ctx.drain({site.stream}, "overlap_all_gather")))
      return ZeroSmStep::Fatal;
    return ZeroSmStep::Done;
  }
  ZeroSmStep deregisterOldWindow(std::string &error) override {
    if (ncclResult_t r = ncclCommWindowDeregister(
            z.comm, static_cast<ncclWindow_t>(z.window))) {
      error = describe(r);
      return ZeroSmStep::Failed;
    }
    z.window = nullptr;
    return ZeroSmStep::Done;
  }
  void freeOldBuffer() override {
    (void)ncclMemFree(z.buffer);
    z.buffer = nullptr;
    z.bytes = 0;
  }
  ZeroSmStep allocate(size_t bytes, std::string &error) override {
    allocated = bytes;
    if (ncclResult_t r = ncclMemAlloc(&buffer, bytes)) {
      buffer = nullptr;
      error = describe(r);
      return ZeroSmStep::Failed;
    }
    return ZeroSmStep::Done;
  }
  void freeAllocation() override {
    if (buffer)
      (void)ncclMemFree(buffer);
    buffer = nullptr;
  }
  ZeroSmStep registerWindow(std::string &error) override {
    z.buffer = buffer;
    buffer = nullptr;
    ncclWindow_t window = nullptr;
    ncclResult_t r = ncclCommWindowRegister(z.comm, z.buffer, allocated,
                                            &window, NCCL_WIN_COLL_SYMMETRIC);
    z.window = window;
    if (r != ncclSuccess || !window) {
      error = r != ncclSuccess ? describe(r) : "no window was made";
      return ZeroSmStep::Failed;
    }
    return ZeroSmStep::Done;
  }
  void keepWindow(size_t bytes) override { z.bytes = bytes; }
  void markBroken() override { z.broken = true; }
  void disable(const std::string &reason) override {
    ctx.zeroSmDisable(group, reason);
  }

private:
  CudaContext &ctx;
  const Site &site;
  CudaGroup &group;
  ZeroSmStream &z;
  ncclComm_t made = nullptr;
  void *buffer = nullptr; // allocated, not yet in the window
  size_t allocated = 0;
  overlap_status status = OVERLAP_SUCCESS;
};
#endif

overlap_status CudaContext::zeroSmAllGather(const Site &site, CudaGroup &group,
                                            const runtime::CollectiveArgs &args,
                                            ncclDataType_t type,
                                            bool &handled) {
  handled = false;
  if (!options.zeroSmAllGather || !zeroSmAppliesTo(args.kind) ||
      !group.zeroSmFallback.empty() || args.count <= 0)
    return OVERLAP_SUCCESS;
#if !OVERLAP_HAVE_ZERO_SM
  zeroSmDisable(group, zeroSmPrerequisiteProblem(NCCL_VERSION_CODE, 0, 0) +
                           "; plain ncclAllGather");
  (void)site, (void)type;
  return OVERLAP_SUCCESS;
#else
  const int s = site.stream;
  ZeroSmStream &z = group.zeroSm[s];
  ZeroSmNccl steps(*this, site, group, z);
  if (!z.comm) {
    ZeroSmSetUp made = zeroSmSetUpCommunicator(steps);
    if (made != ZeroSmSetUp::Ready)
      return made == ZeroSmSetUp::Fatal ? steps.fatal() : OVERLAP_SUCCESS;
  }
  const size_t elem = overlap_dtype_size(args.dtype);
  const size_t count = size_t(args.count);
  const size_t need = zeroSmWindowBytes(group.size, count, elem);
  if (!need) {
    // The same on every rank: NCCL requires equal counts everywhere.
    zeroSmDisable(group, zeroSmFallbackReason("the window's size",
                                              "it overflows size_t"));
    return OVERLAP_SUCCESS;
  }
  if (need > z.bytes) {
    ZeroSmSetUp grown = zeroSmSetUpWindow(steps, need, z.buffer != nullptr);
    if (grown != ZeroSmSetUp::Ready)
      return grown == ZeroSmSetUp::Fatal ? steps.fatal() : OVERLAP_SUCCESS;
  }
  cudaStream_t stream = streams_[s];
  const size_t slotBytes = count * elem;
  char *base = static_cast<char *>(z.buffer);
  char *slot = base + size_t(group.rank) * slotBytes;
  // From here on a failure is the run's: the path is set up everywhere.
  handled = true;
  if (overlap_status st =
          check(site, "cudaMemcpyAsync (into the window)",
                cudaMemcpyAsync(slot, args.src, slotBytes,
                                cudaMemcpyDeviceToDevice, stream)))
    return st;
  if (overlap_status st =
          check(site, "ncclAllGather (zero-CTA)",
                ncclAllGather(slot, base, count, type, z.comm, stream)))
    return st;
  return check(site, "cudaMemcpyAsync (out of the window)",
               cudaMemcpyAsync(args.dst, base, slotBytes * size_t(group.size),
                               cudaMemcpyDeviceToDevice, stream));
#endif
}

void CudaContext::zeroSmRelease(CudaGroup &group, bool abort, bool freeMemory) {
  for (auto &entry : group.zeroSm) {
    ZeroSmStream &z = entry.second;
    switch (zeroSmReleaseAction(abort, z.broken)) {
    case ZeroSmRelease::Strand:
      // Broken in a context that goes on: an abort would abort the group
      // and the world (splitShare: one abort flag), a deregistration would
      // wait for ranks that never registered. Left as it is.
      continue;
    case ZeroSmRelease::Abort:
      if (z.comm)
        (void)ncclCommAbort(z.comm);
      break;
    case ZeroSmRelease::Destroy:
#if OVERLAP_HAVE_ZERO_SM
      // The window before its communicator, the memory after both.
      if (z.window && z.comm)
        (void)ncclCommWindowDeregister(z.comm,
                                       static_cast<ncclWindow_t>(z.window));
#endif
      if (z.comm)
        (void)ncclCommDestroy(z.comm);
      break;
    }
    if (z.buffer && freeMemory)
      (void)ncclMemFree(z.buffer);
  }
  group.zeroSm.clear();
}

extern "C" int overlap_cuda_zero_sm_all_gather(overlap_context *ctx) {
  CudaContext *cuda = asCuda(ctx);
  return cuda ? (cuda->zeroSmActive() ? 1 : 0) : -1;
}
