//===- BenchCommon.h - Shared by overlap-bench and -calibrate ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Argument parsing, the device check, CUDA event timing (warm-up, then the
// median of timed repetitions) and input generation for the two CUDA tools.
// Both drive the GPU only through the runtime's C ABI (plus CUDA events and
// pinned memory from the CUDA runtime).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_TOOLS_BENCHCOMMON_H
#define OVERLAP_TOOLS_BENCHCOMMON_H

#include "overlap/Runtime/overlap_runtime.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

/// Exits with a clear message when no GPU is usable.
inline void requireDevice(const char *tool) {
  const char *why = nullptr;
  if (overlap_cuda_device_count(&why) > 0)
    return;
  std::fprintf(stderr,
               "%s: no CUDA device (%s). This tool measures a GPU; run it on "
               "a machine with one (scripts/gpu/run.sh).\n",
               tool, why && *why ? why : "cudaGetDeviceCount found none");
  std::exit(3);
}

/// Exits on a failed runtime call, with the runtime's message.
inline void check(overlap_context *ctx, overlap_status s, const char *what) {
  if (s == OVERLAP_SUCCESS)
    return;
  std::fprintf(stderr, "error: %s: %s: %s\n", what, overlap_status_name(s),
               ctx ? overlap_last_error(ctx) : overlap_cuda_create_error());
  std::exit(1);
}

inline void checkCuda(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return;
  std::fprintf(stderr, "error: %s failed: %s (%s)\n", what, cudaGetErrorName(e),
               cudaGetErrorString(e));
  std::exit(1);
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
  checkCuda(cudaGetDeviceProperties(&prop, overlap_cuda_device(ctx)),
            "cudaGetDeviceProperties");
  return ctx;
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
/// `warmup` untimed repetitions, then returns the median of `iters`, in us.
inline double timeUs(overlap_context *ctx, int startStream, int endStream,
                     int warmup, int iters,
                     const std::function<void()> &enqueue) {
  auto s0 = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, startStream));
  auto s1 = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, endStream));
  cudaEvent_t start, stop;
  checkCuda(cudaEventCreate(&start), "cudaEventCreate");
  checkCuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int i = 0; i < warmup + iters; ++i) {
    // Both streams idle, so the start event marks the start of the work.
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
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
  return median(times);
}

/// Random elements of `dtype` in [-1, 1), never zero, as raw bytes.
inline std::vector<char> randomElements(overlap_dtype dtype, size_t count,
                                        uint64_t seed) {
  std::vector<char> out(count * overlap_dtype_size(dtype));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < count; ++i) {
    float v = dist(rng);
    if (v == 0.0f)
      v = 0.5f;
    if (dtype == OVERLAP_F32) {
      std::copy_n(reinterpret_cast<const char *>(&v), 4, &out[i * 4]);
    } else {
      uint16_t h =
          dtype == OVERLAP_F16 ? overlap_f32_to_f16(v) : overlap_f32_to_bf16(v);
      std::copy_n(reinterpret_cast<const char *>(&h), 2, &out[i * 2]);
    }
  }
  return out;
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
