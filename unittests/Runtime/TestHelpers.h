//===- TestHelpers.h - Shared helpers of the runtime tests -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_UNITTESTS_RUNTIME_TESTHELPERS_H
#define OVERLAP_UNITTESTS_RUNTIME_TESTHELPERS_H

#include "overlap/Runtime/overlap_runtime.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace overlap {
namespace test {

/// Runs `body` once per rank on the host backend; returns launch's status.
inline overlap_status
launch(int ranks, const overlap_host_options *opts,
       const std::function<void(overlap_context *)> &body) {
  auto trampoline = [](overlap_context *ctx, void *user) {
    (*static_cast<const std::function<void(overlap_context *)> *>(user))(ctx);
  };
  return overlap_host_launch(
      ranks, opts, trampoline,
      const_cast<void *>(static_cast<const void *>(&body)));
}

/// Options with chaos off (so the environment cannot change a test) and
/// the given wait timeout.
inline overlap_host_options quietOptions(int64_t timeoutMs = 0) {
  overlap_host_options opts;
  overlap_host_options_init(&opts);
  opts.chaos = OVERLAP_CHAOS_OFF;
  opts.wait_timeout_ms = timeoutMs;
  return opts;
}

/// Collects failures from rank threads for the main thread to report.
class Failures {
public:
  void add(const std::string &text) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (list_.size() < 20)
      list_.push_back(text);
    ++count_;
  }
  size_t count() const { return count_; }
  std::string text() const {
    std::string all;
    for (const std::string &line : list_)
      all += line + "\n";
    return all;
  }

private:
  std::mutex mutex_;
  std::vector<std::string> list_;
  size_t count_ = 0;
};

/// Runs `body` on `ranks` ranks of the host backend with quietOptions(
/// timeoutMs): the launch must succeed and no rank may add a failure.
inline void expectRanksPass(
    int ranks, int64_t timeoutMs,
    const std::function<void(overlap_context *, Failures &)> &body) {
  Failures failures;
  overlap_host_options opts = quietOptions(timeoutMs);
  overlap_status status =
      launch(ranks, &opts, [&](overlap_context *ctx) { body(ctx, failures); });
  EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
  EXPECT_EQ(failures.count(), 0u) << failures.text();
}

/// Runs `body`, whose calls refuse an argument, on one rank of the host
/// backend: the launch must end with OVERLAP_ERROR_INVALID_ARGUMENT. Returns
/// the rank's last error after `body`.
inline std::string
refusalOnOneRank(const std::function<void(overlap_context *)> &body) {
  overlap_host_options opts = quietOptions();
  std::string error;
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    body(ctx);
    error = overlap_last_error(ctx);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  return error;
}

/// Runs `call` on the last rank of a fresh world of `ranks` and returns the
/// launch's status and error text.
inline std::pair<overlap_status, std::string>
badCall(int ranks, const std::function<void(overlap_context *)> &call) {
  overlap_host_options opts = quietOptions(2000);
  overlap_status status = launch(ranks, &opts, [&](overlap_context *ctx) {
    if (overlap_context_rank(ctx) == ranks - 1)
      call(ctx);
    overlap_context_synchronize(ctx);
  });
  return {status, overlap_host_launch_error()};
}

inline const char *dtypeName(overlap_dtype t) {
  return t == OVERLAP_F32 ? "f32" : t == OVERLAP_F16 ? "f16" : "bf16";
}

/// Rounds through the storage type of `t` (identity for f32).
inline float roundTo(overlap_dtype t, float v) {
  if (t == OVERLAP_F16)
    return overlap_f16_to_f32(overlap_f32_to_f16(v));
  if (t == OVERLAP_BF16)
    return overlap_bf16_to_f32(overlap_f32_to_bf16(v));
  return v;
}

/// A buffer of elements of one dtype, read and written as floats.
class Buffer {
public:
  Buffer(overlap_dtype t, size_t n)
      : type_(t), n_(n), bytes_(n * overlap_dtype_size(t)) {}
  overlap_dtype type() const { return type_; }
  size_t size() const { return n_; }
  void *data() { return bytes_.data(); }
  const void *data() const { return bytes_.data(); }
  char *bytes() { return bytes_.data(); }

  float get(size_t i) const {
    if (type_ == OVERLAP_F32) {
      float v;
      std::memcpy(&v, &bytes_[i * 4], 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, &bytes_[i * 2], 2);
    return type_ == OVERLAP_F16 ? overlap_f16_to_f32(h)
                                : overlap_bf16_to_f32(h);
  }
  void set(size_t i, float v) {
    if (type_ == OVERLAP_F32) {
      std::memcpy(&bytes_[i * 4], &v, 4);
      return;
    }
    uint16_t h =
        type_ == OVERLAP_F16 ? overlap_f32_to_f16(v) : overlap_f32_to_bf16(v);
    std::memcpy(&bytes_[i * 2], &h, 2);
  }
  /// Raw bits of element i, for bit-exact comparisons.
  uint32_t bits(size_t i) const {
    uint32_t b = 0;
    std::memcpy(&b, &bytes_[i * overlap_dtype_size(type_)],
                overlap_dtype_size(type_));
    return b;
  }
  void fill(float v) {
    for (size_t i = 0; i < n_; ++i)
      set(i, v);
  }
  /// Random values in [lo, hi), never exactly zero, seeded.
  void randomize(uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    for (size_t i = 0; i < n_; ++i) {
      float v = dist(rng);
      if (roundTo(type_, v) == 0.0f)
        v = 0.25f;
      set(i, v);
    }
  }

private:
  overlap_dtype type_;
  size_t n_;
  std::vector<char> bytes_;
};

inline float nan() { return std::numeric_limits<float>::quiet_NaN(); }

} // namespace test
} // namespace overlap

#endif // OVERLAP_UNITTESTS_RUNTIME_TESTHELPERS_H
