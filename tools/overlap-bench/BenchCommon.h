//===- BenchCommon.h - Shared by overlap-bench and -calibrate ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Argument parsing, the device check, contexts (one rank on device 0, or a
// rank of a job started by mpirun / srun / torchrun), CUDA event timing
// (warm-up, then the median of timed repetitions; over several ranks the
// slowest rank's time of each repetition), the exchange of reports between
// ranks and input generation for the two CUDA tools. Both drive the GPU only
// through the runtime's C ABI (plus CUDA events and pinned memory from the
// CUDA runtime).
//
// Over several ranks every rank runs the same sequence of collectives
// (timing barriers, report exchanges, the measured runs); a rank that fails
// exits after destroying its context (which aborts its communicators), and
// its peers' next synchronize fails at the context's wait timeout
// (OVERLAP_WAIT_TIMEOUT_MS), so that no rank waits forever for a dead one
// once the communicator exists.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_TOOLS_BENCHCOMMON_H
#define OVERLAP_TOOLS_BENCHCOMMON_H

#include "BenchRanks.h"
#include "overlap/Runtime/overlap_runtime.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace overlap {
namespace bench {

/// "--key value" and "--flag" arguments.
class Args {
public:
  /// Returns false (after printing why) on an unknown or incomplete option.
  bool parse(int argc, char **argv, const std::vector<std::string> &valued,
             const std::vector<std::string> &flags) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (std::find(flags.begin(), flags.end(), a) != flags.end()) {
        values_[a] = "1";
        continue;
      }
      if (std::find(valued.begin(), valued.end(), a) == valued.end() ||
          i + 1 >= argc) {
        std::fprintf(stderr, "error: unknown option or missing value: %s\n",
                     a.c_str());
        return false;
      }
      values_[a] = argv[++i];
    }
    return true;
  }
  bool has(const std::string &k) const { return values_.count(k) != 0; }
  std::string get(const std::string &k, const std::string &def) const {
    auto it = values_.find(k);
    return it == values_.end() ? def : it->second;
  }
  /// A positive integer, or `def`; exits with a message when malformed.
  int64_t getInt(const std::string &k, int64_t def) const {
    if (!has(k))
      return def;
    char *end = nullptr;
    long long v = std::strtoll(get(k, "").c_str(), &end, 10);
    if (*end || v <= 0) {
      std::fprintf(stderr, "error: %s needs a positive integer\n", k.c_str());
      std::exit(2);
    }
    return v;
  }

private:
  std::map<std::string, std::string> values_;
};

/// The context of the tool, destroyed by leave() on an early exit.
inline overlap_context *&toolContext() {
  static overlap_context *ctx = nullptr;
  return ctx;
}

/// Exits with `code` after destroying the tool's context. Destroying a
/// failed context aborts its NCCL communicators and bounds the drain by the
/// wait timeout, so that neither this rank nor its peers wait forever.
[[noreturn]] inline void leave(int code) {
  if (overlap_context *ctx = toolContext()) {
    toolContext() = nullptr;
    (void)overlap_cuda_context_destroy(ctx);
  }
  std::fflush(stdout);
  std::exit(code);
}

[[noreturn]] inline void noDevice(const char *tool, const char *why) {
  std::fprintf(stderr,
               "%s: no CUDA device (%s). This tool measures a GPU; run it on "
               "a machine with one (scripts/gpu/run.sh).\n",
               tool, why && *why ? why : "cudaGetDeviceCount found none");
  std::exit(3);
}

/// Exits with a clear message when no GPU is usable.
inline void requireDevice(const char *tool) {
  const char *why = nullptr;
  if (overlap_cuda_device_count(&why) > 0)
    return;
  noDevice(tool, why);
}

/// Exits on a failed runtime call, with the runtime's message.
inline void check(overlap_context *ctx, overlap_status s, const char *what) {
  if (s == OVERLAP_SUCCESS)
    return;
  std::fprintf(stderr, "error: %s: %s: %s\n", what, overlap_status_name(s),
               ctx ? overlap_last_error(ctx) : overlap_cuda_create_error());
  leave(1);
}

inline void checkCuda(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return;
  std::fprintf(stderr, "error: %s failed: %s (%s)\n", what, cudaGetErrorName(e),
               cudaGetErrorString(e));
  leave(1);
}

/// The end of a benchmark: the CSV (when --csv names one; `writeRows`
/// writes its header and rows), then the context's destruction. Returns the
/// exit status: 1 if a check failed, the CSV could not be written or the
/// context reported an error.
inline int finish(const Args &args, overlap_context *ctx, int failures,
                  const std::function<void(std::ostream &)> &writeRows) {
  if (args.has("--csv") && overlap_context_rank(ctx) == 0) {
    std::ofstream csv(args.get("--csv", ""));
    writeRows(csv);
    if (!csv) {
      std::fprintf(stderr, "error: cannot write %s\n",
                   args.get("--csv", "").c_str());
      failures = failures ? failures : 1;
    }
  }
  toolContext() = nullptr;
  overlap_status final = overlap_cuda_context_destroy(ctx);
  return failures || final != OVERLAP_SUCCESS ? 1 : 0;
}

/// A one-rank context on device 0 for a tool that measures it, and the
/// device's properties; exits 3 without a device, 1 if creation fails.
inline overlap_context *createMeasuringContext(const char *tool,
                                               cudaDeviceProp &prop) {
  requireDevice(tool);
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  overlap_context *ctx = nullptr;
  check(nullptr, overlap_cuda_context_create_single(0, &opts, &ctx),
        "overlap_cuda_context_create_single");
  toolContext() = ctx;
  checkCuda(cudaGetDeviceProperties(&prop, overlap_cuda_device(ctx)),
            "cudaGetDeviceProperties");
  return ctx;
}

/// This process's rank of a job started by mpirun, srun or torchrun
/// (overlap_cuda_context_create_launched; one rank on its device without
/// launcher variables), and its device's properties. Exits 3 without a
/// device, 2 when the launcher's variables are inconsistent, 1 if creation
/// fails otherwise. Collective: every rank of the job must call it.
inline overlap_context *createLaunchedContext(const char *tool,
                                              cudaDeviceProp &prop) {
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  overlap_context *ctx = nullptr;
  const char *why = nullptr;
  if (overlap_cuda_device_count(&why) <= 0) {
    std::string reason = why ? why : "";
    // Still bootstrap: rank 0 then publishes its failure in the rendezvous
    // file, and peers already waiting for it fail at once, not at their
    // timeout. (It cannot succeed without a device.)
    if (overlap_cuda_context_create_launched(&opts, &ctx) == OVERLAP_SUCCESS)
      (void)overlap_cuda_context_destroy(ctx);
    noDevice(tool, reason.c_str());
  }
  overlap_status s = overlap_cuda_context_create_launched(&opts, &ctx);
  if (s != OVERLAP_SUCCESS) {
    std::fprintf(stderr, "error: %s: %s\n", overlap_status_name(s),
                 overlap_cuda_create_error());
    std::exit(s == OVERLAP_ERROR_INVALID_ARGUMENT ? 2 : 1);
  }
  toolContext() = ctx;
  checkCuda(cudaGetDeviceProperties(&prop, overlap_cuda_device(ctx)),
            "cudaGetDeviceProperties");
  return ctx;
}

/// Every rank's report, in rank order: an all-gather over the world on the
/// comm stream, bounded by the wait timeout (a rank that never comes makes
/// the synchronize fail, and the tool exit). Every rank must call it at the
/// same point with the same count of values. One rank: its own report, and
/// no collective.
inline std::vector<RankReport> exchangeReports(overlap_context *ctx,
                                               RankReport mine) {
  mine.rank = overlap_context_rank(ctx);
  const size_t ranks = size_t(overlap_context_size(ctx));
  if (ranks == 1)
    return {mine};
  const int comm = OVERLAP_STREAM_COMM;
  const std::vector<char> bytes = encodeReport(mine);
  const size_t n = bytes.size();
  void *all = nullptr;
  check(ctx, overlap_alloc(ctx, n * (ranks + 1), &all), "alloc (reports)");
  char *own = static_cast<char *>(all) + n * ranks;
  std::vector<char> got(n * ranks);
  check(ctx, overlap_memcpy(ctx, comm, -1, own, bytes.data(), n),
        "upload (report)");
  // As f32 elements: an all-gather moves the bytes unchanged.
  check(ctx,
        overlap_all_gather(ctx, comm, -1, nullptr, OVERLAP_F32, own, all,
                           int64_t(n / 4)),
        "overlap_all_gather (reports of every rank)");
  check(ctx, overlap_memcpy(ctx, comm, -1, got.data(), all, n * ranks),
        "download (reports)");
  check(ctx, overlap_stream_synchronize(ctx, comm),
        "synchronize (waiting for every rank's report)");
  check(ctx, overlap_free(ctx, all), "free (reports)");
  std::vector<RankReport> reports(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    std::string why;
    if (!decodeReport(&got[r * n], n, reports[r], why)) {
      reports[r] = RankReport();
      reports[r].message = "its report was unreadable: " + why;
    }
    reports[r].rank = int32_t(r);
  }
  return reports;
}

/// Stops every rank unless all were started with the same arguments (but
/// `ignored` options, e.g. output files only rank 0 writes) and `extra`
/// (e.g. a profile's text): otherwise their collectives would not match and
/// would hang until the wait timeout. Rank 0 says which ranks differ; all
/// exit 2.
inline void agreeOnArguments(overlap_context *ctx, int argc, char **argv,
                             const std::vector<std::string> &ignored,
                             const std::string &extra) {
  if (overlap_context_size(ctx) == 1)
    return;
  RankReport mine;
  std::vector<std::string> args(argv + 1, argv + argc);
  mine.fingerprint = argumentFingerprint(args, ignored, extra);
  for (const std::string &a : args)
    mine.message += (mine.message.empty() ? "" : " ") + a;
  if (mine.message.size() >= reportMessageBytes)
    mine.message = mine.message.substr(0, reportMessageBytes - 5) + " ...";
  std::vector<RankReport> reports = exchangeReports(ctx, mine);
  std::vector<int32_t> differ = mismatchedRanks(reports);
  if (differ.empty())
    return;
  if (overlap_context_rank(ctx) == 0) {
    std::fprintf(stderr,
                 "error: the ranks were not started alike: rank 0 runs '%s'",
                 reports[0].message.c_str());
    for (int32_t r : differ)
      std::fprintf(stderr, "; rank %d runs '%s'", r,
                   reports[size_t(r)].message.c_str());
    std::fprintf(stderr,
                 " (the same words mean a --profile whose contents differ). "
                 "Every rank must run the same command.\n");
  }
  leave(2);
}

/// From here on only rank 0 prints to stdout (tables, progress); every
/// rank's errors still go to its stderr.
inline void printOnlyOnRankZero(overlap_context *ctx) {
  const int rank = overlap_context_rank(ctx);
  if (rank != 0 && !std::freopen("/dev/null", "w", stdout))
    std::fprintf(stderr, "warning: rank %d cannot silence its stdout\n", rank);
}

inline std::optional<overlap_dtype> parseDtype(const std::string &name) {
  if (name == "f16")
    return OVERLAP_F16;
  if (name == "bf16")
    return OVERLAP_BF16;
  if (name == "f32")
    return OVERLAP_F32;
  return std::nullopt;
}

inline double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

/// Times `enqueue` (which enqueues work on the context's streams) with
/// device events: recorded on `startStream` before and on `endStream` after
/// (the end stream must depend on all the work, e.g. through waits). Runs
/// `warmup` untimed repetitions, then returns the `iters` timed ones, in us.
/// Over several ranks a barrier on the start stream precedes the start
/// event, so that every rank's repetition starts together.
inline std::vector<double> timeSamplesUs(overlap_context *ctx, int startStream,
                                         int endStream, int warmup, int iters,
                                         const std::function<void()> &enqueue) {
  auto s0 = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, startStream));
  auto s1 = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, endStream));
  const bool ranks = overlap_context_size(ctx) > 1;
  cudaEvent_t start, stop;
  checkCuda(cudaEventCreate(&start), "cudaEventCreate");
  checkCuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int i = 0; i < warmup + iters; ++i) {
    // Both streams idle, so the start event marks the start of the work.
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
    if (ranks)
      check(ctx, overlap_barrier(ctx, startStream, -1, nullptr),
            "overlap_barrier");
    checkCuda(cudaEventRecord(start, s0), "cudaEventRecord");
    if (startStream != endStream)
      checkCuda(cudaStreamWaitEvent(s1, start, 0), "cudaStreamWaitEvent");
    enqueue();
    checkCuda(cudaEventRecord(stop, s1), "cudaEventRecord");
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (i >= warmup)
      times.push_back(double(ms) * 1000.0);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return times;
}

/// The median of timeSamplesUs. Over several ranks, every rank must call it
/// at the same point, and each repetition counts as long as its slowest
/// rank took (the ranks' times are exchanged).
inline double timeUs(overlap_context *ctx, int startStream, int endStream,
                     int warmup, int iters,
                     const std::function<void()> &enqueue) {
  RankReport mine;
  mine.values =
      timeSamplesUs(ctx, startStream, endStream, warmup, iters, enqueue);
  if (overlap_context_size(ctx) == 1)
    return median(mine.values);
  return median(maxOverRanks(exchangeReports(ctx, mine)));
}

/// Random elements of `dtype` in [-1, 1), never zero, exact in the type
/// (inputElements), as raw bytes.
inline std::vector<char> randomElements(overlap_dtype dtype, size_t count,
                                        uint64_t seed) {
  return inputElements(dtype, seed, count);
}

/// Element `i` of raw `bytes` of `dtype`, as a float.
inline float elementAt(const std::vector<char> &bytes, overlap_dtype dtype,
                       size_t i) {
  if (dtype == OVERLAP_F32) {
    float v;
    std::copy_n(&bytes[i * 4], 4, reinterpret_cast<char *>(&v));
    return v;
  }
  uint16_t h;
  std::copy_n(&bytes[i * 2], 2, reinterpret_cast<char *>(&h));
  return dtype == OVERLAP_F16 ? overlap_f16_to_f32(h) : overlap_bf16_to_f32(h);
}

} // namespace bench
} // namespace overlap

#endif // OVERLAP_TOOLS_BENCHCOMMON_H
