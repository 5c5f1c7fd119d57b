//===- Gate.h - Holding a stream until the host has enqueued ---*- C++ -*-===//
//
// Part of the Overlap project. Private to lib/Calibration/Cuda.
//
//===----------------------------------------------------------------------===//
//
// A timed repetition records its start event, then the host enqueues the
// work (tile GEMMs, copies, signals and waits: tens of calls). Without a
// gate the device starts at once and the window holds the host's enqueue
// time whenever the device outruns it. The gate is a one-thread kernel on
// the start stream, before the start event, that spins on a flag in pinned
// host memory until the host opens it after the last enqueue, so the
// window holds device time only. It gives up after a bound (a repetition
// whose enqueue waits for the device would otherwise never end) and counts
// how often it did.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_CALIBRATION_CUDA_GATE_H
#define OVERLAP_LIB_CALIBRATION_CUDA_GATE_H

#include <cuda_runtime.h>

#include <cstdint>

namespace overlap {
namespace calibration {

/// The flag the gate spins on and the count of gates that gave up, in
/// pinned host memory mapped into the device.
struct GateWords {
  volatile int32_t open;
  volatile int32_t gaveUp;
};

/// Launches the gate on `stream`: one thread spins until `words->open` is
/// non-zero or `boundNs` nanoseconds have passed (then it adds one to
/// `words->gaveUp`). `words` is the device's view of the mapped memory.
/// Returns the launch's error.
cudaError_t launchGateKernel(GateWords *words, uint64_t boundNs,
                             cudaStream_t stream);

/// Loads the gate kernel now (cudaFuncGetAttributes: under CUDA's lazy
/// loading a kernel is otherwise loaded at its first launch).
cudaError_t preloadGateKernel();

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_LIB_CALIBRATION_CUDA_GATE_H
