//===- MeasuringContext.cpp - Contexts the measuring tools use -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/MeasuringContext.h"

#include "CudaCheck.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sys/stat.h>

using namespace overlap;
using namespace overlap::calibration;

overlap_context *&calibration::toolContext() {
  static overlap_context *ctx = nullptr;
  return ctx;
}

int64_t calibration::worldRanks(overlap_context *ctx, bool ranksGiven,
                                int64_t ranks) {
  const int world = overlap_context_size(ctx);
  if (ranksGiven && ranks != world) {
    if (overlap_context_rank(ctx) == 0)
      printDiagnostic("error",
                      "--ranks %lld, but the nccl leg's group is the "
                      "world of %d rank(s) (the processes the launcher "
                      "started); drop --ranks\n",
                      (long long)ranks, world);
    leave(2);
  }
  return world;
}

void calibration::leave(int code) {
  if (overlap_context *ctx = toolContext()) {
    toolContext() = nullptr;
    (void)overlap_cuda_context_destroy(ctx);
  }
  std::fflush(stdout);
  std::exit(code);
}

[[noreturn]] static void noDevice(const char *tool, const char *why) {
  std::fprintf(stderr,
               "%s: no CUDA device (%s). This tool measures a GPU; run it on "
               "a machine with one (scripts/gpu/run.sh).\n",
               tool, why && *why ? why : "cudaGetDeviceCount found none");
  std::exit(3);
}

void calibration::check(overlap_context *ctx, overlap_status s,
                        const char *what) {
  if (s == OVERLAP_SUCCESS)
    return;
  printDiagnostic("error", "%s: %s: %s\n", what, overlap_status_name(s),
                  ctx ? overlap_last_error(ctx) : overlap_cuda_create_error());
  leave(1);
}

void calibration::enqueueCollective(overlap_context *ctx, int64_t tile,
                                    planner::Collective coll,
                                    overlap_dtype dtype, const void *src,
                                    void *dst, int64_t count) {
  const int comm = OVERLAP_STREAM_COMM;
  switch (coll) {
  case planner::Collective::AllReduce:
    return check(ctx,
                 overlap_all_reduce(ctx, comm, tile, nullptr, dtype,
                                    OVERLAP_SUM, src, dst, count),
                 "overlap_all_reduce");
  case planner::Collective::ReduceScatter:
    return check(ctx,
                 overlap_reduce_scatter(ctx, comm, tile, nullptr, dtype,
                                        OVERLAP_SUM, src, dst, count),
                 "overlap_reduce_scatter");
  case planner::Collective::AllGather:
    return check(
        ctx,
        overlap_all_gather(ctx, comm, tile, nullptr, dtype, src, dst, count),
        "overlap_all_gather");
  case planner::Collective::AllToAll:
    return check(
        ctx,
        overlap_all_to_all(ctx, comm, tile, nullptr, dtype, src, dst, count),
        "overlap_all_to_all");
  }
}

void calibration::checkCuda(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return;
  printDiagnostic("error", "%s failed: %s (%s)\n", what, cudaGetErrorName(e),
                  cudaGetErrorString(e));
  leave(1);
}

static DeviceInfo deviceOf(overlap_context *ctx) {
  cudaDeviceProp prop;
  checkCuda(cudaGetDeviceProperties(&prop, overlap_cuda_device(ctx)),
            "cudaGetDeviceProperties");
  return {prop.name, prop.multiProcessorCount};
}

overlap_cuda_options
calibration::measuringOptions(const CudaKnobs &knobs,
                              std::optional<int64_t> profileCommSms,
                              std::optional<Leg> leg) {
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  applyCudaKnobs(knobs, legDefaultCommSms(leg, profileCommSms), opts);
  return opts;
}

overlap_context *calibration::createMeasuringContext(
    const char *tool, const overlap_cuda_options &opts, DeviceInfo &device) {
  const char *why = nullptr;
  if (overlap_cuda_device_count(&why) <= 0)
    noDevice(tool, why);
  overlap_context *ctx = nullptr;
  check(nullptr, overlap_cuda_context_create_single(0, &opts, &ctx),
        "overlap_cuda_context_create_single");
  toolContext() = ctx;
  device = deviceOf(ctx);
  return ctx;
}

overlap_context *calibration::createLaunchedContext(
    const char *tool, const overlap_cuda_options &opts, DeviceInfo &device) {
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
    printDiagnostic("error", "%s: %s\n", overlap_status_name(s),
                    overlap_cuda_create_error());
    std::exit(s == OVERLAP_ERROR_INVALID_ARGUMENT ? 2 : 1);
  }
  toolContext() = ctx;
  device = deviceOf(ctx);
  return ctx;
}

std::vector<RankReport> calibration::exchangeReports(overlap_context *ctx,
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

void calibration::agreeOnArguments(overlap_context *ctx, int argc, char **argv,
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
    printDiagnostic("error",
                    "the ranks were not started alike: rank 0 runs '%s'",
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

void calibration::printOnlyOnRankZero(overlap_context *ctx) {
  const int rank = overlap_context_rank(ctx);
  if (rank != 0 && !std::freopen("/dev/null", "w", stdout))
    printDiagnostic("warning", "rank %d cannot silence its stdout\n", rank);
}

/// `text` without trailing newlines.
static std::string trimmed(std::string text) {
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

std::string calibration::runtimeDescription(overlap_context *ctx) {
  return trimmed(overlap_cuda_describe(ctx));
}

std::string calibration::gemmAlgorithmReport(overlap_context *ctx) {
  return trimmed(overlap_cuda_gemm_report(ctx));
}

bool calibration::writeCsvFile(
    const std::string &path,
    const std::function<void(std::ostream &)> &writeRows) {
  struct stat info;
  const bool aside = ::lstat(path.c_str(), &info) == 0 ? S_ISREG(info.st_mode)
                                                       : errno == ENOENT;
  const std::string target = aside ? path + ".part" : path;
  std::ofstream csv(target);
  writeRows(csv);
  // Closed before the check: a write error (a full disk) of the last,
  // buffered bytes shows only when they are flushed.
  csv.close();
  if (!csv) {
    if (aside)
      std::remove(target.c_str());
    return false;
  }
  return !aside || std::rename(target.c_str(), path.c_str()) == 0;
}

int calibration::finish(overlap_context *ctx, const std::string &csvPath,
                        int failures,
                        const std::function<void(std::ostream &)> &writeRows) {
  if (!csvPath.empty() && overlap_context_rank(ctx) == 0) {
    if (!writeCsvFile(csvPath, writeRows)) {
      printDiagnostic("error", "cannot write %s\n", csvPath.c_str());
      failures = failures ? failures : 1;
    }
  }
  toolContext() = nullptr;
  overlap_status final = overlap_cuda_context_destroy(ctx);
  return failures || final != OVERLAP_SUCCESS ? 1 : 0;
}
