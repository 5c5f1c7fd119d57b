//===- Signals.cpp - Epoch-counted signal/wait between streams --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Flags are 32-bit words in mapped host memory that never go back to 0: a
// signal writes the epoch it captured, a wait holds its stream until the
// flag has reached that epoch (cyclic comparison, so the counter may wrap).
// Memop mode uses the copy front end (cuStreamWriteValue32 /
// cuStreamWaitValue32 GEQ) and no SM; spin mode uses one-thread kernels;
// event mode uses CUDA events. The host can read the flags (to say which
// wait is stuck) and write them (to release the waits of a failed context).
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <cstring>

using namespace overlap;
using namespace overlap::cuda;
using runtime::Site;

overlap_status CudaContext::createSignals(int32_t n, overlap_signals **sigs) {
  Site site = Site::thread("overlap_signals_create");
  auto set = std::make_unique<CudaSignals>();
  set->count = n;
  set->epoch = 1;
  void *host = nullptr;
  if (overlap_status s = check(
          site, "cudaHostAlloc",
          cudaHostAlloc(&host, sizeof(uint32_t) * n, cudaHostAllocMapped)))
    return s;
  set->hostFlags = static_cast<uint32_t *>(host);
  std::memset(host, 0, sizeof(uint32_t) * n);
  void *device = nullptr;
  if (overlap_status s = check(site, "cudaHostGetDevicePointer",
                               cudaHostGetDevicePointer(&device, host, 0))) {
    (void)cudaFreeHost(host);
    return s;
  }
  set->deviceFlags = static_cast<uint32_t *>(device);
  if (options.sync == OVERLAP_CUDA_SYNC_EVENT) {
    set->recorded.assign(n, 0);
    for (int32_t i = 0; i < n; ++i) {
      cudaEvent_t event = nullptr;
      if (overlap_status s =
              check(site, "cudaEventCreateWithFlags",
                    cudaEventCreateWithFlags(&event, cudaEventDisableTiming))) {
        for (cudaEvent_t made : set->events)
          (void)cudaEventDestroy(made);
        (void)cudaFreeHost(host);
        return s;
      }
      set->events.push_back(event);
    }
  }
  *sigs = set.get();
  signals_.push_back(std::move(set));
  return OVERLAP_SUCCESS;
}

void CudaContext::destroySignals(overlap_signals *sigs) {
  for (size_t i = 0; i < signals_.size(); ++i) {
    if (signals_[i].get() != sigs)
      continue;
    CudaSignals &set = *signals_[i];
    Site site = Site::thread("overlap_signals_destroy");
    for (cudaEvent_t event : set.events)
      check(site, "cudaEventDestroy", cudaEventDestroy(event));
    check(site, "cudaFreeHost", cudaFreeHost(set.hostFlags));
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
    std::vector<PendingWait> open;
    for (const PendingWait &w : waits) {
      uint32_t seen =
          static_cast<volatile uint32_t *>(w.sigs->hostFlags)[w.index];
      if (int32_t(seen - w.epoch) < 0)
        open.push_back(w);
    }
    waits.swap(open);
  }
  waits.push_back({set, index, epoch});
  return OVERLAP_SUCCESS;
}
