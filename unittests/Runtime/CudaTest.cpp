//===- CudaTest.cpp - The CUDA backend of the runtime -----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Two kinds of tests. Those in CudaNoDevice run everywhere: option and
// argument errors of the creation functions, the library loading without a
// driver, host contexts told apart from CUDA ones, the host backend inside
// liboverlap_runtime_cuda.so. Those in CudaDevice need a GPU and skip
// (saying why) when cudaGetDeviceCount fails or finds none: GEMMs of every
// type pair against a double reference, one-rank NCCL collectives and
// splits (cached ones too), the zero-SM all-gather against the plain one,
// each signal/wait mode with a delayed producer, lost
// signals that must end in an error naming the flag (never a hang), pack/unpack
// against a host reference at every access width, and the mgpu* entry points.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "TestHelpers.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace overlap::test;

namespace {

int deviceCount(std::string &why) {
  const char *error = nullptr;
  int count = overlap_cuda_device_count(&error);
  why = error ? error : "";
  return count;
}

//===----------------------------------------------------------------------===//
// Without a device
//===----------------------------------------------------------------------===//

TEST(CudaNoDevice, OptionsDefaults) {
  overlap_cuda_options opts;
  std::memset(&opts, 0x5a, sizeof(opts));
  overlap_cuda_options_init(&opts);
  EXPECT_EQ(opts.struct_size, sizeof(overlap_cuda_options));
  EXPECT_EQ(opts.num_streams, 0);
  EXPECT_EQ(opts.wait_timeout_ms, 0);
  EXPECT_EQ(opts.sync, OVERLAP_CUDA_SYNC_FROM_ENV);
  EXPECT_EQ(opts.allow_tf32, 0);
}

/// The error of overlap_cuda_context_create_single, which must refuse the
/// default options as `change` changes them.
std::string
refusedOptions(const std::function<void(overlap_cuda_options &)> &change) {
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  change(opts);
  overlap_context *ctx = nullptr;
  EXPECT_EQ(overlap_cuda_context_create_single(0, &opts, &ctx),
            OVERLAP_ERROR_INVALID_ARGUMENT);
  return overlap_cuda_create_error();
}

TEST(CudaNoDevice, CreateRejectsBadArguments) {
  overlap_context *ctx = reinterpret_cast<overlap_context *>(0x1);
  EXPECT_EQ(
      overlap_cuda_context_create(nullptr, nullptr, nullptr, nullptr, &ctx),
      OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(std::string(overlap_cuda_create_error()).find("null communicator"),
            std::string::npos)
      << overlap_cuda_create_error();

  using Options = overlap_cuda_options;
  EXPECT_NE(
      refusedOptions([](Options &o) { o.struct_size = 4; }).find("struct_size"),
      std::string::npos);
  refusedOptions([](Options &o) { o.num_streams = 1; });
  refusedOptions([](Options &o) { o.num_streams = 17; });
  EXPECT_NE(
      refusedOptions([](Options &o) { o.sync = 42; }).find("sync mode 42"),
      std::string::npos);

  uint8_t id[OVERLAP_CUDA_UNIQUE_ID_BYTES] = {};
  EXPECT_EQ(overlap_cuda_context_create_rank(id, 2, 2, 0, nullptr, &ctx),
            OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(overlap_cuda_context_create_rank(id, 1, 0, 0, nullptr, nullptr),
            OVERLAP_ERROR_INVALID_ARGUMENT);
}

TEST(CudaNoDevice, MalformedSyncEnvironmentIsAnError) {
  setenv("OVERLAP_CUDA_SYNC", "bogus", 1);
  // The default options take the sync mode from the environment.
  std::string error = refusedOptions([](overlap_cuda_options &) {});
  unsetenv("OVERLAP_CUDA_SYNC");
  EXPECT_NE(error.find("OVERLAP_CUDA_SYNC"), std::string::npos) << error;
}

TEST(CudaNoDevice, NoDeviceIsAnErrorNotACrash) {
  std::string why;
  int count = deviceCount(why);
  EXPECT_GE(count, 0);
  if (count > 0) {
    EXPECT_EQ(why, "");
    return;
  }
  EXPECT_NE(why.find("cudaGetDeviceCount"), std::string::npos) << why;
  overlap_context *ctx = nullptr;
  overlap_status s = overlap_cuda_context_create_single(0, nullptr, &ctx);
  EXPECT_NE(s, OVERLAP_SUCCESS);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(std::string(overlap_cuda_create_error()), "");
  // The mgpu wrappers report (on stderr) and return null handles.
  EXPECT_EQ(mgpuStreamCreate(), nullptr);
}

TEST(CudaNoDevice, ModulesLoadLazily) {
  // mgpuModuleLoad runs in a global constructor of a compiled program,
  // before any context exists: it only records the image. Loading happens
  // at the first function lookup, in the context current then (without a
  // device, or for an image that is no module, the lookup fails: null).
  static const char notAModule[] = "not a cubin";
  void *module = mgpuModuleLoad(const_cast<char *>(notAModule), 0);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(mgpuModuleGetFunction(module, "kernel"), nullptr);
  mgpuModuleUnload(module);
  EXPECT_EQ(mgpuModuleLoad(nullptr, 0), nullptr);
  mgpuModuleUnload(nullptr);
}

TEST(CudaNoDevice, ExportsTheMgpuEntryPoints) {
  for (const char *name : {"mgpuModuleLoad",
                           "mgpuModuleLoadJIT",
                           "mgpuModuleUnload",
                           "mgpuModuleGetFunction",
                           "mgpuLaunchKernel",
                           "mgpuStreamCreate",
                           "mgpuStreamSynchronize",
                           "mgpuStreamDestroy",
                           "mgpuStreamWaitEvent",
                           "mgpuEventCreate",
                           "mgpuEventDestroy",
                           "mgpuEventSynchronize",
                           "mgpuEventRecord",
                           "mgpuMemAlloc",
                           "mgpuMemFree",
                           "mgpuMemcpy",
                           "mgpuMemset32",
                           "mgpuMemset16",
                           "mgpuMemHostRegister",
                           "mgpuMemHostUnregister",
                           "mgpuMemHostRegisterMemRef",
                           "mgpuMemHostUnregisterMemRef",
                           "mgpuSetDefaultDevice",
                           "overlap_cuda_context_create",
                           "overlap_gemm",
                           "overlap_host_launch"})
    EXPECT_NE(dlsym(RTLD_DEFAULT, name), nullptr) << name;
}

TEST(CudaNoDevice, HostContextsAreNotCudaContexts) {
  overlap_host_options opts = quietOptions(2000);
  overlap_status s = launch(2, &opts, [](overlap_context *ctx) {
    EXPECT_EQ(overlap_cuda_stream(ctx, 0), nullptr);
    EXPECT_EQ(overlap_cuda_nccl_comm(ctx, nullptr), nullptr);
    EXPECT_EQ(overlap_cuda_device(ctx), -1);
    EXPECT_EQ(overlap_cuda_context_destroy(ctx),
              OVERLAP_ERROR_INVALID_ARGUMENT);
    // The host backend works from this library too.
    float src[2] = {1.0f + overlap_context_rank(ctx), 2.0f}, dst[2] = {0, 0};
    EXPECT_EQ(overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, -1, nullptr,
                                 OVERLAP_F32, OVERLAP_SUM, src, dst, 2),
              OVERLAP_SUCCESS);
    EXPECT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS);
    EXPECT_EQ(dst[0], 3.0f);
    EXPECT_EQ(dst[1], 4.0f);
  });
  EXPECT_EQ(s, OVERLAP_SUCCESS) << overlap_host_launch_error();
  EXPECT_EQ(overlap_cuda_context_destroy(nullptr), OVERLAP_SUCCESS);
}

//===----------------------------------------------------------------------===//
// With a device
//===----------------------------------------------------------------------===//

class CudaDevice : public NeedsCudaDevice {
protected:
  void TearDown() override {
    if (ctx)
      overlap_cuda_context_destroy(ctx);
  }

  /// A one-rank context on device 0.
  void make(int sync = OVERLAP_CUDA_SYNC_MEMOP, int64_t timeoutMs = 5000,
            int deviceFlags = OVERLAP_CUDA_KNOB_DEFAULT) {
    overlap_cuda_options opts;
    overlap_cuda_options_init(&opts);
    opts.sync = sync;
    opts.wait_timeout_ms = timeoutMs;
    opts.device_flags = deviceFlags;
    ASSERT_EQ(overlap_cuda_context_create_single(0, &opts, &ctx),
              OVERLAP_SUCCESS)
        << overlap_cuda_create_error();
  }

  void *upload(const Buffer &host) {
    void *dev = nullptr;
    EXPECT_EQ(
        overlap_alloc(ctx, host.size() * overlap_dtype_size(host.type()), &dev),
        OVERLAP_SUCCESS);
    EXPECT_EQ(overlap_memcpy(ctx, 0, -1, dev, host.data(),
                             host.size() * overlap_dtype_size(host.type())),
              OVERLAP_SUCCESS);
    EXPECT_EQ(overlap_stream_synchronize(ctx, 0), OVERLAP_SUCCESS);
    return dev;
  }
  void download(Buffer &host, const void *dev) {
    EXPECT_EQ(overlap_memcpy(ctx, 0, -1, host.data(), dev,
                             host.size() * overlap_dtype_size(host.type())),
              OVERLAP_SUCCESS);
    EXPECT_EQ(overlap_stream_synchronize(ctx, 0), OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
  }

  overlap_context *ctx = nullptr;
};

TEST_F(CudaDevice, MemsetOnAStream) {
  make();
  std::vector<uint8_t> host(1000, 7);
  void *dev = nullptr;
  ASSERT_EQ(overlap_alloc(ctx, host.size(), &dev), OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_memcpy(ctx, 0, -1, dev, host.data(), host.size()),
            OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_memset(ctx, 0, -1, static_cast<char *>(dev) + 10, 255, 500),
            OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_memcpy(ctx, 0, -1, host.data(), dev, host.size()),
            OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_stream_synchronize(ctx, 0), OVERLAP_SUCCESS)
      << overlap_last_error(ctx);
  EXPECT_EQ(host[9], 7);
  EXPECT_EQ(host[10], 255);
  EXPECT_EQ(host[509], 255);
  EXPECT_EQ(host[510], 7);
  overlap_free(ctx, dev);
}

TEST_F(CudaDevice, OneRankContext) {
  make();
  EXPECT_EQ(overlap_context_rank(ctx), 0);
  EXPECT_EQ(overlap_context_size(ctx), 1);
  EXPECT_EQ(overlap_context_num_streams(ctx), 2);
  EXPECT_NE(overlap_cuda_stream(ctx, 0), nullptr);
  EXPECT_NE(overlap_cuda_stream(ctx, 1), overlap_cuda_stream(ctx, 0));
  EXPECT_EQ(overlap_cuda_stream(ctx, 2), nullptr);
  EXPECT_NE(overlap_cuda_nccl_comm(ctx, nullptr), nullptr);
  EXPECT_EQ(overlap_cuda_device(ctx), 0);
}

/// C[b] += A[b] B[b] against a double reference, for each type pair,
/// batched with A or B broadcast (stride 0), with padded leading dims.
TEST_F(CudaDevice, GemmMatchesReference) {
  make();
  struct Case {
    overlap_dtype ab, c;
    int64_t batch, m, n, k;
    bool broadcastA, broadcastB;
  } cases[] = {
      {OVERLAP_F32, OVERLAP_F32, 1, 37, 29, 41, false, false},
      {OVERLAP_F16, OVERLAP_F32, 1, 64, 128, 96, false, false},
      {OVERLAP_F16, OVERLAP_F16, 3, 32, 64, 48, false, true},
      {OVERLAP_BF16, OVERLAP_F32, 4, 16, 40, 24, true, false},
      {OVERLAP_BF16, OVERLAP_BF16, 2, 33, 17, 65, false, false},
  };
  for (const Case &t : cases) {
    SCOPED_TRACE(std::string(dtypeName(t.ab)) + "->" + dtypeName(t.c) +
                 " batch " + std::to_string(t.batch));
    const int64_t lda = t.k + 8, ldb = t.n + 8, ldc = t.n + 4;
    const int64_t sA = t.broadcastA ? 0 : t.m * lda;
    const int64_t sB = t.broadcastB ? 0 : t.k * ldb;
    const int64_t sC = t.m * ldc + 16;
    Buffer a(t.ab, size_t(sA ? sA * t.batch : t.m * lda));
    Buffer b(t.ab, size_t(sB ? sB * t.batch : t.k * ldb));
    Buffer c(t.c, size_t(sC * t.batch));
    a.randomize(1);
    b.randomize(2);
    c.randomize(3);
    void *da = upload(a), *db = upload(b), *dc = upload(c);
    ASSERT_EQ(overlap_gemm(ctx, 0, 7, t.batch, t.m, t.n, t.k, t.ab, da, lda, sA,
                           db, ldb, sB, t.c, dc, ldc, sC, 0),
              OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
    Buffer out(t.c, c.size());
    download(out, dc);
    const double tol = t.c == OVERLAP_F32 && t.ab == OVERLAP_F32 ? 1e-4
                       : t.c == OVERLAP_F32                      ? 1e-3
                       : t.c == OVERLAP_F16                      ? 4e-3
                                                                 : 2e-2;
    for (int64_t bt = 0; bt < t.batch; ++bt)
      for (int64_t i = 0; i < t.m; ++i)
        for (int64_t j = 0; j < t.n; ++j) {
          double ref = c.get(size_t(bt * sC + i * ldc + j));
          for (int64_t p = 0; p < t.k; ++p)
            ref += double(a.get(size_t(bt * sA + i * lda + p))) *
                   b.get(size_t(bt * sB + p * ldb + j));
          double got = out.get(size_t(bt * sC + i * ldc + j));
          ASSERT_NEAR(got, ref, tol * (1.0 + std::abs(ref)))
              << "batch " << bt << " (" << i << ", " << j << ")";
        }
    // Padding between rows and batches is untouched.
    EXPECT_EQ(out.bits(size_t(t.n)), c.bits(size_t(t.n)));
    overlap_free(ctx, da);
    overlap_free(ctx, db);
    overlap_free(ctx, dc);
  }
}

TEST_F(CudaDevice, OneRankCollectivesAndSplits) {
  make();
  const int64_t n = 1000;
  Buffer src(OVERLAP_F32, n);
  src.randomize(5);
  void *ds = upload(src);
  void *dd = nullptr;
  ASSERT_EQ(overlap_alloc(ctx, n * 4, &dd), OVERLAP_SUCCESS);
  overlap_group *sub = nullptr, *none = reinterpret_cast<overlap_group *>(1);
  ASSERT_EQ(overlap_group_split(ctx, nullptr, 0, 0, &sub), OVERLAP_SUCCESS)
      << overlap_last_error(ctx);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(overlap_group_size(sub), 1);
  ASSERT_EQ(
      overlap_group_split(ctx, nullptr, OVERLAP_UNDEFINED_COLOR, 0, &none),
      OVERLAP_SUCCESS);
  EXPECT_EQ(none, nullptr);
  for (overlap_group *g : {static_cast<overlap_group *>(nullptr), sub}) {
    // 4 and 5: shifts, 0 mod 1 whatever the offset (a copy on the stream).
    for (int which = 0; which < 6; ++which) {
      Buffer poison(OVERLAP_F32, n);
      poison.fill(-7.0f);
      overlap_memcpy(ctx, 1, -1, dd, poison.data(), n * 4);
      overlap_status s =
          which == 0   ? overlap_all_reduce(ctx, 1, which, g, OVERLAP_F32,
                                            OVERLAP_AVG, ds, dd, n)
          : which == 1 ? overlap_reduce_scatter(ctx, 1, which, g, OVERLAP_F32,
                                                OVERLAP_SUM, ds, dd, n)
          : which == 2
              ? overlap_all_gather(ctx, 1, which, g, OVERLAP_F32, ds, dd, n)
          : which == 3
              ? overlap_all_to_all(ctx, 1, which, g, OVERLAP_F32, ds, dd, n)
              : overlap_shift(ctx, 1, which, g, OVERLAP_F32,
                              which == 4 ? 1 : -3, ds, dd, n);
      ASSERT_EQ(s, OVERLAP_SUCCESS) << overlap_last_error(ctx);
      ASSERT_EQ(overlap_barrier(ctx, 1, which, g), OVERLAP_SUCCESS);
      ASSERT_EQ(overlap_stream_synchronize(ctx, 1), OVERLAP_SUCCESS)
          << overlap_last_error(ctx);
      Buffer out(OVERLAP_F32, n);
      download(out, dd);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(out.get(size_t(i)), src.get(size_t(i))) << which << " " << i;
    }
  }
  EXPECT_EQ(overlap_group_destroy(ctx, sub), OVERLAP_SUCCESS);
  overlap_free(ctx, ds);
  overlap_free(ctx, dd);
}

/// overlap_group_split_cached on NCCL: one ncclCommSplit (splitShare) per
/// (parent, tag, color, key), the same communicator on later calls, a new
/// one after overlap_group_destroy; an all-reduce over it is exact.
TEST_F(CudaDevice, CachedSplitKeepsOneCommunicator) {
  make();
  overlap_group *first = nullptr, *again = nullptr;
  ASSERT_EQ(overlap_group_split_cached(ctx, nullptr, 42, 0, 0, &first),
            OVERLAP_SUCCESS)
      << overlap_last_error(ctx);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(overlap_group_split_cached(ctx, nullptr, 42, 0, 0, &again),
            OVERLAP_SUCCESS);
  EXPECT_EQ(again, first);
  void *comm = overlap_cuda_nccl_comm(ctx, first);
  EXPECT_NE(comm, nullptr);
  EXPECT_NE(comm, overlap_cuda_nccl_comm(ctx, nullptr)); // not the world's
  EXPECT_EQ(overlap_cuda_nccl_comm(ctx, again), comm);
  const int64_t n = 257;
  Buffer src(OVERLAP_F32, n);
  src.randomize(9);
  void *d = upload(src);
  ASSERT_EQ(
      overlap_all_reduce(ctx, 1, 0, again, OVERLAP_F32, OVERLAP_SUM, d, d, n),
      OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS)
      << overlap_last_error(ctx);
  Buffer out(OVERLAP_F32, n);
  download(out, d);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out.bits(size_t(i)), src.bits(size_t(i))) << i;
  ASSERT_EQ(overlap_group_destroy(ctx, first), OVERLAP_SUCCESS);
  overlap_group *third = nullptr;
  ASSERT_EQ(overlap_group_split_cached(ctx, nullptr, 42, 0, 0, &third),
            OVERLAP_SUCCESS)
      << overlap_last_error(ctx);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(overlap_group_size(third), 1);
  overlap_free(ctx, d);
}

/// zero_sm_all_gather off and on: the same all-gathers (the world and a
/// split group, f32 and f16, sizes that grow the staging window and one
/// that fits the grown window) give the same bits, and the source's. Where
/// this NCCL, driver or topology cannot run the copy-engine path, the knob
/// falls back, says why in overlap_cuda_describe, and the results still
/// match: the run never fails because of it.
TEST_F(CudaDevice, ZeroSmAllGatherMatchesThePlainOne) {
  struct Case {
    overlap_dtype dtype;
    int64_t n;
  } cases[] = {{OVERLAP_F32, 1000},
               {OVERLAP_F16, 3001},
               {OVERLAP_F32, 5000},
               {OVERLAP_F16, 17}};
  std::vector<uint32_t> results[2];
  for (int on = 0; on < 2; ++on) {
    overlap_cuda_options opts;
    overlap_cuda_options_init(&opts);
    opts.wait_timeout_ms = 5000;
    opts.zero_sm_all_gather = on ? OVERLAP_CUDA_KNOB_ON : OVERLAP_CUDA_KNOB_OFF;
    ASSERT_EQ(overlap_cuda_context_create_single(0, &opts, &ctx),
              OVERLAP_SUCCESS)
        << overlap_cuda_create_error();
    overlap_group *sub = nullptr;
    ASSERT_EQ(overlap_group_split(ctx, nullptr, 0, 0, &sub), OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
    int tile = 0;
    for (overlap_group *g : {static_cast<overlap_group *>(nullptr), sub})
      for (const Case &c : cases) {
        SCOPED_TRACE(std::string(on ? "on, " : "off, ") +
                     (g ? "group, " : "world, ") + dtypeName(c.dtype) + " " +
                     std::to_string(c.n));
        Buffer src(c.dtype, size_t(c.n)), poison(c.dtype, size_t(c.n));
        src.randomize(uint64_t(40 + c.n));
        poison.fill(-7.0f);
        void *ds = upload(src), *dd = upload(poison);
        ASSERT_EQ(overlap_all_gather(ctx, 1, tile++, g, c.dtype, ds, dd, c.n),
                  OVERLAP_SUCCESS)
            << overlap_last_error(ctx);
        ASSERT_EQ(overlap_stream_synchronize(ctx, 1), OVERLAP_SUCCESS)
            << overlap_last_error(ctx);
        Buffer out(c.dtype, size_t(c.n));
        download(out, dd);
        for (size_t i = 0; i < out.size(); ++i) {
          ASSERT_EQ(out.bits(i), src.bits(i)) << "element " << i;
          results[on].push_back(out.bits(i));
        }
        overlap_free(ctx, ds);
        overlap_free(ctx, dd);
      }
    const std::string settings = overlap_cuda_describe(ctx);
    const int active = overlap_cuda_zero_sm_all_gather(ctx);
    EXPECT_NE(
        settings.find(on ? "zero-sm all-gather on" : "zero-sm all-gather off"),
        std::string::npos)
        << settings;
    if (!on) {
      EXPECT_EQ(active, 0);
      EXPECT_EQ(settings.find("fallback"), std::string::npos) << settings;
    } else {
      // Either path is correct; which one ran is the GPU run's finding.
      EXPECT_EQ(active == 0, settings.find("zero-sm all-gather fallback in") !=
                                 std::string::npos)
          << settings;
      std::printf("zero_sm_all_gather: %s\n",
                  active == 1 ? "copy-engine path" : settings.c_str());
    }
    EXPECT_EQ(overlap_group_destroy(ctx, sub), OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
    EXPECT_EQ(overlap_cuda_context_destroy(ctx), OVERLAP_SUCCESS);
    ctx = nullptr;
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(overlap_cuda_zero_sm_all_gather(nullptr), -1);
}

void sleepMs(void *user) {
  std::this_thread::sleep_for(
      std::chrono::milliseconds(*static_cast<int *>(user)));
}

/// Producer (compute stream): sleep in a host function, then copy the
/// run's data into `data`, then signal. Consumer (comm stream): wait, then
/// copy `data` to `copy`. Everything is enqueued at once (device-to-device
/// copies return at once), so without a working wait the consumer copies
/// the poison.
void producerConsumer(overlap_context *ctx, int runs) {
  const size_t n = 1 << 16;
  std::vector<float> value(n), out(n), poison(n, -1.0f);
  void *source = nullptr, *data = nullptr, *copy = nullptr;
  ASSERT_EQ(overlap_alloc(ctx, n * 4, &source), OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_alloc(ctx, n * 4, &data), OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_alloc(ctx, n * 4, &copy), OVERLAP_SUCCESS);
  static int delay = 100;
  for (int run = 0; run < runs; ++run) {
    for (size_t i = 0; i < n; ++i)
      value[i] = float(run * 1000 + int(i % 997));
    overlap_memcpy(ctx, 0, -1, source, value.data(), n * 4);
    overlap_memcpy(ctx, 0, -1, data, poison.data(), n * 4);
    overlap_memcpy(ctx, 0, -1, copy, poison.data(), n * 4);
    ASSERT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS);
    overlap_signals *sigs = nullptr;
    ASSERT_EQ(overlap_signals_acquire(ctx, 11, 2, &sigs), OVERLAP_SUCCESS);
    // Enqueue order: signal first (event mode requires it), then the wait.
    overlap_launch_host_func(ctx, 0, sleepMs, &delay);
    overlap_memcpy(ctx, 0, run, data, source, n * 4);
    ASSERT_EQ(overlap_signal(ctx, 0, sigs, 1), OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
    ASSERT_EQ(overlap_wait(ctx, 1, sigs, 1), OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
    overlap_memcpy(ctx, 1, run, copy, data, n * 4);
    ASSERT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
    overlap_memcpy(ctx, 1, -1, out.data(), copy, n * 4);
    ASSERT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS);
    for (size_t i = 0; i < n; i += 97)
      ASSERT_EQ(out[i], value[i]) << "run " << run << ", element " << i;
  }
  overlap_free(ctx, source);
  overlap_free(ctx, data);
  overlap_free(ctx, copy);
}

TEST_F(CudaDevice, SignalWaitMemop) {
  make(OVERLAP_CUDA_SYNC_MEMOP);
  producerConsumer(ctx, 3);
}
TEST_F(CudaDevice, SignalWaitSpin) {
  make(OVERLAP_CUDA_SYNC_SPIN);
  producerConsumer(ctx, 3);
}
TEST_F(CudaDevice, SignalWaitEvent) {
  make(OVERLAP_CUDA_SYNC_EVENT);
  producerConsumer(ctx, 3);
}
// The same with the flags in mapped host memory (the default is device
// memory).
TEST_F(CudaDevice, SignalWaitMemopHostFlags) {
  make(OVERLAP_CUDA_SYNC_MEMOP, 5000, OVERLAP_CUDA_KNOB_OFF);
  producerConsumer(ctx, 3);
}
TEST_F(CudaDevice, SignalWaitSpinHostFlags) {
  make(OVERLAP_CUDA_SYNC_SPIN, 5000, OVERLAP_CUDA_KNOB_OFF);
  producerConsumer(ctx, 3);
}

/// A wait whose signal never comes ends in OVERLAP_ERROR_TIMEOUT naming
/// the stream and the flag, and the context can still be destroyed.
void lostSignal(overlap_context *&ctx) {
  overlap_signals *sigs = nullptr;
  ASSERT_EQ(overlap_signals_create(ctx, 4, &sigs), OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_wait(ctx, OVERLAP_STREAM_COMM, sigs, 3), OVERLAP_SUCCESS)
      << overlap_last_error(ctx);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(overlap_context_synchronize(ctx), OVERLAP_ERROR_TIMEOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  std::string error = overlap_last_error(ctx);
  EXPECT_NE(error.find("overlap_wait: rank 0, stream comm, flag 3"),
            std::string::npos)
      << error;
  EXPECT_EQ(overlap_cuda_context_destroy(ctx), OVERLAP_ERROR_TIMEOUT);
  ctx = nullptr;
}

TEST_F(CudaDevice, LostSignalMemopIsATimeout) {
  make(OVERLAP_CUDA_SYNC_MEMOP, 200);
  lostSignal(ctx);
}
TEST_F(CudaDevice, LostSignalSpinIsATimeout) {
  make(OVERLAP_CUDA_SYNC_SPIN, 200);
  lostSignal(ctx);
}
TEST_F(CudaDevice, LostSignalMemopHostFlagsIsATimeout) {
  make(OVERLAP_CUDA_SYNC_MEMOP, 200, OVERLAP_CUDA_KNOB_OFF);
  lostSignal(ctx);
}

TEST_F(CudaDevice, EventWaitBeforeSignalIsRefused) {
  make(OVERLAP_CUDA_SYNC_EVENT, 200);
  overlap_signals *sigs = nullptr;
  ASSERT_EQ(overlap_signals_create(ctx, 2, &sigs), OVERLAP_SUCCESS);
  EXPECT_EQ(overlap_wait(ctx, 1, sigs, 0), OVERLAP_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(overlap_last_error(ctx)).find("event sync"),
            std::string::npos);
}

/// Host reference of overlap_pack.
std::vector<char> packReference(const std::vector<char> &src, int64_t eb,
                                int64_t n0, int64_t n1, int64_t n2, int64_t s0,
                                int64_t s1) {
  std::vector<char> out;
  for (int64_t i0 = 0; i0 < n0; ++i0)
    for (int64_t i1 = 0; i1 < n1; ++i1)
      for (int64_t i2 = 0; i2 < n2 * eb; ++i2)
        out.push_back(src[size_t((i0 * s0 + i1 * s1) * eb + i2)]);
  return out;
}

TEST_F(CudaDevice, PackAndUnpackAtEveryWidth) {
  make();
  struct Case {
    int64_t eb, n0, n1, n2, s0, s1, offset; // offset in bytes, for alignment
  } cases[] = {
      {4, 1, 64, 32, 0, 40, 0},       // 16-byte words
      {2, 3, 17, 12, 17 * 20, 20, 0}, // 8
      {4, 2, 5, 3, 40, 7, 0},         // 4
      {2, 1, 9, 5, 0, 7, 0},          // 2
      {1, 2, 7, 13, 150, 21, 1},      // 1, odd address
      {2, 1, 300, 4000, 0, 4100, 0},  // many rows, long rows
  };
  for (const Case &t : cases) {
    SCOPED_TRACE("eb " + std::to_string(t.eb) + " n " + std::to_string(t.n0) +
                 "x" + std::to_string(t.n1) + "x" + std::to_string(t.n2));
    int64_t span = ((t.n0 - 1) * t.s0 + (t.n1 - 1) * t.s1 + t.n2) * t.eb;
    std::vector<char> strided(size_t(span + t.offset));
    for (size_t i = 0; i < strided.size(); ++i)
      strided[i] = char(i * 131 + 7);
    int64_t packedBytes = t.n0 * t.n1 * t.n2 * t.eb;
    void *dStrided = nullptr, *dPacked = nullptr;
    ASSERT_EQ(overlap_alloc(ctx, strided.size(), &dStrided), OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_alloc(ctx, size_t(packedBytes + 16), &dPacked),
              OVERLAP_SUCCESS);
    overlap_memcpy(ctx, 0, -1, dStrided, strided.data(), strided.size());
    char *base = static_cast<char *>(dStrided) + t.offset;
    char *packedDev = static_cast<char *>(dPacked) + t.offset;
    ASSERT_EQ(overlap_pack(ctx, 0, 3, t.eb, base, t.n0, t.n1, t.n2, t.s0, t.s1,
                           packedDev),
              OVERLAP_SUCCESS);
    std::vector<char> packed(static_cast<size_t>(packedBytes));
    overlap_memcpy(ctx, 0, -1, packed.data(), packedDev, packed.size());
    ASSERT_EQ(overlap_stream_synchronize(ctx, 0), OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
    std::vector<char> shifted(strided.begin() + t.offset, strided.end());
    EXPECT_EQ(packed,
              packReference(shifted, t.eb, t.n0, t.n1, t.n2, t.s0, t.s1));
    // Unpack into a zeroed strided buffer: the block comes back, the gaps
    // stay zero.
    std::vector<char> zero(strided.size(), 0), back(strided.size());
    overlap_memcpy(ctx, 0, -1, dStrided, zero.data(), zero.size());
    ASSERT_EQ(overlap_unpack(ctx, 0, 3, t.eb, packedDev, t.n0, t.n1, t.n2, t.s0,
                             t.s1, base),
              OVERLAP_SUCCESS);
    overlap_memcpy(ctx, 0, -1, back.data(), dStrided, back.size());
    ASSERT_EQ(overlap_stream_synchronize(ctx, 0), OVERLAP_SUCCESS);
    std::vector<char> expect(strided.size(), 0);
    for (int64_t i0 = 0; i0 < t.n0; ++i0)
      for (int64_t i1 = 0; i1 < t.n1; ++i1)
        for (int64_t i2 = 0; i2 < t.n2 * t.eb; ++i2) {
          size_t at = size_t(t.offset + (i0 * t.s0 + i1 * t.s1) * t.eb + i2);
          expect[at] = strided[at];
        }
    EXPECT_EQ(back, expect);
    overlap_free(ctx, dStrided);
    overlap_free(ctx, dPacked);
  }
}

// A PTX kernel: p[tid] = v + tid. Loaded, launched and read back through
// the mgpu* entry points, on the context's compute stream.
const char *fillPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry overlap_fill(.param .u64 p, .param .u32 v)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [v];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  add.u32 %r3, %r1, %r2;
  st.global.u32 [%rd4], %r3;
  ret;
}
)";

TEST_F(CudaDevice, MgpuEntryPoints) {
  make();
  void *stream = overlap_cuda_stream(ctx, OVERLAP_STREAM_COMPUTE);
  void *buffer = mgpuMemAlloc(64 * 4, stream, false);
  ASSERT_NE(buffer, nullptr);
  mgpuMemset32(buffer, 0xdeadbeef, 64, stream);
  void *module = mgpuModuleLoad(const_cast<char *>(fillPtx), 0);
  ASSERT_NE(module, nullptr);
  void *function = mgpuModuleGetFunction(module, "overlap_fill");
  ASSERT_NE(function, nullptr);
  uint32_t v = 1000;
  void *params[] = {&buffer, &v};
  mgpuLaunchKernel(function, 1, 1, 1, 64, 1, 1, 0, stream, params, nullptr, 2);
  void *second = mgpuMemAlloc(64 * 4, stream, false);
  ASSERT_NE(second, nullptr);
  mgpuMemcpy(second, buffer, 64 * 4, stream);
  mgpuStreamSynchronize(stream);
  std::vector<uint32_t> out(64, 0);
  ASSERT_EQ(overlap_memcpy(ctx, 0, -1, out.data(), second, 64 * 4),
            OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_stream_synchronize(ctx, 0), OVERLAP_SUCCESS);
  for (uint32_t i = 0; i < 64; ++i)
    ASSERT_EQ(out[i], 1000 + i);
  mgpuModuleUnload(module);
  mgpuMemFree(buffer, stream);
  mgpuMemFree(second, stream);
  void *own = mgpuStreamCreate();
  EXPECT_NE(own, nullptr);
  mgpuStreamDestroy(own);
}

} // namespace
