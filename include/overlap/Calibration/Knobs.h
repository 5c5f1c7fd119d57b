//===- Knobs.h - The CUDA backend's options on a command line --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap-bench and overlap-calibrate take the CUDA backend's tuning options
// (overlap_cuda_options, include/overlap/Runtime/overlap_runtime_cuda.h) as
// flags and pass them into the context they measure with, so that one GPU
// run can compare each setting:
//   --comm-sms N              SMs reserved for communication (0: none);
//                             default: a given profile's device.comm_sms,
//                             else the runtime's default
//   --comm-priority high|normal   the comm stream's priority
//   --flags device|host       where signal/wait flags live
//   --sync memop|spin|event   how signal/wait work
//   --gemm-cache on|off       cuBLASLt descriptors kept per shape
//   --gemm-autotune K         time the heuristic's top K algorithms (1-16)
//   --alloc pool|sync         stream-ordered pool or cudaMalloc/cudaFree
//   --nccl-cta-cap on|off     NCCL's maxCTAs = comm_sms, or NCCL's choice
//   --zero-sm-all-gather on|off   all-gathers on NCCL's copy engines
// Unset flags leave the runtime's default (its environment variables, then
// its built-in defaults). Pure C++: the options struct has no CUDA types.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_KNOBS_H
#define OVERLAP_CALIBRATION_KNOBS_H

#include "overlap/Calibration/Arguments.h"
#include "overlap/Calibration/StandIn.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include <optional>
#include <string>
#include <vector>

namespace overlap {
namespace calibration {

/// The flags' values; each field holds the runtime's "default" value when
/// its flag is absent.
struct CudaKnobs {
  std::optional<int32_t> commSms;
  int32_t commPriority = OVERLAP_CUDA_KNOB_DEFAULT;
  int32_t deviceFlags = OVERLAP_CUDA_KNOB_DEFAULT;
  int32_t sync = OVERLAP_CUDA_SYNC_FROM_ENV;
  int32_t gemmCache = OVERLAP_CUDA_KNOB_DEFAULT;
  int32_t gemmAutotune = 0;
  int32_t streamOrderedAlloc = OVERLAP_CUDA_KNOB_DEFAULT;
  int32_t ncclCtaCap = OVERLAP_CUDA_KNOB_DEFAULT;
  int32_t zeroSmAllGather = OVERLAP_CUDA_KNOB_DEFAULT;
};

/// The knob flags that take a value, for Args::parse.
const std::vector<std::string> &cudaKnobFlags();

/// The usage lines of the knob flags.
const char *cudaKnobUsage();

/// Reads the knob flags from `args`. A bad value records, in args.error(),
/// one line naming the flag and the values it accepts; the knob keeps its
/// default.
CudaKnobs readCudaKnobs(const Args &args);

/// The flags overlap-bench and overlap-calibrate both take, the same way:
/// --dtype, --leg, --warmup, --iters.
std::vector<flags::Flag> measuringFlags();

/// A measuring tool's command line: `table`, measuringFlags(), then the
/// CUDA backend's knob flags. On --help prints `synopsis`, `about`, the table's
/// help and the knobs' and exits 0; on a usage error prints one line naming
/// `tool` and exits 2.
Args parseMeasuringArgs(const char *tool, const char *synopsis,
                        const char *about,
                        const std::vector<flags::Flag> &table, int argc,
                        char **argv);

/// Prints "TOOL: error: MESSAGE" and exits 2 (a usage error).
[[noreturn]] void usageError(const char *tool, const std::string &message);

/// Prints "TOOL: KIND: " and the printf-formatted text (whose newline the
/// format holds) to stderr, `kind` "error", "warning" or "internal error":
/// every message of a measuring tool names it, as its usage errors do.
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void printDiagnostic(const char *kind, const char *format, ...);

/// Sets the fields of `opts` (already initialized by
/// overlap_cuda_options_init) that the knobs name. comm_sms: --comm-sms,
/// else `profileCommSms` (a profile's device.comm_sms) when given, else
/// what the initialization left.
void applyCudaKnobs(const CudaKnobs &knobs,
                    std::optional<int64_t> profileCommSms,
                    overlap_cuda_options &opts);

/// The default of --comm-sms for a measuring context on `leg`: 0 on the
/// copy-engine leg, whose copies take no SM (a budget there would only
/// slow the tile GEMMs), else `profileCommSms`.
std::optional<int64_t> legDefaultCommSms(std::optional<Leg> leg,
                                         std::optional<int64_t> profileCommSms);

/// The knobs that were set, as flags ("--comm-sms 0 --sync spin"); "" when
/// none.
std::string describeCudaKnobs(const CudaKnobs &knobs);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_KNOBS_H
