//===- CudaKnobsTest.cpp - The CUDA backend's performance knobs -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// CudaKnobs tests run everywhere: how the options resolve (fields, the
// environment, defaults, errors, callers built against the first, shorter
// struct), the SM budget (cuBLASLt's SM target and which GEMMs get it,
// NCCL's CTA limits, splits sharing their parent's resources), the
// zero-SM all-gather's decisions (the knob, which collectives, the window
// size, prerequisites, fallback reasons, the split configuration), the
// GEMM plan-cache keys and the description line. CudaKnobsDevice tests need a
// GPU and skip without one: GEMMs under each cache/autotune setting against
// a double reference, stream-ordered memory and stream joins, a failed
// kernel launch reported by the next synchronize, an SM budget the device
// cannot give refused at creation.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "CudaTestSupport.h"
#include "TestHelpers.h"
#include "ZeroSmSetup.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace overlap::cuda;
using namespace overlap::test;

namespace {

/// Sets an environment variable for the scope.
struct Env {
  std::string name;
  Env(const char *n, const char *value) : name(n) { setenv(n, value, 1); }
  ~Env() { unsetenv(name.c_str()); }
};

Options resolved(const overlap_cuda_options *opts,
                 std::string *error = nullptr) {
  Options out;
  std::string why;
  bool ok = resolveOptions(opts, out, why);
  if (error)
    *error = ok ? "" : why;
  else
    EXPECT_TRUE(ok) << why;
  return out;
}

/// The knobs of `o` these tests set: SMs kept for communication, then
/// whether communication runs at high priority, device-memory flags, the
/// GEMM plan cache, the autotune count and stream-ordered allocation.
using Knobs = std::tuple<int, bool, bool, bool, int, bool>;
Knobs knobsOf(const Options &o) {
  return {o.commSms,   o.commPriority, o.deviceFlags,
          o.gemmCache, o.gemmAutotune, o.streamOrderedAlloc};
}

TEST(CudaKnobs, Defaults) {
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  EXPECT_EQ(opts.comm_sms, OVERLAP_CUDA_COMM_SMS_DEFAULT);
  EXPECT_EQ(opts.comm_priority, OVERLAP_CUDA_KNOB_DEFAULT);
  Options o = resolved(&opts);
  EXPECT_EQ(knobsOf(o),
            Knobs(OVERLAP_CUDA_DEFAULT_COMM_SMS, true, true, true, 1, true));
  // A null options pointer means the same.
  Options none = resolved(nullptr);
  EXPECT_EQ(none.commSms, o.commSms);
  EXPECT_EQ(none.deviceFlags, o.deviceFlags);
}

TEST(CudaKnobs, FieldsWinOverTheEnvironment) {
  Env a("OVERLAP_COMM_SMS", "20"), b("OVERLAP_COMM_PRIORITY", "high"),
      c("OVERLAP_CUDA_FLAGS", "device"), d("OVERLAP_GEMM_CACHE", "on"),
      e("OVERLAP_GEMM_AUTOTUNE", "4"), f("OVERLAP_CUDA_ALLOC", "pool");
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  opts.comm_sms = 0; // "no reservation", not "the default"
  opts.comm_priority = OVERLAP_CUDA_KNOB_OFF;
  opts.device_flags = OVERLAP_CUDA_KNOB_OFF;
  opts.gemm_cache = OVERLAP_CUDA_KNOB_OFF;
  opts.gemm_autotune = 2;
  opts.stream_ordered_alloc = OVERLAP_CUDA_KNOB_OFF;
  EXPECT_EQ(knobsOf(resolved(&opts)), Knobs(0, false, false, false, 2, false));
}

TEST(CudaKnobs, TheEnvironmentFillsDefaults) {
  Env a("OVERLAP_COMM_SMS", "0"), b("OVERLAP_COMM_PRIORITY", "normal"),
      c("OVERLAP_CUDA_FLAGS", "host"), d("OVERLAP_GEMM_CACHE", "off"),
      e("OVERLAP_GEMM_AUTOTUNE", "8"), f("OVERLAP_CUDA_ALLOC", "sync");
  EXPECT_EQ(knobsOf(resolved(nullptr)),
            Knobs(0, false, false, false, 8, false));
}

TEST(CudaKnobs, MalformedValuesNameTheirSource) {
  struct Case {
    const char *variable, *value, *expect;
  } cases[] = {
      {"OVERLAP_COMM_SMS", "-3", "OVERLAP_COMM_SMS"},
      {"OVERLAP_COMM_SMS", "lots", "OVERLAP_COMM_SMS"},
      {"OVERLAP_COMM_PRIORITY", "urgent",
       "OVERLAP_COMM_PRIORITY must be high "
       "or normal, got 'urgent'"},
      {"OVERLAP_CUDA_FLAGS", "pinned",
       "OVERLAP_CUDA_FLAGS must be device or "
       "host"},
      {"OVERLAP_GEMM_CACHE", "1", "OVERLAP_GEMM_CACHE must be on or off"},
      {"OVERLAP_GEMM_AUTOTUNE", "0", "OVERLAP_GEMM_AUTOTUNE"},
      {"OVERLAP_GEMM_AUTOTUNE", "17", "OVERLAP_GEMM_AUTOTUNE"},
      {"OVERLAP_CUDA_ALLOC", "async",
       "OVERLAP_CUDA_ALLOC must be pool or "
       "sync"},
  };
  for (const Case &c : cases) {
    Env env(c.variable, c.value);
    std::string error;
    resolved(nullptr, &error);
    EXPECT_NE(error.find(c.expect), std::string::npos)
        << c.variable << "=" << c.value << ": " << error;
  }
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  opts.comm_sms = -7;
  std::string error;
  resolved(&opts, &error);
  EXPECT_NE(error.find("comm_sms must be in [0, 1024]"), std::string::npos)
      << error;
  overlap_cuda_options_init(&opts);
  opts.device_flags = 9;
  resolved(&opts, &error);
  EXPECT_NE(error.find("device_flags must be"), std::string::npos) << error;
  overlap_cuda_options_init(&opts);
  opts.gemm_autotune = 17;
  resolved(&opts, &error);
  EXPECT_NE(error.find("gemm_autotune must be in [0, 16]"), std::string::npos)
      << error;
}

TEST(CudaKnobs, WaitTimeoutHasTheHostLimit) {
  // 9.2e12 ms overflowed a deadline in nanoseconds (and the spin-wait
  // kernel's timeout); the backends share one rule and one limit.
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  opts.wait_timeout_ms = 9200000000000;
  std::string error;
  resolved(&opts, &error);
  EXPECT_EQ(error, "wait_timeout_ms is 9200000000000, expected 0 (the "
                   "default) to 1000000000 ms (OVERLAP_MAX_WAIT_TIMEOUT_MS)");
  opts.wait_timeout_ms = OVERLAP_MAX_WAIT_TIMEOUT_MS;
  EXPECT_EQ(resolved(&opts).waitTimeoutMs, OVERLAP_MAX_WAIT_TIMEOUT_MS);
  opts.wait_timeout_ms = 0;
  {
    Env env("OVERLAP_WAIT_TIMEOUT_MS", "9200000000000");
    resolved(&opts, &error);
    EXPECT_EQ(error, "OVERLAP_WAIT_TIMEOUT_MS must be a positive integer of "
                     "at most 1000000000 (ms)");
  }
  EXPECT_EQ(resolved(&opts).waitTimeoutMs, 10000);
}

/// A caller compiled against the first struct (up to gemm_loop_broadcast)
/// zeroes only what it has: the new fields take their defaults, so its
/// zero-filled memory beyond does not mean comm_sms = 0.
TEST(CudaKnobs, OldShortStructGetsTheNewDefaults) {
  overlap_cuda_options opts;
  std::memset(&opts, 0, sizeof(opts));
  opts.struct_size = offsetof(overlap_cuda_options, comm_sms);
  opts.comm_sms = 0;
  opts.device_flags = OVERLAP_CUDA_KNOB_OFF; // beyond struct_size: ignored
  opts.sync = OVERLAP_CUDA_SYNC_SPIN;
  Options o = resolved(&opts);
  EXPECT_EQ(o.commSms, OVERLAP_CUDA_DEFAULT_COMM_SMS);
  EXPECT_TRUE(o.deviceFlags);
  EXPECT_EQ(o.sync, OVERLAP_CUDA_SYNC_SPIN);
  opts.struct_size = 8;
  std::string error;
  resolved(&opts, &error);
  EXPECT_NE(error.find("struct_size is 8"), std::string::npos) << error;
}

TEST(CudaKnobs, GemmSmTarget) {
  EXPECT_EQ(gemmSmTarget(132, 16), 116);
  EXPECT_EQ(gemmSmTarget(132, 0), 0);   // no reservation: attribute unset
  EXPECT_EQ(gemmSmTarget(0, 16), 0);    // unknown SM count
  EXPECT_EQ(gemmSmTarget(8, 8), 1);     // never below one SM
  EXPECT_EQ(gemmSmTarget(114, 20), 94); // H100 PCIe
}

TEST(CudaKnobs, SmTargetOnlyForTileGemms) {
  // A tile of a decomposed op (tile >= 0) may run while communication is in
  // flight: it leaves comm_sms free. A GEMM that runs alone (tile -1: the
  // serial baseline, "GEMM alone", a GEMM outside an overlapped region)
  // gets every SM.
  EXPECT_EQ(gemmSmTargetFor(0, 116, 8), 116);
  EXPECT_EQ(gemmSmTargetFor(7, 116, 2), 116);
  EXPECT_EQ(gemmSmTargetFor(-1, 116, 8), 0);
  EXPECT_EQ(gemmSmTargetFor(3, 0, 8), 0); // no reservation: never a target
}

TEST(CudaKnobs, NoSmTargetOnOneRank) {
  // A one-rank world (a reference, a single-GPU run) has no communication
  // that needs SMs beside its GEMMs: tile GEMMs get every SM there too.
  EXPECT_EQ(gemmSmTargetFor(0, 116, 1), 0);
  EXPECT_EQ(gemmSmTargetFor(5, 116, 1), 0);
  EXPECT_EQ(gemmSmTargetFor(-1, 116, 1), 0);
  EXPECT_EQ(gemmSmTargetFor(5, 116, 2), 116);
}

TEST(CudaKnobs, NcclConfigFollowsTheBudget) {
  ncclConfig_t none = ncclConfigFor(0);
  EXPECT_EQ(none.minCTAs, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(none.maxCTAs, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(none.cgaClusterSize, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(none.blocking, 1);
  EXPECT_EQ(none.size, sizeof(ncclConfig_t));
  ncclConfig_t c16 = ncclConfigFor(16);
  EXPECT_EQ(c16.minCTAs, 1);
  EXPECT_EQ(c16.maxCTAs, 16);
  EXPECT_EQ(c16.cgaClusterSize, 4);
  EXPECT_EQ(c16.magic, 0xcafebeefu); // still a valid initializer
  EXPECT_EQ(ncclConfigFor(6).cgaClusterSize, 2);
  EXPECT_EQ(ncclConfigFor(5).cgaClusterSize, 1);
  EXPECT_EQ(ncclConfigFor(5).maxCTAs, 5);
  // NCCL decides sharing from the parent's config: the world a context
  // creates (bootstrap) asks for it, and so do its splits (whose children
  // may split again).
  EXPECT_EQ(c16.splitShare, 1);
  EXPECT_EQ(none.splitShare, 1);
  for (int sms : {0, 16}) {
    ncclConfig_t split = ncclSplitConfigFor(sms);
    ncclConfig_t plain = ncclConfigFor(sms);
    EXPECT_EQ(split.splitShare, 1);
    EXPECT_EQ(split.maxCTAs, plain.maxCTAs);
    EXPECT_EQ(split.minCTAs, plain.minCTAs);
    EXPECT_EQ(split.cgaClusterSize, plain.cgaClusterSize);
    EXPECT_EQ(split.blocking, 1);
    EXPECT_EQ(split.magic, 0xcafebeefu);
  }
}

TEST(CudaKnobs, NcclCtaCapIsAKnob) {
  // On (the default): the communicators get the budget's CTA limits.
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  opts.comm_sms = 16;
  Options on = resolved(&opts);
  EXPECT_TRUE(on.ncclCtaCap);
  EXPECT_EQ(ncclConfigFor(on).maxCTAs, 16);
  EXPECT_EQ(ncclConfigFor(on).minCTAs, 1);
  EXPECT_EQ(ncclSplitConfigFor(on).maxCTAs, 16);
  // Off: NCCL's own choice, while the GEMMs keep their SM budget.
  opts.nccl_cta_cap = OVERLAP_CUDA_KNOB_OFF;
  Options off = resolved(&opts);
  EXPECT_FALSE(off.ncclCtaCap);
  EXPECT_EQ(off.commSms, 16);
  for (ncclConfig_t c : {ncclConfigFor(off), ncclSplitConfigFor(off)}) {
    EXPECT_EQ(c.maxCTAs, NCCL_CONFIG_UNDEF_INT);
    EXPECT_EQ(c.minCTAs, NCCL_CONFIG_UNDEF_INT);
    EXPECT_EQ(c.cgaClusterSize, NCCL_CONFIG_UNDEF_INT);
    EXPECT_EQ(c.blocking, 1);
  }
  EXPECT_EQ(ncclSplitConfigFor(off).splitShare, 1);
  // No budget: no cap either way.
  on.commSms = 0;
  EXPECT_EQ(ncclConfigFor(on).maxCTAs, NCCL_CONFIG_UNDEF_INT);
  // The environment, and its errors.
  opts.nccl_cta_cap = OVERLAP_CUDA_KNOB_DEFAULT;
  {
    Env env("OVERLAP_NCCL_CTA_CAP", "off");
    EXPECT_FALSE(resolved(&opts).ncclCtaCap);
  }
  {
    Env env("OVERLAP_NCCL_CTA_CAP", "always");
    std::string error;
    resolved(&opts, &error);
    EXPECT_EQ(error, "OVERLAP_NCCL_CTA_CAP must be on or off, got 'always'");
  }
  // A caller built before the field existed gets the cap.
  opts.nccl_cta_cap = OVERLAP_CUDA_KNOB_OFF;
  opts.struct_size = offsetof(overlap_cuda_options, nccl_cta_cap);
  EXPECT_TRUE(resolved(&opts).ncclCtaCap);
  opts.struct_size = sizeof(opts);
  opts.nccl_cta_cap = 7;
  std::string error;
  resolved(&opts, &error);
  EXPECT_NE(error.find("nccl_cta_cap must be"), std::string::npos) << error;
}

TEST(CudaKnobs, ZeroSmAllGatherIsAKnob) {
  // Off by default: never measured.
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  EXPECT_FALSE(resolved(&opts).zeroSmAllGather);
  opts.zero_sm_all_gather = OVERLAP_CUDA_KNOB_ON;
  EXPECT_TRUE(resolved(&opts).zeroSmAllGather);
  {
    // The field wins over the environment.
    Env env("OVERLAP_ZERO_SM_ALL_GATHER", "on");
    opts.zero_sm_all_gather = OVERLAP_CUDA_KNOB_OFF;
    EXPECT_FALSE(resolved(&opts).zeroSmAllGather);
    opts.zero_sm_all_gather = OVERLAP_CUDA_KNOB_DEFAULT;
    EXPECT_TRUE(resolved(&opts).zeroSmAllGather);
  }
  {
    Env env("OVERLAP_ZERO_SM_ALL_GATHER", "off");
    opts.zero_sm_all_gather = OVERLAP_CUDA_KNOB_ON;
    EXPECT_TRUE(resolved(&opts).zeroSmAllGather);
  }
  {
    Env env("OVERLAP_ZERO_SM_ALL_GATHER", "yes");
    opts.zero_sm_all_gather = OVERLAP_CUDA_KNOB_DEFAULT;
    std::string error;
    resolved(&opts, &error);
    EXPECT_EQ(error, "OVERLAP_ZERO_SM_ALL_GATHER must be on or off, got 'yes'");
  }
  opts.zero_sm_all_gather = 3;
  std::string error;
  resolved(&opts, &error);
  EXPECT_NE(error.find("zero_sm_all_gather must be"), std::string::npos)
      << error;
  // A caller built before the field existed gets it off, whatever lies
  // beyond its struct.
  opts.zero_sm_all_gather = OVERLAP_CUDA_KNOB_ON;
  opts.struct_size = offsetof(overlap_cuda_options, zero_sm_all_gather);
  EXPECT_FALSE(resolved(&opts).zeroSmAllGather);
  // The description says it.
  Options o;
  EXPECT_NE(describeOptions(o, 132, 116, 0, 0).find("zero-sm all-gather off"),
            std::string::npos);
  o.zeroSmAllGather = true;
  EXPECT_NE(describeOptions(o, 132, 116, 0, 0).find("zero-sm all-gather on"),
            std::string::npos);
}

TEST(CudaKnobs, InitTimeout) {
  // overlap.jax.jit bounds NCCL's init of its rank's context through this
  // field (0: the creation function's own bound).
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  EXPECT_EQ(opts.init_timeout_ms, 0);
  EXPECT_EQ(resolved(&opts).initTimeoutMs, 0);
  opts.init_timeout_ms = 600000;
  EXPECT_EQ(resolved(&opts).initTimeoutMs, 600000);
  opts.init_timeout_ms = -1;
  std::string error;
  resolved(&opts, &error);
  EXPECT_NE(error.find("init_timeout_ms is negative"), std::string::npos)
      << error;
  // A caller built before the field existed gets the default.
  opts.init_timeout_ms = 5;
  opts.struct_size = offsetof(overlap_cuda_options, init_timeout_ms);
  EXPECT_EQ(resolved(&opts).initTimeoutMs, 0);
}

TEST(CudaKnobs, ZeroSmAllGatherOnlyServesAllGathers) {
  using overlap::runtime::CollectiveKind;
  EXPECT_TRUE(zeroSmAppliesTo(CollectiveKind::AllGather));
  // NCCL's zero-CTA policy runs no reduction; all-to-all is not ours to
  // move (unmeasured), and a barrier is one word.
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
        CollectiveKind::AllToAll, CollectiveKind::Barrier,
        CollectiveKind::Shift})
    EXPECT_FALSE(zeroSmAppliesTo(kind)) << int(kind);
}

TEST(CudaKnobs, ZeroSmWindowSize) {
  // The gathered output, rounded up to NCCL's window alignment (4096).
  EXPECT_EQ(NCCL_WIN_REQUIRED_ALIGNMENT, 4096);
  EXPECT_EQ(zeroSmWindowBytes(8, 1024, 2), size_t(16384)); // exact
  EXPECT_EQ(zeroSmWindowBytes(8, 1000, 2), size_t(16384)); // 16000 up
  EXPECT_EQ(zeroSmWindowBytes(1, 1, 4), size_t(4096));     // one word
  EXPECT_EQ(zeroSmWindowBytes(3, 4097, 1), size_t(16384)); // 12291 up
  EXPECT_EQ(zeroSmWindowBytes(8, 2048 * 1024, 2), size_t(32) << 20);
  // Every rank computes the same size from the same arguments: the windows
  // line up. Nothing to register, or a size that overflows: 0.
  EXPECT_EQ(zeroSmWindowBytes(0, 16, 2), size_t(0));
  EXPECT_EQ(zeroSmWindowBytes(8, 0, 2), size_t(0));
  EXPECT_EQ(zeroSmWindowBytes(8, SIZE_MAX / 4, 2), size_t(0));
  EXPECT_EQ(zeroSmWindowBytes(2, SIZE_MAX / 2, 1), size_t(0));
}

TEST(CudaKnobs, ZeroSmPrerequisitesAndReasons) {
  EXPECT_EQ(zeroSmPrerequisiteProblem(22809, 22809, 13000), "");
  EXPECT_EQ(zeroSmPrerequisiteProblem(22800, 22900, 12050), "");
  EXPECT_EQ(zeroSmPrerequisiteProblem(22703, 22809, 13000),
            "built against NCCL 2.27.3, which has no zero-CTA policy (needs "
            "2.28 or later)");
  EXPECT_EQ(zeroSmPrerequisiteProblem(2804, 22809, 13000).substr(0, 26),
            "built against NCCL 2.8.4, ");
  EXPECT_EQ(zeroSmPrerequisiteProblem(22809, 22605, 13000),
            "NCCL 2.26.5 is loaded; the zero-CTA policy needs 2.28 or later");
  EXPECT_EQ(zeroSmPrerequisiteProblem(22809, 22809, 12040),
            "CUDA driver 12.4; NCCL's copy-engine collectives need 12.5 or "
            "later");
  // One node: every rank's host key equal; the key is 31 bits (a min
  // all-reduce of it and of its negation gives the range).
  EXPECT_EQ(zeroSmNodeKey("gpu-node-1"), zeroSmNodeKey("gpu-node-1"));
  EXPECT_NE(zeroSmNodeKey("gpu-node-1"), zeroSmNodeKey("gpu-node-2"));
  EXPECT_GE(zeroSmNodeKey("gpu-node-1"), 0);
  EXPECT_EQ(zeroSmLocalityProblem(17, 17), "");
  EXPECT_EQ(zeroSmLocalityProblem(zeroSmNodeKey("a"), zeroSmNodeKey("b"))
                .substr(0, 44),
            "the group's ranks are on several nodes: NCCL");
  EXPECT_EQ(zeroSmFallbackReason("ncclMemAlloc(16384 bytes)",
                                 "it failed on another rank"),
            "ncclMemAlloc(16384 bytes) failed: it failed on another rank; "
            "plain ncclAllGather");
}

TEST(CudaKnobs, ZeroSmSplitConfig) {
  ncclConfig_t none = zeroSmSplitConfig(0);
  EXPECT_EQ(none.magic, 0xcafebeefu);
  EXPECT_EQ(none.size, sizeof(ncclConfig_t));
  EXPECT_EQ(none.blocking, 1);
  EXPECT_EQ(none.splitShare, 1);
  EXPECT_EQ(none.CTAPolicy, NCCL_CTA_POLICY_ZERO);
  EXPECT_EQ(none.minCTAs, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(none.maxCTAs, NCCL_CONFIG_UNDEF_INT);
  // NCCL runs zero CTAs only where it can: the CTAs it runs elsewhere are
  // capped by the budget, as on every other communicator. No minimum.
  ncclConfig_t c16 = zeroSmSplitConfig(16);
  EXPECT_EQ(c16.CTAPolicy, NCCL_CTA_POLICY_ZERO);
  EXPECT_EQ(c16.maxCTAs, 16);
  EXPECT_EQ(c16.cgaClusterSize, 4);
  EXPECT_EQ(c16.minCTAs, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(zeroSmSplitConfig(6).cgaClusterSize, 2);
  // From the options: the cap follows comm_sms and nccl_cta_cap.
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  opts.comm_sms = 20;
  EXPECT_EQ(zeroSmSplitConfig(resolved(&opts)).maxCTAs, 20);
  EXPECT_EQ(zeroSmSplitConfig(resolved(&opts)).maxCTAs,
            ncclSplitConfigFor(resolved(&opts)).maxCTAs);
  opts.nccl_cta_cap = OVERLAP_CUDA_KNOB_OFF;
  EXPECT_EQ(zeroSmSplitConfig(resolved(&opts)).maxCTAs, NCCL_CONFIG_UNDEF_INT);
}

/// The ranks of one group running the zero-SM set-up (ZeroSmSetup.h) over
/// fakes, one thread each. A collective is a rendezvous of every rank
/// that checks they all make the same call (and gives the min of their
/// values); a rank that would make another call, or none, shows as a
/// mismatch or a hang (a rendezvous not met within 5 s).
class FakeGroup {
public:
  explicit FakeGroup(int ranks) : ranks(ranks) {}
  const int ranks;
  std::vector<std::string> problems; // "mismatch ..." or "hang ..."

  /// Every rank calls with the same `what`; returns the least `value`.
  bool collective(const std::string &what, int value, int &lowest) {
    std::unique_lock<std::mutex> lock(mutex);
    const long round = generation;
    if (arrived == 0) {
      first = what;
      least = value;
    } else {
      if (what != first)
        problems.push_back("mismatch: " + first + " and " + what);
      least = std::min(least, value);
    }
    if (++arrived == ranks) {
      result = least;
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else if (!cv.wait_for(lock, std::chrono::seconds(5),
                            [&] { return generation != round; })) {
      problems.push_back("hang: " + what);
      return false;
    }
    lowest = result;
    return true;
  }

private:
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  long generation = 0;
  std::string first;
  int least = 0, result = 0;
};

/// One rank's steps; `failing` names the step that fails on this rank.
class FakeSteps : public ZeroSmSetupSteps {
public:
  FakeSteps(FakeGroup &group, std::string failing, int node = 7)
      : group(group), failing(std::move(failing)), node(node) {}
  std::vector<std::string> calls; // collectives and local decisions
  std::string reason;

  std::string prerequisiteProblem() override {
    return failing == "prerequisite" ? "CUDA driver 12.4" : "";
  }
  int nodeKey() override { return node; }
  ZeroSmStep agreeMin(int value, int &lowest, std::string &) override {
    calls.push_back("agree");
    return group.collective("agree", value, lowest) ? ZeroSmStep::Done
                                                    : ZeroSmStep::Fatal;
  }
  ZeroSmStep split(std::string &error) override {
    return collectiveStep("split", error);
  }
  void keepSplit() override { calls.push_back("keep split"); }
  void strandSplit() override { calls.push_back("strand split"); }
  ZeroSmStep drainOldWindow() override { return ZeroSmStep::Done; }
  ZeroSmStep deregisterOldWindow(std::string &error) override {
    return collectiveStep("deregister", error);
  }
  void freeOldBuffer() override { calls.push_back("free old"); }
  ZeroSmStep allocate(size_t, std::string &error) override {
    if (failing == "allocate") {
      error = "out of memory";
      return ZeroSmStep::Failed;
    }
    return ZeroSmStep::Done;
  }
  void freeAllocation() override { calls.push_back("free new"); }
  ZeroSmStep registerWindow(std::string &error) override {
    return collectiveStep("register", error);
  }
  void keepWindow(size_t) override { calls.push_back("keep window"); }
  void markBroken() override { calls.push_back("broken"); }
  void disable(const std::string &why) override {
    calls.push_back("disable");
    reason = why;
  }

  /// The all-gather the rank then makes: on the zero-CTA communicator when
  /// the set-up is ready, on the group's otherwise.
  void allGather(ZeroSmSetUp setUp) {
    int ignored = 0;
    group.collective(setUp == ZeroSmSetUp::Ready ? "ncclAllGather (zero-CTA)"
                                                 : "ncclAllGather (group)",
                     0, ignored);
  }

private:
  ZeroSmStep collectiveStep(const char *what, std::string &error) {
    calls.push_back(what);
    int ignored = 0;
    if (!group.collective(what, 0, ignored))
      return ZeroSmStep::Fatal;
    if (failing != what)
      return ZeroSmStep::Done;
    error = std::string(what) + " failed";
    return ZeroSmStep::Failed;
  }
  FakeGroup &group;
  std::string failing;
  int node;
};

/// Runs the set-up of a communicator and then of a window that replaces
/// an old one on `ranks` fake ranks, rank `failingRank` failing at
/// `failing`; then every rank all-gathers. The results by rank.
std::vector<ZeroSmSetUp> runSetUp(int ranks, int failingRank,
                                  const std::string &failing,
                                  std::vector<FakeSteps> &steps,
                                  FakeGroup &group) {
  for (int r = 0; r < ranks; ++r)
    steps.emplace_back(group, r == failingRank ? failing : "");
  std::vector<ZeroSmSetUp> results(size_t(ranks), ZeroSmSetUp::Fatal);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      FakeSteps &s = steps[size_t(r)];
      ZeroSmSetUp got = zeroSmSetUpCommunicator(s);
      if (got == ZeroSmSetUp::Ready)
        got = zeroSmSetUpWindow(s, 4096, /*replacing=*/true);
      results[size_t(r)] = got;
      s.allGather(got);
    });
  for (std::thread &t : threads)
    t.join();
  return results;
}

TEST(CudaKnobs, ZeroSmFallbacksAreCollective) {
  // Each step that may fail on one rank alone: that rank and every other
  // make the same collectives and end on the same path. (Before, a failed
  // prerequisite check or deregistration on one rank disabled the path on
  // that rank only: it called ncclAllGather on the group's communicator
  // while the others agreed, split or gathered on another: a hang.)
  for (const char *failing :
       {"", "prerequisite", "split", "deregister", "allocate", "register"}) {
    SCOPED_TRACE(failing);
    const int ranks = 4;
    FakeGroup group(ranks);
    std::vector<FakeSteps> steps;
    steps.reserve(ranks);
    std::vector<ZeroSmSetUp> results =
        runSetUp(ranks, 2, failing, steps, group);
    EXPECT_EQ(group.problems, std::vector<std::string>{});
    const ZeroSmSetUp expected = std::string(failing).empty()
                                     ? ZeroSmSetUp::Ready
                                     : ZeroSmSetUp::FellBack;
    for (int r = 0; r < ranks; ++r)
      EXPECT_EQ(results[size_t(r)], expected) << "rank " << r;
    if (expected == ZeroSmSetUp::FellBack) {
      EXPECT_NE(steps[2].reason.find("plain ncclAllGather"), std::string::npos)
          << steps[2].reason;
      EXPECT_NE(steps[0].reason.find("plain ncclAllGather"), std::string::npos)
          << steps[0].reason;
    }
  }
}

TEST(CudaKnobs, ZeroSmFailedStepsNeverAbortASharedChild) {
  // A split made here but not everywhere is stranded, never aborted: the
  // child shares its parent's abort flag (splitShare), so an abort would
  // take the group and the world with it.
  {
    FakeGroup group(3);
    std::vector<FakeSteps> steps;
    steps.reserve(3);
    runSetUp(3, 1, "split", steps, group);
    EXPECT_EQ(steps[0].calls,
              (std::vector<std::string>{"agree", "agree", "agree", "split",
                                        "agree", "strand split", "disable"}));
    EXPECT_EQ(steps[1].calls,
              (std::vector<std::string>{"agree", "agree", "agree", "split",
                                        "agree", "disable"}));
  }
  // A registration that failed somewhere leaves the communicator broken;
  // in a context that goes on, a broken one is stranded at release (not
  // aborted, not deregistered). Only a failed context aborts (it aborts
  // the parents too).
  {
    FakeGroup group(2);
    std::vector<FakeSteps> steps;
    steps.reserve(2);
    runSetUp(2, 0, "register", steps, group);
    for (const FakeSteps &s : steps)
      EXPECT_EQ(std::count(s.calls.begin(), s.calls.end(), "broken"), 1);
  }
  EXPECT_EQ(zeroSmReleaseAction(false, false), ZeroSmRelease::Destroy);
  EXPECT_EQ(zeroSmReleaseAction(false, true), ZeroSmRelease::Strand);
  EXPECT_EQ(zeroSmReleaseAction(true, false), ZeroSmRelease::Abort);
  EXPECT_EQ(zeroSmReleaseAction(true, true), ZeroSmRelease::Abort);
}

TEST(CudaKnobs, ZeroSmOneNodeCheckMakesBothAgreements) {
  // Ranks on two nodes fall back together after the same two agreements.
  const int ranks = 2;
  FakeGroup group(ranks);
  std::vector<FakeSteps> steps;
  steps.emplace_back(group, "", 3);
  steps.emplace_back(group, "", 9);
  std::vector<ZeroSmSetUp> results(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      results[size_t(r)] = zeroSmSetUpCommunicator(steps[size_t(r)]);
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(group.problems, std::vector<std::string>{});
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(results[size_t(r)], ZeroSmSetUp::FellBack);
    EXPECT_EQ(steps[size_t(r)].calls,
              (std::vector<std::string>{"agree", "agree", "agree", "disable"}));
    EXPECT_NE(steps[size_t(r)].reason.find("several nodes"), std::string::npos);
  }
}

overlap::runtime::GemmArgs gemmArgs(void *base) {
  char *p = static_cast<char *>(base);
  return {3,        64, 32, 48, OVERLAP_F16, OVERLAP_F32, p,      p + 4096,
          p + 8192, 48, 32, 32, 64 * 48,     0,           64 * 32};
}

TEST(CudaKnobs, GemmCacheKeys) {
  alignas(256) static char memory[1 << 16];
  overlap::runtime::GemmArgs g = gemmArgs(memory);
  GemmKey key = gemmKey(g, 3, 0);
  // The same shape at other addresses of the same alignment: one plan.
  overlap::runtime::GemmArgs moved = gemmArgs(memory + 256);
  EXPECT_EQ(gemmKey(moved, 3, 0), key);
  // The SM target is an attribute of the matmul descriptor: a tile GEMM
  // and a GEMM alone of the same shape are two plans, and each target
  // its own.
  EXPECT_NE(gemmKey(g, 3, 116), key);
  EXPECT_NE(gemmKey(g, 3, 116), gemmKey(g, 3, 100));
  EXPECT_EQ(gemmKey(moved, 3, 116), gemmKey(g, 3, 116));
  // Each part of the shape, the types, the batch, a stride and the
  // alignment make another plan.
  std::vector<overlap::runtime::GemmArgs> others(9, g);
  others[0].m = 65;
  others[1].n = 33;
  others[2].k = 49;
  others[3].lda = 64;
  others[4].ldc = 40;
  others[5].strideB = 48 * 32;
  others[6].cType = OVERLAP_F16;
  others[7].abType = OVERLAP_BF16;
  others[8].a = memory + 2; // 2-byte aligned A
  for (size_t i = 0; i < others.size(); ++i)
    EXPECT_NE(gemmKey(others[i], 3, 0), key) << "variant " << i;
  EXPECT_NE(gemmKey(g, 1, 0), key);
  // Unbatched GEMMs ignore the batch strides.
  overlap::runtime::GemmArgs single = g;
  single.strideA = 12345;
  EXPECT_EQ(gemmKey(single, 1, 0), gemmKey(g, 1, 0));
  EXPECT_EQ(pointerAlignment(memory + 8), 8u);
  EXPECT_EQ(pointerAlignment(memory + 32), 16u);
  EXPECT_EQ(pointerAlignment(memory + 3), 1u);
}

TEST(CudaKnobs, DescriptionNamesEveryKnob) {
  Options o;
  o.commSms = 16;
  o.deviceFlags = false;
  o.gemmAutotune = 4;
  std::string text = describeOptions(o, 132, 116, -5, 0);
  for (const char *part :
       {"sms 132", "comm_sms 16", "gemm sm target 116", "comm priority high",
        "(-5 vs compute 0)", "flags host", "sync memop", "gemm cache on",
        "gemm autotune 4", "alloc pool", "nccl cta cap on"})
    EXPECT_NE(text.find(part), std::string::npos) << part << " in " << text;
  o.commSms = 0;
  EXPECT_NE(describeOptions(o, 132, 0, 0, 0).find("gemm sm target unset"),
            std::string::npos);
}

// What a profile's provenance and a CSV's runtime line say of the software:
// CUDA's codes (13000 = 13.0, 12080 = 12.8), NCCL's two encodings, and
// cuBLASLt's, each "unknown" when the call failed.
TEST(CudaKnobs, VersionsLine) {
  EXPECT_EQ(describeVersions(13000, 12080, 22809, 22803, 130100),
            "driver 13.0, CUDA runtime 12.8, NCCL 2.28.9 (built with 2.28.3), "
            "cuBLASLt 13.1.0");
  EXPECT_EQ(describeVersions(0, -1, 2804, 0, 0),
            "driver unknown, CUDA runtime unknown, NCCL 2.8.4 (built with "
            "unknown), cuBLASLt unknown");
}

//===----------------------------------------------------------------------===//
// With a device
//===----------------------------------------------------------------------===//

class CudaKnobsDevice : public NeedsCudaDevice {
protected:
  void TearDown() override {
    if (ctx)
      overlap_cuda_context_destroy(ctx);
  }
  void make(const overlap_cuda_options &opts) {
    ASSERT_EQ(overlap_cuda_context_create_single(0, &opts, &ctx),
              OVERLAP_SUCCESS)
        << overlap_cuda_create_error();
  }
  static overlap_cuda_options defaults() {
    overlap_cuda_options opts;
    overlap_cuda_options_init(&opts);
    opts.wait_timeout_ms = 5000;
    return opts;
  }
  overlap_context *ctx = nullptr;
};

/// C[b] += A[b] B (B broadcast, f16 in, f32 out) three times against a
/// double reference: tiles 0 and 1 (the second takes the cached plan, with
/// the SM target), then a GEMM alone (tile -1: every SM, a plan of its
/// own).
void checkGemm(overlap_context *ctx) {
  const int64_t batch = 3, m = 64, n = 32, k = 48;
  Buffer a(OVERLAP_F16, batch * m * k), b(OVERLAP_F16, k * n),
      c(OVERLAP_F32, batch * m * n);
  a.randomize(1);
  b.randomize(2);
  c.randomize(3);
  void *da = nullptr, *db = nullptr, *dc = nullptr;
  ASSERT_EQ(overlap_alloc(ctx, a.size() * 2, &da), OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_alloc(ctx, b.size() * 2, &db), OVERLAP_SUCCESS);
  ASSERT_EQ(overlap_alloc(ctx, c.size() * 4, &dc), OVERLAP_SUCCESS);
  overlap_memcpy(ctx, 0, -1, da, a.data(), a.size() * 2);
  overlap_memcpy(ctx, 0, -1, db, b.data(), b.size() * 2);
  overlap_memcpy(ctx, 0, -1, dc, c.data(), c.size() * 4);
  const int64_t tiles[] = {0, 1, -1};
  for (int64_t tile : tiles)
    ASSERT_EQ(overlap_gemm(ctx, 0, tile, batch, m, n, k, OVERLAP_F16, da, k,
                           m * k, db, n, 0, OVERLAP_F32, dc, n, m * n, 0),
              OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
  Buffer out(OVERLAP_F32, c.size());
  overlap_memcpy(ctx, 0, -1, out.data(), dc, c.size() * 4);
  ASSERT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS)
      << overlap_last_error(ctx);
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double ref = c.get(size_t((i * m + r) * n + j));
        for (size_t call = 0; call < std::size(tiles); ++call)
          for (int64_t l = 0; l < k; ++l)
            ref += double(a.get(size_t((i * m + r) * k + l))) *
                   double(b.get(size_t(l * n + j)));
        ASSERT_NEAR(out.get(size_t((i * m + r) * n + j)), ref, 1e-3)
            << "batch " << i << " row " << r << " col " << j;
      }
  overlap_free(ctx, da);
  overlap_free(ctx, db);
  overlap_free(ctx, dc);
}

TEST_F(CudaKnobsDevice, GemmUnderEveryCacheSetting) {
  for (int cache : {OVERLAP_CUDA_KNOB_ON, OVERLAP_CUDA_KNOB_OFF})
    for (int autotune : {1, 4}) {
      overlap_cuda_options opts = defaults();
      opts.gemm_cache = cache;
      opts.gemm_autotune = autotune;
      opts.comm_sms = 8;
      make(opts);
      checkGemm(ctx);
      std::string report = overlap_cuda_gemm_report(ctx);
      EXPECT_NE(report.find("batch 3 m 64 n 32 k 48"), std::string::npos)
          << report;
      EXPECT_NE(report.find(autotune > 1 ? "#" : "heuristic #1"),
                std::string::npos)
          << report;
      // A budget of 8 SMs: the tiles ran under the target, the GEMM alone
      // on every SM.
      EXPECT_NE(report.find("sm target "), std::string::npos) << report;
      EXPECT_NE(report.find("every SM"), std::string::npos) << report;
      std::string settings = overlap_cuda_describe(ctx);
      EXPECT_NE(settings.find(cache == OVERLAP_CUDA_KNOB_ON ? "gemm cache on"
                                                            : "gemm cache off"),
                std::string::npos)
          << settings;
      overlap_cuda_context_destroy(ctx);
      ctx = nullptr;
    }
}

/// Stream-ordered buffers: written on the compute stream, read on the comm
/// stream after a join, freed in stream order; no host wait in between.
TEST_F(CudaKnobsDevice, StreamOrderedMemoryAndJoins) {
  for (int pool : {OVERLAP_CUDA_KNOB_ON, OVERLAP_CUDA_KNOB_OFF}) {
    overlap_cuda_options opts = defaults();
    opts.stream_ordered_alloc = pool;
    make(opts);
    const size_t n = 1 << 20;
    std::vector<float> in(n), out(n, -1.0f);
    for (size_t i = 0; i < n; ++i)
      in[i] = float(i % 1009);
    void *x = nullptr, *y = nullptr;
    ASSERT_EQ(overlap_alloc_async(ctx, -1, n * 4, &x), OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
    ASSERT_EQ(overlap_alloc_async(ctx, 1, n * 4, &y), OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_memcpy(ctx, 0, 0, x, in.data(), n * 4), OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_streams_join(ctx), OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_memcpy(ctx, 1, 0, y, x, n * 4), OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_free_async(ctx, -1, x), OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_memcpy(ctx, 1, 0, out.data(), y, n * 4), OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_free_async(ctx, 1, y), OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
    for (size_t i = 0; i < n; i += 4099)
      ASSERT_EQ(out[i], in[i]) << "element " << i;
    EXPECT_EQ(overlap_alloc_async(ctx, 2, 64, &x),
              OVERLAP_ERROR_INVALID_ARGUMENT);
    overlap_cuda_context_destroy(ctx);
    ctx = nullptr;
  }
}

TEST_F(CudaKnobsDevice, BudgetBeyondTheDeviceIsRefused) {
  overlap_cuda_options opts = defaults();
  opts.comm_sms = 1024;
  overlap_context *bad = nullptr;
  EXPECT_EQ(overlap_cuda_context_create_single(0, &opts, &bad),
            OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(std::string(overlap_cuda_create_error()).find("comm_sms is 1024"),
            std::string::npos)
      << overlap_cuda_create_error();
}

TEST_F(CudaKnobsDevice, MakeCurrentAndDescribe) {
  make(defaults());
  EXPECT_EQ(overlap_cuda_make_current(ctx), OVERLAP_SUCCESS);
  std::string settings = overlap_cuda_describe(ctx);
  EXPECT_NE(settings.find("comm_sms 16"), std::string::npos) << settings;
  EXPECT_NE(settings.find("flags device"), std::string::npos) << settings;
  EXPECT_EQ(overlap_cuda_comm_sms(ctx), OVERLAP_CUDA_DEFAULT_COMM_SMS);
  EXPECT_EQ(overlap_cuda_comm_sms(nullptr), -1);
  EXPECT_EQ(overlap_cuda_make_current(nullptr), OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_cuda_describe(nullptr), "");
}

const char *emptyPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry overlap_empty()
{
  ret;
}
)";

/// A launch the driver refuses (2048 threads per block) becomes the
/// context's error, naming the kernel, at the next synchronize; later
/// calls fail fast.
TEST_F(CudaKnobsDevice, FailedLaunchIsReportedByTheNextSynchronize) {
  make(defaults());
  void *stream = overlap_cuda_stream(ctx, OVERLAP_STREAM_COMM);
  void *module = mgpuModuleLoad(const_cast<char *>(emptyPtx), 0);
  ASSERT_NE(module, nullptr);
  void *function = mgpuModuleGetFunction(module, "overlap_empty");
  ASSERT_NE(function, nullptr);
  mgpuLaunchKernel(function, 1, 1, 1, 2048, 1, 1, 0, stream, nullptr, nullptr,
                   0);
  EXPECT_EQ(overlap_context_synchronize(ctx), OVERLAP_ERROR_BACKEND);
  std::string error = overlap_last_error(ctx);
  EXPECT_NE(error.find("overlap_empty"), std::string::npos) << error;
  EXPECT_NE(error.find("stream comm"), std::string::npos) << error;
  EXPECT_EQ(overlap_streams_join(ctx), OVERLAP_ERROR_BACKEND);
  mgpuModuleUnload(module);
}

} // namespace
