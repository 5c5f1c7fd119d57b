//===- Signals.cpp - Epoch-counted signal/wait between streams --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Flags are 32-bit words that never go back to 0: a signal writes the epoch
// it captured, a wait holds its stream until the flag has reached that
// epoch (cyclic comparison, so the counter may wrap). They live in device
// memory by default, so that a memop wait polls device memory rather than
// crossing PCIe; the device_flags option off puts them in device-mapped
// host memory. Memop mode uses the stream front end (cuStreamWriteValue32
// / cuStreamWaitValue32 GEQ) and no SM; spin mode uses one-thread kernels;
// event mode uses CUDA events. The host reads the flags (to say which wait
// is stuck) and writes them (to release the waits of a failed context):
// directly when they are mapped, else by copies on the context's control
// stream, which waits for none of the others.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

using namespace overlap;
using namespace overlap::cuda;
using runtime::Site;

overlap_status CudaContext::createSignals(int32_t n, overlap_signals **sigs) {
  Site site = Site::thread("overlap_signals_create");
  auto set = std::make_unique<CudaSignals>();
  set->count = n;
  set->epoch = 1;
  const size_t bytes = sizeof(uint32_t) * size_t(n);
  if (options.deviceFlags) {
    void *flags = nullptr;
    if (overlap_status s =
            check(site, "cudaMalloc (flags)", cudaMalloc(&flags, bytes)))
      return s;
    set->deviceFlags = static_cast<uint32_t *>(flags);
    void *stage = nullptr;
    if (overlap_status s =
            check(site, "cudaHostAlloc (flag staging)",
                  cudaHostAlloc(&stage, 2 * bytes, cudaHostAllocDefault))) {
      releaseSignals(*set);
      return s;
    }
    set->stage = static_cast<uint32_t *>(stage);
    // Zeroed before any stream of the context can signal or wait on them.
    if (overlap_status s = zeroForStreams(site, flags, bytes, "flags")) {
      releaseSignals(*set);
      return s;
    }
  } else {
    void *host = nullptr;
    if (overlap_status s =
            check(site, "cudaHostAlloc",
                  cudaHostAlloc(&host, bytes, cudaHostAllocMapped)))
      return s;
    set->hostFlags = static_cast<uint32_t *>(host);
    std::memset(host, 0, bytes);
    void *device = nullptr;
    if (overlap_status s = check(site, "cudaHostGetDevicePointer",
                                 cudaHostGetDevicePointer(&device, host, 0))) {
      releaseSignals(*set);
      return s;
    }
    set->deviceFlags = static_cast<uint32_t *>(device);
  }
  if (options.sync == OVERLAP_CUDA_SYNC_EVENT) {
    set->recorded.assign(n, 0);
    for (int32_t i = 0; i < n; ++i) {
      cudaEvent_t event = nullptr;
      if (overlap_status s =
              check(site, "cudaEventCreateWithFlags",
                    cudaEventCreateWithFlags(&event, cudaEventDisableTiming))) {
        releaseSignals(*set);
        return s;
      }
      set->events.push_back(event);
    }
  }
  *sigs = set.get();
  signals_.push_back(std::move(set));
  return OVERLAP_SUCCESS;
}

void CudaContext::releaseSignals(CudaSignals &set) {
  for (cudaEvent_t event : set.events)
    (void)cudaEventDestroy(event);
  set.events.clear();
  if (set.hostFlags)
    (void)cudaFreeHost(set.hostFlags);
  else if (set.deviceFlags)
    (void)cudaFree(set.deviceFlags);
  if (set.stage)
    (void)cudaFreeHost(set.stage);
  set.hostFlags = set.deviceFlags = set.stage = nullptr;
}

void CudaContext::readFlags(CudaSignals *sigs, int32_t first, int32_t count,
                            uint32_t *out) {
  if (sigs->hostFlags) {
    for (int32_t i = 0; i < count; ++i)
      out[i] = static_cast<volatile uint32_t *>(sigs->hostFlags)[first + i];
    return;
  }
  // Into pinned memory, asynchronously: the copy returns at once and
  // syncControl bounds the wait for it (into pageable memory the copy
  // itself would wait for the device, unbounded).
  uint32_t *staged = sigs->stage ? sigs->stage + first : nullptr;
  if (!staged ||
      cudaMemcpyAsync(staged, sigs->deviceFlags + first,
                      sizeof(uint32_t) * size_t(count), cudaMemcpyDeviceToHost,
                      control_) != cudaSuccess ||
      !syncControl()) {
    (void)cudaGetLastError();
    std::fill(out, out + count, 0u); // every wait counts as open
    return;
  }
  for (int32_t i = 0; i < count; ++i)
    out[i] = static_cast<volatile uint32_t *>(staged)[i];
}

void CudaContext::writeFlag(CudaSignals *sigs, int32_t index, uint32_t value) {
  if (sigs->hostFlags) {
    static_cast<volatile uint32_t *>(sigs->hostFlags)[index] = value;
    return;
  }
  if (!sigs->stage)
    return;
  // The flag's own pinned word: a copy still queued from an earlier write
  // that timed out reads its own value, not this one.
  uint32_t *staged = sigs->stage + sigs->count + index;
  *static_cast<volatile uint32_t *>(staged) = value;
  if (cudaMemcpyAsync(sigs->deviceFlags + index, staged, sizeof(value),
                      cudaMemcpyHostToDevice, control_) != cudaSuccess ||
      !syncControl())
    (void)cudaGetLastError();
}

bool CudaContext::syncControl() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = runtime::deadlineAfter(start, options.waitTimeoutMs);
  for (;;) {
    cudaError_t e = cudaStreamQuery(control_);
    if (e == cudaSuccess)
      return true;
    if (e != cudaErrorNotReady)
      return false;
    auto now = Clock::now();
    if (now >= deadline)
      return false;
    if (now - start > std::chrono::milliseconds(1))
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    else
      std::this_thread::yield();
  }
}

void CudaContext::destroySignals(overlap_signals *sigs) {
  for (size_t i = 0; i < signals_.size(); ++i) {
    if (signals_[i].get() != sigs)
      continue;
    CudaSignals &set = *signals_[i];
    releaseSignals(set);
    for (auto &waits : pending_)
      for (size_t w = waits.size(); w-- > 0;)
        if (waits[w].sigs == &set)
          waits.erase(waits.begin() + w);
    signals_.erase(signals_.begin() + i);
    return;
  }
}

overlap_status CudaContext::signal(const Site &site, overlap_signals *sigs,
                                   int32_t index) {
  auto *set = static_cast<CudaSignals *>(sigs);
  const uint32_t epoch = uint32_t(set->epoch);
  cudaStream_t s = stream(site.stream);
  switch (options.sync) {
  case OVERLAP_CUDA_SYNC_SPIN:
    return check(site, "signal kernel launch",
                 launchSignalStore(set->deviceFlags + index, epoch, s));
  case OVERLAP_CUDA_SYNC_EVENT: {
    overlap_status status =
        check(site, "cudaEventRecord", cudaEventRecord(set->events[index], s));
    if (status == OVERLAP_SUCCESS)
      set->recorded[index] = set->epoch;
    return status;
  }
  default:
    // The default flags order the write after all earlier work of the
    // stream, with a memory barrier, so the waiter sees the tile's data.
    return check(site, "cuStreamWriteValue32",
                 driver().cuStreamWriteValue32(
                     s, reinterpret_cast<CUdeviceptr>(set->deviceFlags + index),
                     epoch, CU_STREAM_WRITE_VALUE_DEFAULT));
  }
}

overlap_status CudaContext::wait(const Site &site, overlap_signals *sigs,
                                 int32_t index) {
  if (overlap_status s = checkSpinError())
    return s;
  auto *set = static_cast<CudaSignals *>(sigs);
  const uint32_t epoch = uint32_t(set->epoch);
  cudaStream_t s = stream(site.stream);
  overlap_status status = OVERLAP_SUCCESS;
  switch (options.sync) {
  case OVERLAP_CUDA_SYNC_EVENT:
    // An event only remembers its last record: a wait enqueued before its
    // signal would wait for an older one (or for nothing). Refuse it.
    if (set->recorded[index] != set->epoch)
      return fail(OVERLAP_ERROR_UNSUPPORTED,
                  runtime::formatError(
                      site, rank,
                      "event sync needs the signal of epoch " +
                          std::to_string(set->epoch) +
                          " enqueued before its wait (the flag's last signal "
                          "was for epoch " +
                          std::to_string(set->recorded[index]) +
                          "); use memop or spin sync"));
    return check(site, "cudaStreamWaitEvent",
                 cudaStreamWaitEvent(s, set->events[index], 0));
  case OVERLAP_CUDA_SYNC_SPIN:
    status = check(site, "spin-wait kernel launch",
                   launchSpinWait(set->deviceFlags + index, epoch,
                                  uint64_t(options.waitTimeoutMs) * 1000000u,
                                  spinDevice_, site.stream, index, s));
    break;
  default:
    status =
        check(site, "cuStreamWaitValue32",
              driver().cuStreamWaitValue32(
                  s, reinterpret_cast<CUdeviceptr>(set->deviceFlags + index),
                  epoch, CU_STREAM_WAIT_VALUE_GEQ));
    break;
  }
  if (status != OVERLAP_SUCCESS)
    return status;
  // Remembered until a synchronize drains the stream: to name a stuck wait
  // and to release it if the context fails. Satisfied ones are pruned.
  std::vector<PendingWait> &waits = pending_[site.stream];
  if (waits.size() >= 1024) {
    // One read of each set's flags (a copy when they are in device memory).
    std::map<CudaSignals *, std::vector<uint32_t>> seen;
    for (const PendingWait &w : waits) {
      std::vector<uint32_t> &flags = seen[w.sigs];
      if (flags.empty()) {
        flags.resize(size_t(w.sigs->count));
        readFlags(w.sigs, 0, w.sigs->count, flags.data());
      }
    }
    std::vector<PendingWait> open;
    for (const PendingWait &w : waits)
      if (int32_t(seen[w.sigs][size_t(w.index)] - w.epoch) < 0)
        open.push_back(w);
    waits.swap(open);
  }
  waits.push_back({set, index, epoch});
  return OVERLAP_SUCCESS;
}
