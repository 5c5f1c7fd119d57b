//===- MeasuringContext.h - Contexts the measuring tools use ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// CUDA part (OverlapCalibrationCuda, built with the CUDA backend only).
// The context a measurement runs on: one rank on device 0, or a rank of a
// job started by mpirun / srun / torchrun; the device check; runtime errors
// that end the tool; the exchange of reports between ranks; the end of a
// run (CSV, destruction). Everything goes through the runtime's C ABI; no
// CUDA type appears here.
//
// Over several ranks every rank runs the same sequence of collectives
// (timing barriers, report exchanges, the measured runs); a rank that fails
// exits after destroying its context (which aborts its communicators), and
// its peers' next synchronize fails at the context's wait timeout
// (OVERLAP_WAIT_TIMEOUT_MS), so that no rank waits forever for a dead one
// once the communicator exists.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_MEASURINGCONTEXT_H
#define OVERLAP_CALIBRATION_MEASURINGCONTEXT_H

#include "overlap/Calibration/Knobs.h"
#include "overlap/Calibration/Reports.h"
#include "overlap/Runtime/overlap_runtime.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace overlap {
namespace calibration {

struct DeviceInfo {
  std::string name;
  int64_t smCount = 0;
};

/// The context of the tool, destroyed by leave() on an early exit.
overlap_context *&toolContext();

/// Exits with `code` after destroying the tool's context. Destroying a
/// failed context aborts its NCCL communicators and bounds the drain by the
/// wait timeout, so that neither this rank nor its peers wait forever.
[[noreturn]] void leave(int code);

/// The nccl leg's group is the world of the launched job: returns its size
/// when --ranks was not given (`ranksGiven`) or is that size; otherwise
/// rank 0 says so and every rank leaves with 2.
int64_t worldRanks(overlap_context *ctx, bool ranksGiven, int64_t ranks);

/// Exits 1 on a failed runtime call, with the runtime's message.
void check(overlap_context *ctx, overlap_status s, const char *what);

/// Enqueues the runtime's `coll` (the reducing ones sum) over the world on
/// the comm stream, as tile `tile` (-1: none), of `count` elements as the
/// runtime counts them (all-reduce: the whole buffer; the others: one
/// block); exits 1 on an error, naming the call.
void enqueueCollective(overlap_context *ctx, int64_t tile,
                       planner::Collective coll, overlap_dtype dtype,
                       const void *src, void *dst, int64_t count);

/// The options a measuring context is created with: the runtime's defaults
/// (overlap_cuda_options_init), then the knobs (applyCudaKnobs) with the
/// leg's default budget (legDefaultCommSms: none on the copy-engine leg).
overlap_cuda_options measuringOptions(const CudaKnobs &knobs,
                                      std::optional<int64_t> profileCommSms,
                                      std::optional<Leg> leg);

/// A one-rank context on device 0 for a tool that measures it, and the
/// device; exits 3 without a device, 1 if creation fails.
overlap_context *createMeasuringContext(const char *tool,
                                        const overlap_cuda_options &opts,
                                        DeviceInfo &device);

/// This process's rank of a job started by mpirun, srun or torchrun
/// (overlap_cuda_context_create_launched; one rank on its device without
/// launcher variables), and its device. Exits 3 without a device, 2 when
/// the launcher's variables are inconsistent, 1 if creation fails
/// otherwise. Collective: every rank of the job must call it.
overlap_context *createLaunchedContext(const char *tool,
                                       const overlap_cuda_options &opts,
                                       DeviceInfo &device);

/// Every rank's report, in rank order: an all-gather over the world on the
/// comm stream, bounded by the wait timeout (a rank that never comes makes
/// the synchronize fail, and the tool exit). Every rank must call it at the
/// same point with the same count of values. One rank: its own report, and
/// no collective.
std::vector<RankReport> exchangeReports(overlap_context *ctx, RankReport mine);

/// Stops every rank unless all were started with the same arguments (but
/// `ignored` options, e.g. output files only rank 0 writes) and `extra`
/// (e.g. a profile's text): otherwise their collectives would not match and
/// would hang until the wait timeout. Rank 0 says which ranks differ; all
/// exit 2.
void agreeOnArguments(overlap_context *ctx, int argc, char **argv,
                      const std::vector<std::string> &ignored,
                      const std::string &extra);

/// From here on only rank 0 prints to stdout (tables, progress); every
/// rank's errors still go to its stderr.
void printOnlyOnRankZero(overlap_context *ctx);

/// The context's resolved CUDA settings (overlap_cuda_describe), one line;
/// a note instead when the runtime this tool runs with cannot say.
std::string runtimeDescription(overlap_context *ctx);

/// The GEMM algorithms the context chose (overlap_cuda_gemm_report), one
/// line per shape; a note instead when the runtime cannot say.
std::string gemmAlgorithmReport(overlap_context *ctx);

/// Writes the CSV at `path` (`writeRows` writes its rows). A regular file,
/// or a new one, is written beside it ("<path>.part") and renamed over it,
/// so that a run stopped in the middle leaves the last complete CSV;
/// anything else (/dev/stdout, a FIFO) is written in place and never
/// removed. Returns false when it could not be written (nothing is left
/// beside it).
bool writeCsvFile(const std::string &path,
                  const std::function<void(std::ostream &)> &writeRows);

/// The end of a measurement: the CSV at `csvPath` (rank 0 only, when not
/// empty; writeCsvFile with `writeRows`), then the context's destruction.
/// Returns the exit status: 1 if a check failed, the CSV could not be
/// written or the context reported an error.
int finish(overlap_context *ctx, const std::string &csvPath, int failures,
           const std::function<void(std::ostream &)> &writeRows);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_MEASURINGCONTEXT_H
