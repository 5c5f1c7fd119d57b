//===- CudaContext.cpp - Context, streams, memory, creation -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA context's life: creation from a caller's communicator and
// streams or by bootstrap, bounded synchronization that turns a stuck
// stream into an error naming the wait or the stream, memory, copies, host
// callbacks and the pack kernel, and the overlap_cuda_* entry points.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

using namespace overlap;
using namespace overlap::cuda;
using runtime::Site;

//===----------------------------------------------------------------------===//
// Error text and options
//===----------------------------------------------------------------------===//

std::string overlap::cuda::describe(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" +
         cudaGetErrorString(error) + ")";
}

std::string overlap::cuda::describe(CUresult result) {
  const char *name = nullptr, *text = nullptr;
  driver().cuGetErrorName(result, &name);
  driver().cuGetErrorString(result, &text);
  std::string out = name ? name : "CUresult " + std::to_string(result);
  if (text)
    out += std::string(" (") + text + ")";
  if (!driverError().empty())
    out += " (" + driverError() + ")";
  return out;
}

std::string overlap::cuda::describe(cublasStatus_t status) {
  return std::string(cublasLtGetStatusName(status)) + " (" +
         cublasLtGetStatusString(status) + ")";
}

std::string overlap::cuda::describe(ncclResult_t result) {
  return std::string(ncclGetErrorString(result)) + " (ncclResult " +
         std::to_string(int(result)) + ")";
}

//===----------------------------------------------------------------------===//
// Registry of live CUDA contexts (no RTTI in this build)
//===----------------------------------------------------------------------===//

namespace {
std::mutex registryMutex;
std::set<CudaContext *> &registry() {
  static std::set<CudaContext *> contexts;
  return contexts;
}
thread_local std::string createError;
thread_local std::string deviceCountError;
} // namespace

bool overlap::cuda::recordLaunchFailure(cudaStream_t stream,
                                        const std::string &kernel,
                                        const std::string &error) {
  CudaContext *owner = nullptr;
  int index = -1;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    for (CudaContext *ctx : registry())
      if ((index = ctx->streamIndex(stream)) >= 0) {
        owner = ctx;
        break;
      }
  }
  if (!owner)
    return false;
  owner->launchFailed(kernel, error, index);
  return true;
}

CudaContext *overlap::cuda::asCuda(overlap_context *ctx) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto *cuda = static_cast<CudaContext *>(ctx);
  return ctx && registry().count(cuda) ? cuda : nullptr;
}

//===----------------------------------------------------------------------===//
// Construction and shutdown
//===----------------------------------------------------------------------===//

/// With CUDA_DEVICE_MAX_CONNECTIONS=1 every stream of the device shares one
/// hardware queue, so a collective queued behind a GEMM waits for it: the
/// overlap disappears without any error. Said once per process.
static void warnAboutConnections() {
  static std::once_flag once;
  const char *value = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (!value || std::string(value) != "1")
    return;
  std::call_once(once, [] {
    std::fprintf(stderr,
                 "overlap: warning: CUDA_DEVICE_MAX_CONNECTIONS=1 puts every "
                 "stream in one hardware queue; GEMMs and collectives will "
                 "not overlap (unset it, or set it to 8 or more)\n");
  });
}

CudaContext::CudaContext(int rank, int size, int device, const Options &options)
    : overlap_context(rank, size, options.numStreams), device(device),
      options(options) {
  world_.rank = rank;
  world_.size = size;
}

CudaContext::~CudaContext() { shutdown(); }

overlap_status CudaContext::failCall(const Site &site, const char *api,
                                     const std::string &error,
                                     overlap_status status) {
  return fail(status, runtime::formatError(
                          site, rank, std::string(api) + " failed: " + error));
}

overlap_status CudaContext::init(ncclComm_t world, bool ownWorld,
                                 cudaStream_t compute, cudaStream_t comm,
                                 std::string &error) {
  Site site = Site::thread("overlap_cuda_context_create");
  world_.comm = world;
  world_.owned = ownWorld;
  auto failed = [&](overlap_status s) {
    error = lastError();
    return s;
  };
  if (overlap_status s = check(site, "cudaSetDevice", cudaSetDevice(device)))
    return failed(s);
  warnAboutConnections();
  if (overlap_status s =
          check(site, "cudaDeviceGetAttribute",
                cudaDeviceGetAttribute(&smCount_,
                                       cudaDevAttrMultiProcessorCount, device)))
    return failed(s);
  if (options.commSms >= smCount_) {
    error = "comm_sms is " + std::to_string(options.commSms) + " but device " +
            std::to_string(device) + " has only " + std::to_string(smCount_) +
            " SMs (0 reserves none)";
    return fail(OVERLAP_ERROR_INVALID_ARGUMENT, error);
  }
  gemmSms_ = gemmSmTarget(smCount_, options.commSms);
  int least = 0, greatest = 0;
  if (overlap_status s =
          check(site, "cudaDeviceGetStreamPriorityRange",
                cudaDeviceGetStreamPriorityRange(&least, &greatest)))
    return failed(s);
  computePriority_ = least;
  commPriority_ = options.commPriority ? greatest : least;
  for (int i = 0; i < numStreams; ++i) {
    cudaStream_t given = i == 0 ? compute : i == 1 ? comm : nullptr;
    if (given) {
      streams_.push_back(given);
      ownedStreams_.push_back(false);
      continue;
    }
    // The comm stream at the higher priority: a collective's CTAs are then
    // scheduled ahead of GEMM CTAs still queued (running ones keep their
    // SMs).
    cudaStream_t made = nullptr;
    if (overlap_status s =
            check(site, "cudaStreamCreateWithPriority",
                  cudaStreamCreateWithPriority(&made, cudaStreamNonBlocking,
                                               i == 1 ? commPriority_
                                                      : computePriority_)))
      return failed(s);
    streams_.push_back(made);
    ownedStreams_.push_back(true);
  }
  if (comm) // a stream handed in keeps its priority: report what it has
    (void)cudaStreamGetPriority(comm, &commPriority_);
  if (compute)
    (void)cudaStreamGetPriority(compute, &computePriority_);
  if (overlap_status s =
          check(site, "cudaStreamCreateWithFlags (control)",
                cudaStreamCreateWithFlags(&control_, cudaStreamNonBlocking)))
    return failed(s);
  if (overlap_status s =
          check(site, "cudaEventCreateWithFlags",
                cudaEventCreateWithFlags(&zeroed_, cudaEventDisableTiming)))
    return failed(s);
  for (int i = 0; i < numStreams; ++i) {
    everyStream_.push_back(i);
    cudaEvent_t event = nullptr;
    if (overlap_status s =
            check(site, "cudaEventCreateWithFlags",
                  cudaEventCreateWithFlags(&event, cudaEventDisableTiming)))
      return failed(s);
    joinEvents_.push_back(event);
  }
  if (options.streamOrderedAlloc) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    if (overlap_status s =
            check(site, "cudaMemPoolCreate", cudaMemPoolCreate(&pool_, &props)))
      return failed(s);
    // Keep freed memory in the pool across synchronizes: the next call of a
    // compiled program gets its buffers back without asking the driver.
    uint64_t keep = UINT64_MAX;
    if (overlap_status s =
            check(site, "cudaMemPoolSetAttribute",
                  cudaMemPoolSetAttribute(
                      pool_, cudaMemPoolAttrReleaseThreshold, &keep)))
      return failed(s);
  }
  pending_.resize(numStreams);
  workspaces_.assign(numStreams, nullptr);
  if (overlap_status s = check(site, "cublasLtCreate", cublasLtCreate(&lt_)))
    return failed(s);
  void *spin = nullptr;
  if (overlap_status s =
          check(site, "cudaHostAlloc",
                cudaHostAlloc(&spin, sizeof(SpinError), cudaHostAllocMapped)))
    return failed(s);
  spinHost_ = static_cast<SpinError *>(spin);
  std::memset(spinHost_, 0, sizeof(SpinError));
  void *spinDevice = nullptr;
  if (overlap_status s =
          check(site, "cudaHostGetDevicePointer",
                cudaHostGetDevicePointer(&spinDevice, spinHost_, 0)))
    return failed(s);
  spinDevice_ = static_cast<SpinError *>(spinDevice);
  void *scratch = nullptr;
  if (overlap_status s =
          check(site, "cudaMalloc", cudaMalloc(&scratch, sizeof(int))))
    return failed(s);
  barrierScratch_ = static_cast<int *>(scratch);
  if (overlap_status s =
          zeroForStreams(site, barrierScratch_, sizeof(int), "barrier scratch"))
    return failed(s);
  ready_ = true;
  return OVERLAP_SUCCESS;
}

/// Teardown of one handle or allocation: `destroy` it if set (errors are
/// ignored, as everywhere in the teardown) and clear it.
template <typename Handle, typename Destroy>
static void destroyIfSet(Handle &handle, Destroy destroy) {
  if (handle)
    (void)destroy(handle);
  handle = nullptr;
}

static void destroyComm(ncclComm_t comm, bool abort) {
  if (!comm)
    return;
  // Errors here have nowhere to go (the context is being torn down).
  if (abort)
    (void)ncclCommAbort(comm);
  else
    (void)ncclCommDestroy(comm);
}

overlap_status CudaContext::shutdown() {
  if (shutDown_)
    return status();
  shutDown_ = true;
  bool drained = true;
  if (ready_) {
    overlap_status s = synchronize(-1);
    if (s != OVERLAP_SUCCESS) {
      // The waits were released by onFail; give the streams another
      // timeout, with the communicators we own aborted so that a
      // collective whose peers are gone returns.
      for (CudaGroup *g : allGroups())
        for (auto &entry : g->zeroSm)
          if (entry.second.comm)
            (void)ncclCommAbort(entry.second.comm), entry.second.comm = nullptr;
      for (auto &group : groups_)
        if (group->comm)
          (void)ncclCommAbort(group->comm), group->comm = nullptr;
      if (world_.owned && world_.comm)
        (void)ncclCommAbort(world_.comm), world_.comm = nullptr;
      std::vector<int> all;
      for (int i = 0; i < numStreams; ++i)
        all.push_back(i);
      auto deadline = runtime::deadlineAfter(std::chrono::steady_clock::now(),
                                             options.waitTimeoutMs);
      for (;;) {
        bool busy = false;
        for (int i : all)
          busy |= cudaStreamQuery(streams_[i]) == cudaErrorNotReady;
        if (!busy)
          break;
        if (std::chrono::steady_clock::now() >= deadline) {
          drained = false;
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
  bool failed = status() != OVERLAP_SUCCESS;
  if (commsStranded_)
    fprintf(stderr,
            "overlap: rank %d: the NCCL communicators were abandoned to a "
            "split that did not return; they are not destroyed (leaked)\n",
            rank);
  // Zero-SM windows before the communicators they were split from; their
  // memory only if no stream may still touch it.
  for (CudaGroup *g : allGroups())
    zeroSmRelease(*g, failed, drained);
  for (auto &group : groups_)
    destroyComm(group->comm, failed);
  groups_.clear();
  if (world_.owned)
    destroyComm(world_.comm, failed);
  world_.comm = nullptr;
  if (!drained) {
    // Freeing memory that a stuck stream may still touch would be worse
    // than leaking it (cudaFree also waits for the device).
    fprintf(stderr,
            "overlap: rank %d: streams still busy at context destruction; "
            "leaking the context's device memory\n",
            rank);
    return status();
  }
  for (auto &sigs : signals_)
    releaseSignals(*sigs);
  signals_.clear();
  gemms_.clear();
  for (cudaEvent_t event : joinEvents_)
    (void)cudaEventDestroy(event);
  joinEvents_.clear();
  destroyIfSet(zeroed_, cudaEventDestroy);
  destroyIfSet(pool_, cudaMemPoolDestroy);
  destroyIfSet(control_, cudaStreamDestroy);
  for (void *ws : workspaces_)
    if (ws)
      (void)cudaFree(ws);
  workspaces_.clear();
  destroyIfSet(lt_, cublasLtDestroy);
  destroyIfSet(spinHost_, cudaFreeHost);
  spinDevice_ = nullptr;
  destroyIfSet(barrierScratch_, cudaFree);
  destroyIfSet(zeroSmFlag_, cudaFree);
  destroyIfSet(zeroSmHostFlag_, cudaFreeHost);
  for (size_t i = 0; i < streams_.size(); ++i)
    if (ownedStreams_[i])
      (void)cudaStreamDestroy(streams_[i]);
  streams_.clear();
  return status();
}

//===----------------------------------------------------------------------===//
// Synchronization with a deadline
//===----------------------------------------------------------------------===//

overlap_status CudaContext::checkSpinError() {
  if (!spinHost_)
    return OVERLAP_SUCCESS;
  volatile SpinError *e = spinHost_;
  if (e->failed != 2)
    return OVERLAP_SUCCESS;
  return fail(
      OVERLAP_ERROR_TIMEOUT,
      runtime::formatError(
          Site::flag("overlap_wait", e->stream, e->flag), rank,
          "not signalled within " + std::to_string(options.waitTimeoutMs) +
              " ms (spin wait gave up; epoch " + std::to_string(e->epoch) +
              ", flag at " + std::to_string(e->seen) + ")"));
}

bool CudaContext::findStuckWait(int stream, std::string &text, int32_t &flag) {
  for (const PendingWait &w : pending_[stream]) {
    uint32_t seen = readFlag(w.sigs, w.index);
    if (int32_t(seen - w.epoch) < 0) {
      flag = w.index;
      text = "not signalled within " + std::to_string(options.waitTimeoutMs) +
             " ms (epoch " + std::to_string(w.epoch) + ", flag at " +
             std::to_string(seen) + ")";
      return true;
    }
  }
  return false;
}

void CudaContext::releasePendingWaits() {
  for (auto &waits : pending_)
    for (const PendingWait &w : waits)
      if (int32_t(readFlag(w.sigs, w.index) - w.epoch) < 0)
        writeFlag(w.sigs, w.index, w.epoch);
}

void CudaContext::onFail() {
  // A stream blocked on a flag that will never be raised would hang the
  // context's destruction: raise the flags from the host instead. The
  // results are wrong, but the context has failed and says so.
  releasePendingWaits();
}

overlap_status CudaContext::drain(const std::vector<int> &which,
                                  const char *call) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = runtime::deadlineAfter(start, options.waitTimeoutMs);
  for (;;) {
    bool busy = false;
    for (int s : which) {
      cudaError_t e = cudaStreamQuery(streams_[s]);
      if (e == cudaErrorNotReady)
        busy = true;
      else if (e != cudaSuccess)
        return failCall(Site::tile(call, s, -1), "cudaStreamQuery",
                        describe(e));
    }
    if (overlap_status s = checkSpinError())
      return s;
    std::vector<ncclComm_t> comms;
    for (CudaGroup *g : allGroups()) {
      comms.push_back(g->comm);
      for (const auto &entry : g->zeroSm) // zero-SM all-gathers
        comms.push_back(entry.second.comm);
    }
    for (ncclComm_t comm : comms) {
      ncclResult_t async = ncclSuccess;
      if (!comm)
        continue;
      ncclResult_t r = ncclCommGetAsyncError(comm, &async);
      if (r != ncclSuccess)
        return failCall(Site::thread(call), "ncclCommGetAsyncError",
                        describe(r));
      if (async != ncclSuccess && async != ncclInProgress)
        return failCall(Site::thread(call), "NCCL (asynchronous error)",
                        describe(async));
    }
    if (!busy)
      break;
    auto now = Clock::now();
    if (now >= deadline) {
      for (int s : which) {
        if (cudaStreamQuery(streams_[s]) != cudaErrorNotReady)
          continue;
        std::string text;
        int32_t flag = -1;
        if (findStuckWait(s, text, flag))
          return fail(OVERLAP_ERROR_TIMEOUT,
                      runtime::formatError(Site::flag("overlap_wait", s, flag),
                                           rank, text));
      }
      for (int s : which)
        if (cudaStreamQuery(streams_[s]) == cudaErrorNotReady)
          return fail(OVERLAP_ERROR_TIMEOUT,
                      runtime::formatError(
                          Site::tile(call, s, -1), rank,
                          "the stream did not drain within " +
                              std::to_string(options.waitTimeoutMs) +
                              " ms (a collective whose peers never joined, "
                              "or work longer than the wait timeout)"));
      break;
    }
    // Spin briefly for short work, then back off to spare the CPU.
    if (now - start > std::chrono::milliseconds(1))
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    else
      std::this_thread::yield();
  }
  for (int s : which)
    pending_[s].clear();
  return status();
}

overlap_status CudaContext::synchronize(int stream) {
  std::vector<int> which;
  if (stream >= 0)
    which.push_back(stream);
  else
    for (int i = 0; i < numStreams; ++i)
      which.push_back(i);
  overlap_status s = drain(which, stream >= 0 ? "overlap_stream_synchronize"
                                              : "overlap_context_synchronize");
  return s ? s : status();
}

//===----------------------------------------------------------------------===//
// Memory, copies, host functions, pack
//===----------------------------------------------------------------------===//

overlap_status CudaContext::alloc(size_t bytes, void **ptr) {
  cudaError_t e = cudaMalloc(ptr, bytes);
  if (e == cudaSuccess)
    return OVERLAP_SUCCESS;
  *ptr = nullptr;
  (void)cudaGetLastError(); // an allocation failure is not sticky
  return failCall(Site::thread("overlap_alloc"),
                  ("cudaMalloc(" + std::to_string(bytes) + " bytes)").c_str(),
                  describe(e),
                  e == cudaErrorMemoryAllocation ? OVERLAP_ERROR_OUT_OF_MEMORY
                                                 : OVERLAP_ERROR_BACKEND);
}

void CudaContext::free(void *ptr) {
  check(Site::thread("overlap_free"), "cudaFree", cudaFree(ptr));
}

overlap_status CudaContext::order(const std::vector<int> &from,
                                  const std::vector<int> &to,
                                  const char *call) {
  // A stream waits for no event of its own, so a lone target records none.
  for (int f : from)
    if (!(to.size() == 1 && to[0] == f))
      if (overlap_status s =
              check(Site::tile(call, f, -1), "cudaEventRecord",
                    cudaEventRecord(joinEvents_[f], streams_[f])))
        return s;
  for (int t : to)
    for (int f : from)
      if (f != t)
        if (overlap_status s =
                check(Site::tile(call, t, -1), "cudaStreamWaitEvent",
                      cudaStreamWaitEvent(streams_[t], joinEvents_[f], 0)))
          return s;
  return status();
}

overlap_status CudaContext::zeroForStreams(const Site &site, void *ptr,
                                           size_t bytes, const char *what) {
  // A synchronous cudaMemset runs on the legacy stream, which the
  // context's non-blocking streams do not wait for: a signal could land
  // before the zeroing and be wiped by it. The control stream waits for
  // none of the others, so work stuck on them cannot hold the zeroing (or
  // the host's flag reads behind it) back.
  const std::string memset = std::string("cudaMemsetAsync (") + what + ")";
  if (overlap_status s =
          check(site, memset.c_str(), cudaMemsetAsync(ptr, 0, bytes, control_)))
    return s;
  if (overlap_status s =
          check(site, "cudaEventRecord", cudaEventRecord(zeroed_, control_)))
    return s;
  for (cudaStream_t stream : streams_)
    if (overlap_status s = check(site, "cudaStreamWaitEvent",
                                 cudaStreamWaitEvent(stream, zeroed_, 0)))
      return s;
  return OVERLAP_SUCCESS;
}

overlap_status CudaContext::joinStreams() {
  return order(everyStream_, everyStream_, "overlap_streams_join");
}

overlap_status CudaContext::allocAsync(int s, size_t bytes, void **ptr) {
  if (!pool_)
    return alloc(bytes, ptr);
  const int on = s < 0 ? 0 : s;
  cudaError_t e = cudaMallocFromPoolAsync(ptr, bytes, pool_, streams_[on]);
  if (e != cudaSuccess) {
    *ptr = nullptr;
    (void)cudaGetLastError();
    return failCall(
        Site::tile("overlap_alloc_async", s, -1),
        ("cudaMallocFromPoolAsync(" + std::to_string(bytes) + " bytes)")
            .c_str(),
        describe(e),
        e == cudaErrorMemoryAllocation ? OVERLAP_ERROR_OUT_OF_MEMORY
                                       : OVERLAP_ERROR_BACKEND);
  }
  if (s >= 0)
    return OVERLAP_SUCCESS;
  // Usable on every stream: the others wait for the allocation.
  return order({0}, everyStream_, "overlap_alloc_async");
}

overlap_status CudaContext::freeAsync(int s, void *ptr) {
  if (!pool_) {
    free(ptr); // cudaFree waits for the device
    return status();
  }
  const int on = s < 0 ? 0 : s;
  // After every stream's work so far: stream 0 waits for the others.
  if (s < 0)
    if (overlap_status st = order(everyStream_, {0}, "overlap_free_async"))
      return st;
  return check(Site::tile("overlap_free_async", s, -1), "cudaFreeAsync",
               cudaFreeAsync(ptr, streams_[on]));
}

int CudaContext::streamIndex(cudaStream_t s) const {
  for (size_t i = 0; i < streams_.size(); ++i)
    if (streams_[i] == s)
      return int(i);
  return -1;
}

void CudaContext::launchFailed(const std::string &kernel,
                               const std::string &error, int s) {
  failCall(Site::tile("mgpuLaunchKernel", s, -1),
           ("cuLaunchKernel of kernel '" + kernel + "'").c_str(), error);
}

std::string CudaContext::describeSettings() const {
  int driver = 0, runtime = 0, nccl = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess)
    driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess)
    runtime = 0;
  if (ncclGetVersion(&nccl) != ncclSuccess)
    nccl = 0;
  return describeOptions(options, smCount_, gemmSms_, commPriority_,
                         computePriority_) +
         "; " +
         describeVersions(driver, runtime, nccl, NCCL_VERSION_CODE,
                          static_cast<long long>(cublasLtGetVersion())) +
         zeroSmReport();
}

overlap_status CudaContext::copy(const Site &site, void *dst, const void *src,
                                 size_t bytes) {
  return check(
      site, "cudaMemcpyAsync",
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream(site.stream)));
}

overlap_status CudaContext::fill(const Site &site, void *dst, uint8_t value,
                                 size_t bytes) {
  return check(site, "cudaMemsetAsync",
               cudaMemsetAsync(dst, value, bytes, stream(site.stream)));
}

// The NCCL calls between the two (overlap_shift's sends and receives to
// several peers) become one launch at ncclGroupEnd, enqueued on the
// streams after everything enqueued before it (the waits among them).
// Compiled, not run: no GPU yet.
overlap_status CudaContext::fuseCalls(const Site &site, bool begin) {
  if (overlap_status s = status())
    return s;
  return begin ? check(site, "ncclGroupStart", ncclGroupStart())
               : check(site, "ncclGroupEnd", ncclGroupEnd());
}

overlap_status CudaContext::hostFunc(const Site &site, void (*fn)(void *),
                                     void *user) {
  return check(site, "cudaLaunchHostFunc",
               cudaLaunchHostFunc(stream(site.stream), fn, user));
}

overlap_status CudaContext::pack(const Site &site,
                                 const runtime::PackArgs &args) {
  return check(site,
               args.unpack ? "unpack kernel launch" : "pack kernel launch",
               launchPack(args, stream(site.stream)));
}

//===----------------------------------------------------------------------===//
// C entry points
//===----------------------------------------------------------------------===//

overlap_status overlap::cuda::createFailed(overlap_status status,
                                           const std::string &text) {
  createError = text;
  return status;
}

overlap_status overlap::cuda::finishCreate(ncclComm_t comm, bool ownComm,
                                           int device, cudaStream_t compute,
                                           cudaStream_t commStream,
                                           const Options &options,
                                           overlap_context **ctx) {
  int rank = 0, size = 0;
  ncclResult_t r = ncclCommUserRank(comm, &rank);
  if (r == ncclSuccess)
    r = ncclCommCount(comm, &size);
  if (r != ncclSuccess) {
    if (ownComm)
      (void)ncclCommDestroy(comm);
    return createFailed(OVERLAP_ERROR_BACKEND,
                        "overlap_cuda_context_create: ncclCommUserRank/Count "
                        "failed: " +
                            describe(r));
  }
  auto *cuda = new CudaContext(rank, size, device, options);
  std::string error;
  if (overlap_status s =
          cuda->init(comm, ownComm, compute, commStream, error)) {
    delete cuda; // shutdown destroys what init made, and the owned comm
    return createFailed(s, error);
  }
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    registry().insert(cuda);
  }
  *ctx = cuda;
  createError.clear();
  return OVERLAP_SUCCESS;
}

extern "C" {

int overlap_cuda_device_count(const char **error) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  deviceCountError =
      e == cudaSuccess ? "" : "cudaGetDeviceCount failed: " + describe(e);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  if (error)
    *error = deviceCountError.c_str();
  return count;
}

const char *overlap_cuda_create_error(void) { return createError.c_str(); }

overlap_status overlap_cuda_context_create(void *nccl_comm,
                                           void *compute_stream,
                                           void *comm_stream,
                                           const overlap_cuda_options *opts,
                                           overlap_context **ctx) {
  if (!ctx)
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT,
                        "overlap_cuda_context_create: null result pointer");
  *ctx = nullptr;
  if (!nccl_comm)
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT,
                        "overlap_cuda_context_create: null communicator");
  Options options;
  std::string error;
  if (!resolveOptions(opts, options, error))
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT,
                        "overlap_cuda_context_create: " + error);
  auto comm = static_cast<ncclComm_t>(nccl_comm);
  int device = -1;
  if (ncclResult_t r = ncclCommCuDevice(comm, &device))
    return createFailed(OVERLAP_ERROR_BACKEND,
                        "overlap_cuda_context_create: ncclCommCuDevice "
                        "failed: " +
                            describe(r));
  return finishCreate(comm, false, device,
                      static_cast<cudaStream_t>(compute_stream),
                      static_cast<cudaStream_t>(comm_stream), options, ctx);
}

overlap_status
overlap_cuda_unique_id(uint8_t id[OVERLAP_CUDA_UNIQUE_ID_BYTES]) {
  static_assert(sizeof(ncclUniqueId) == OVERLAP_CUDA_UNIQUE_ID_BYTES,
                "NCCL_UNIQUE_ID_BYTES changed");
  if (!id)
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT,
                        "overlap_cuda_unique_id: null id");
  ncclUniqueId uid;
  if (ncclResult_t r = ncclGetUniqueId(&uid))
    return createFailed(OVERLAP_ERROR_BACKEND,
                        "overlap_cuda_unique_id: ncclGetUniqueId failed: " +
                            describe(r));
  std::memcpy(id, &uid, sizeof(uid));
  return OVERLAP_SUCCESS;
}

overlap_status overlap_cuda_context_create_rank(
    const uint8_t id[OVERLAP_CUDA_UNIQUE_ID_BYTES], int ranks, int rank,
    int device, const overlap_cuda_options *opts, overlap_context **ctx) {
  // A framework that hands in its own id may know better: unbounded unless
  // OVERLAP_INIT_TIMEOUT_MS says otherwise.
  return createRankContext(id, ranks, rank, device, opts, initTimeoutMs(0),
                           ctx);
}

overlap_status
overlap_cuda_context_create_single(int device, const overlap_cuda_options *opts,
                                   overlap_context **ctx) {
  const char *call = "overlap_cuda_context_create_single: ";
  if (!ctx)
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT,
                        std::string(call) + "null result pointer");
  *ctx = nullptr;
  Options options;
  std::string error;
  if (!resolveOptions(opts, options, error))
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT, call + error);
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count)) {
    (void)cudaGetLastError();
    return createFailed(OVERLAP_ERROR_BACKEND,
                        call + std::string("cudaGetDeviceCount failed: ") +
                            describe(e));
  }
  if (device < 0 || device >= count)
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT,
                        call + std::string("no device ") +
                            std::to_string(device) + " (" +
                            std::to_string(count) + " visible)");
  if (cudaError_t e = cudaSetDevice(device))
    return createFailed(OVERLAP_ERROR_BACKEND,
                        call + std::string("cudaSetDevice failed: ") +
                            describe(e));
  ncclComm_t comm = nullptr;
  ncclUniqueId uid;
  if (ncclResult_t r = ncclGetUniqueId(&uid))
    return createFailed(OVERLAP_ERROR_BACKEND,
                        call + std::string("ncclGetUniqueId failed: ") +
                            describe(r));
  ncclConfig_t config = ncclConfigFor(options);
  if (ncclResult_t r = ncclCommInitRankConfig(&comm, 1, uid, 0, &config))
    return createFailed(OVERLAP_ERROR_BACKEND,
                        call + std::string("ncclCommInitRankConfig failed: ") +
                            describe(r));
  return finishCreate(comm, true, device, nullptr, nullptr, options, ctx);
}

overlap_status overlap_cuda_context_destroy(overlap_context *ctx) {
  CudaContext *cuda = asCuda(ctx);
  if (!cuda)
    return ctx ? OVERLAP_ERROR_INVALID_ARGUMENT : OVERLAP_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    registry().erase(cuda);
  }
  overlap_status s = cuda->shutdown();
  delete cuda;
  return s;
}

void *overlap_cuda_stream(overlap_context *ctx, int32_t stream) {
  CudaContext *cuda = asCuda(ctx);
  if (!cuda || stream < 0 || stream >= cuda->numStreams)
    return nullptr;
  return cuda->stream(stream);
}

void *overlap_cuda_nccl_comm(overlap_context *ctx, overlap_group *group) {
  CudaContext *cuda = asCuda(ctx);
  if (!cuda)
    return nullptr;
  return cuda->commOf(group ? group : cuda->worldGroup());
}

int overlap_cuda_device(overlap_context *ctx) {
  CudaContext *cuda = asCuda(ctx);
  return cuda ? cuda->device : -1;
}

overlap_status overlap_cuda_make_current(overlap_context *ctx) {
  CudaContext *cuda = asCuda(ctx);
  if (!cuda)
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  return cuda->check(Site::thread("overlap_cuda_make_current"), "cudaSetDevice",
                     cudaSetDevice(cuda->device));
}

const char *overlap_cuda_describe(overlap_context *ctx) {
  static thread_local std::string text;
  CudaContext *cuda = asCuda(ctx);
  text = cuda ? cuda->describeSettings() : "";
  return text.c_str();
}

int overlap_cuda_comm_sms(overlap_context *ctx) {
  CudaContext *cuda = asCuda(ctx);
  return cuda ? cuda->options.commSms : -1;
}

const char *overlap_cuda_gemm_report(overlap_context *ctx) {
  static thread_local std::string text;
  CudaContext *cuda = asCuda(ctx);
  text = cuda ? cuda->gemmReport() : "";
  return text.c_str();
}

} // extern "C"
