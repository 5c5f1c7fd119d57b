//===- Options.cpp - Options, SM budget, GEMM cache keys -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The parts of the CUDA backend that make no CUDA call, so that they are
// unit-tested on machines without a GPU: the options with their defaults
// and environment variables, the SM budget of communication (cuBLASLt's SM
// target and NCCL's CTA limits), the key of the GEMM plan cache and the
// one-line description of a context's settings.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

using namespace overlap;
using namespace overlap::cuda;

namespace {

/// A non-negative integer variable (decimal or 0x hex) as int64_t.
bool readEnvInt(const char *name, bool &present, int64_t &value) {
  uint64_t v = 0;
  if (!runtime::readEnvUnsigned(name, present, v) || v > uint64_t(INT64_MAX))
    return false;
  if (present)
    value = int64_t(v);
  return true;
}

/// An on/off knob: the field if set, else the variable (`on`/`off` spelled
/// as given), else `fallback`.
bool resolveKnob(int32_t field, const char *fieldName, const char *variable,
                 const char *onWord, const char *offWord, bool fallback,
                 bool &out, std::string &error) {
  if (field == OVERLAP_CUDA_KNOB_ON || field == OVERLAP_CUDA_KNOB_OFF) {
    out = field == OVERLAP_CUDA_KNOB_ON;
    return true;
  }
  if (field != OVERLAP_CUDA_KNOB_DEFAULT) {
    error = std::string(fieldName) + " must be OVERLAP_CUDA_KNOB_DEFAULT, " +
            "_ON or _OFF, got " + std::to_string(field);
    return false;
  }
  const char *text = std::getenv(variable);
  std::string word = text ? text : "";
  if (word.empty()) {
    out = fallback;
    return true;
  }
  if (word == onWord || word == offWord) {
    out = word == onWord;
    return true;
  }
  error = std::string(variable) + " must be " + onWord + " or " + offWord +
          ", got '" + word + "'";
  return false;
}

} // namespace

extern "C" void overlap_cuda_options_init(overlap_cuda_options *opts) {
  if (!opts)
    return;
  std::memset(opts, 0, sizeof(*opts));
  opts->struct_size = sizeof(overlap_cuda_options);
  opts->comm_sms = OVERLAP_CUDA_COMM_SMS_DEFAULT;
}

bool overlap::cuda::resolveOptions(const overlap_cuda_options *given,
                                   Options &out, std::string &error) {
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  if (given) {
    // Callers built against the first, shorter struct get the defaults of
    // the fields they do not have.
    const size_t first = offsetof(overlap_cuda_options, comm_sms);
    if (given->struct_size < first) {
      error = "overlap_cuda_options.struct_size is " +
              std::to_string(given->struct_size) + ", expected at least " +
              std::to_string(first) + " (call overlap_cuda_options_init)";
      return false;
    }
    std::memcpy(&opts, given,
                std::min<size_t>(given->struct_size, sizeof(opts)));
    opts.struct_size = sizeof(opts);
  }
  out = Options();
  if (opts.num_streams < 0 || opts.num_streams > 16) {
    error = "num_streams must be in [0, 16], got " +
            std::to_string(opts.num_streams);
    return false;
  }
  out.numStreams = opts.num_streams ? opts.num_streams : 2;
  if (out.numStreams < 2) {
    error = "a context needs at least 2 streams (compute and comm)";
    return false;
  }
  if (!runtime::resolveWaitTimeoutMs(opts.wait_timeout_ms, out.waitTimeoutMs,
                                     error))
    return false;
  if (opts.init_timeout_ms < 0) {
    error = "init_timeout_ms is negative (" +
            std::to_string(opts.init_timeout_ms) + "; 0 means the default)";
    return false;
  }
  out.initTimeoutMs = opts.init_timeout_ms;
  int sync = opts.sync;
  if (sync == OVERLAP_CUDA_SYNC_FROM_ENV) {
    const char *text = std::getenv("OVERLAP_CUDA_SYNC");
    std::string mode = text ? text : "";
    if (mode.empty() || mode == "memop")
      sync = OVERLAP_CUDA_SYNC_MEMOP;
    else if (mode == "spin")
      sync = OVERLAP_CUDA_SYNC_SPIN;
    else if (mode == "event")
      sync = OVERLAP_CUDA_SYNC_EVENT;
    else {
      error =
          "OVERLAP_CUDA_SYNC must be memop, spin or event, got '" + mode + "'";
      return false;
    }
  }
  if (sync < OVERLAP_CUDA_SYNC_MEMOP || sync > OVERLAP_CUDA_SYNC_EVENT) {
    error = "unknown sync mode " + std::to_string(sync);
    return false;
  }
  out.sync = sync;
  if (opts.gemm_workspace_bytes < 0) {
    error = "gemm_workspace_bytes is negative";
    return false;
  }
  if (opts.gemm_workspace_bytes)
    out.workspaceBytes = size_t(opts.gemm_workspace_bytes);
  out.allowTf32 = opts.allow_tf32 != 0;
  out.loopBroadcast = opts.gemm_loop_broadcast != 0;

  if (opts.comm_sms == OVERLAP_CUDA_COMM_SMS_DEFAULT) {
    bool present = false;
    int64_t value = 0;
    if (!readEnvInt("OVERLAP_COMM_SMS", present, value) || value > 1024) {
      error = "OVERLAP_COMM_SMS must be an integer in [0, 1024] (0: reserve "
              "no SMs for communication)";
      return false;
    }
    out.commSms = present ? int(value) : OVERLAP_CUDA_DEFAULT_COMM_SMS;
  } else if (opts.comm_sms < 0 || opts.comm_sms > 1024) {
    error = "comm_sms must be in [0, 1024] or OVERLAP_CUDA_COMM_SMS_DEFAULT, "
            "got " +
            std::to_string(opts.comm_sms);
    return false;
  } else {
    out.commSms = opts.comm_sms;
  }
  if (!resolveKnob(opts.comm_priority, "comm_priority", "OVERLAP_COMM_PRIORITY",
                   "high", "normal", true, out.commPriority, error) ||
      !resolveKnob(opts.device_flags, "device_flags", "OVERLAP_CUDA_FLAGS",
                   "device", "host", true, out.deviceFlags, error) ||
      !resolveKnob(opts.gemm_cache, "gemm_cache", "OVERLAP_GEMM_CACHE", "on",
                   "off", true, out.gemmCache, error) ||
      !resolveKnob(opts.nccl_cta_cap, "nccl_cta_cap", "OVERLAP_NCCL_CTA_CAP",
                   "on", "off", true, out.ncclCtaCap, error) ||
      !resolveKnob(opts.stream_ordered_alloc, "stream_ordered_alloc",
                   "OVERLAP_CUDA_ALLOC", "pool", "sync", true,
                   out.streamOrderedAlloc, error) ||
      // Off by default: never measured (docs/cuda.md, "Zero-SM all-gather").
      !resolveKnob(opts.zero_sm_all_gather, "zero_sm_all_gather",
                   "OVERLAP_ZERO_SM_ALL_GATHER", "on", "off", false,
                   out.zeroSmAllGather, error))
    return false;
  int64_t autotune = opts.gemm_autotune;
  if (autotune == 0) {
    bool present = false;
    if (!readEnvInt("OVERLAP_GEMM_AUTOTUNE", present, autotune) ||
        (present && (autotune < 1 || autotune > 16))) {
      error = "OVERLAP_GEMM_AUTOTUNE must be an integer in [1, 16]";
      return false;
    }
    if (!present)
      autotune = 1;
  }
  if (autotune < 1 || autotune > 16) {
    error = "gemm_autotune must be in [0, 16], got " + std::to_string(autotune);
    return false;
  }
  out.gemmAutotune = int(autotune);
  return true;
}

int overlap::cuda::gemmSmTarget(int smCount, int commSms) {
  if (commSms <= 0 || smCount <= 0)
    return 0;
  return std::max(1, smCount - commSms);
}

int overlap::cuda::gemmSmTargetFor(int64_t tile, int tileTarget,
                                   int worldSize) {
  return tile >= 0 && worldSize > 1 ? tileTarget : 0;
}

ncclConfig_t overlap::cuda::ncclConfigFor(int commSms) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  // NCCL shares a parent's resources with the children ncclCommSplit makes
  // when the parent was created with splitShare = 1 (its config, not the
  // child's, decides): so the world Overlap creates asks for it too.
  config.splitShare = 1;
  if (commSms > 0) {
    config.minCTAs = 1;
    config.maxCTAs = commSms;
    // A cluster's CTAs are scheduled together: a smaller cluster fits in
    // the SMs a GEMM leaves; it must divide the CTA count.
    config.cgaClusterSize = commSms % 4 == 0 ? 4 : commSms % 2 == 0 ? 2 : 1;
  }
  return config;
}

ncclConfig_t overlap::cuda::ncclSplitConfigFor(int commSms) {
  ncclConfig_t config = ncclConfigFor(commSms);
  config.splitShare = 1;
  return config;
}

ncclConfig_t overlap::cuda::ncclConfigFor(const Options &o) {
  return ncclConfigFor(o.ncclCtaCap ? o.commSms : 0);
}

ncclConfig_t overlap::cuda::ncclSplitConfigFor(const Options &o) {
  return ncclSplitConfigFor(o.ncclCtaCap ? o.commSms : 0);
}

std::string overlap::cuda::describeOptions(const Options &o, int smCount,
                                           int gemmSms, int commPriority,
                                           int computePriority) {
  static const char *syncNames[] = {"env", "memop", "spin", "event"};
  std::string text =
      "sms " + std::to_string(smCount) + ", comm_sms " +
      std::to_string(o.commSms) + ", gemm sm target " +
      (gemmSms ? std::to_string(gemmSms) : "unset") + ", comm priority " +
      (o.commPriority ? "high" : "normal") + " (" +
      std::to_string(commPriority) + " vs compute " +
      std::to_string(computePriority) + "), flags " +
      (o.deviceFlags ? "device" : "host") + ", sync " + syncNames[o.sync] +
      ", gemm cache " + (o.gemmCache ? "on" : "off") + ", gemm autotune " +
      std::to_string(o.gemmAutotune) + ", alloc " +
      (o.streamOrderedAlloc ? "pool" : "sync") + ", nccl cta cap " +
      (o.ncclCtaCap ? "on" : "off") + ", zero-sm all-gather " +
      (o.zeroSmAllGather ? "on" : "off") + ", streams " +
      std::to_string(o.numStreams);
  return text;
}

bool overlap::cuda::zeroSmAppliesTo(runtime::CollectiveKind kind) {
  return kind == runtime::CollectiveKind::AllGather;
}

size_t overlap::cuda::zeroSmWindowBytes(int groupSize, size_t count,
                                        size_t elemBytes) {
#ifdef NCCL_WIN_REQUIRED_ALIGNMENT
  const size_t align = NCCL_WIN_REQUIRED_ALIGNMENT;
#else
  const size_t align = 4096;
#endif
  if (groupSize <= 0 || !count || !elemBytes)
    return 0;
  const size_t limit = SIZE_MAX - (align - 1);
  if (count > limit / elemBytes || count * elemBytes > limit / groupSize)
    return 0;
  const size_t bytes = size_t(groupSize) * count * elemBytes;
  return (bytes + align - 1) / align * align;
}

/// "2.28.9" from an NCCL_VERSION_CODE (both encodings: 2.8.4 is 2804,
/// 2.28.9 is 22809).
static std::string ncclVersionText(int code) {
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(code % 100);
}

std::string overlap::cuda::describeVersions(int driver, int runtime,
                                            int loadedNccl, int compiledNccl,
                                            long long cublasLt) {
  // CUDA's codes are 1000 * major + 10 * minor; cuBLASLt's 10000 * major +
  // 100 * minor + patch.
  auto cuda = [](int v) {
    return v > 0
               ? std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10)
               : std::string("unknown");
  };
  auto nccl = [](int v) {
    return v > 0 ? ncclVersionText(v) : std::string("unknown");
  };
  std::string lt = cublasLt > 0 ? std::to_string(cublasLt / 10000) + "." +
                                      std::to_string(cublasLt / 100 % 100) +
                                      "." + std::to_string(cublasLt % 100)
                                : std::string("unknown");
  return "driver " + cuda(driver) + ", CUDA runtime " + cuda(runtime) +
         ", NCCL " + nccl(loadedNccl) + " (built with " + nccl(compiledNccl) +
         "), cuBLASLt " + lt;
}

std::string overlap::cuda::zeroSmPrerequisiteProblem(int compiledNccl,
                                                     int loadedNccl,
                                                     int driverVersion) {
  const int needed = 22800; // NCCL_VERSION(2, 28, 0)
  if (compiledNccl < needed)
    return "built against NCCL " + ncclVersionText(compiledNccl) +
           ", which has no zero-CTA policy (needs 2.28 or later)";
  if (loadedNccl < needed)
    return "NCCL " + ncclVersionText(loadedNccl) +
           " is loaded; the zero-CTA policy needs 2.28 or later";
  if (driverVersion < 12050)
    return "CUDA driver " + std::to_string(driverVersion / 1000) + "." +
           std::to_string(driverVersion % 1000 / 10) +
           "; NCCL's copy-engine collectives need 12.5 or later";
  return "";
}

int overlap::cuda::zeroSmNodeKey(const std::string &hostname) {
  uint32_t h = 2166136261u;
  for (unsigned char c : hostname)
    h = (h ^ c) * 16777619u;
  return static_cast<int>(h & 0x7fffffffu);
}

std::string overlap::cuda::zeroSmLocalityProblem(int lowest, int highest) {
  if (lowest == highest)
    return "";
  return "the group's ranks are on several nodes: NCCL runs the zero-CTA "
         "all-gather on the copy engines within one node only (across nodes "
         "it would run CTAs beside the GEMM, uncapped); plain ncclAllGather";
}

std::string overlap::cuda::zeroSmFallbackReason(const std::string &step,
                                                const std::string &error) {
  return step + " failed: " + error + "; plain ncclAllGather";
}

ncclConfig_t overlap::cuda::zeroSmSplitConfig(int commSms) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.splitShare = 1;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
#endif
  // NCCL uses zero CTAs "whenever it can": an all-gather it cannot put on
  // the copy engines runs CTAs, and those must stay within the budget as
  // on every other communicator. A maximum only: NCCL's minimum (one CTA
  // when a kernel runs at all) does not contradict the policy, an explicit
  // minCTAs of 1 would ask for a CTA where none is needed.
  if (commSms > 0) {
    config.maxCTAs = commSms;
    config.cgaClusterSize = commSms % 4 == 0 ? 4 : commSms % 2 == 0 ? 2 : 1;
  }
  return config;
}

ncclConfig_t overlap::cuda::zeroSmSplitConfig(const Options &o) {
  return zeroSmSplitConfig(o.ncclCtaCap ? o.commSms : 0);
}

unsigned overlap::cuda::pointerAlignment(const void *p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  unsigned a = 16;
  while (a > 1 && v % a)
    a /= 2;
  return a;
}

GemmKey overlap::cuda::gemmKey(const runtime::GemmArgs &g, int64_t batch,
                               int smTarget) {
  const unsigned alignA = pointerAlignment(g.a), alignB = pointerAlignment(g.b),
                 alignC = pointerAlignment(g.c);
  return GemmKey{int(g.abType),
                 int(g.cType),
                 batch,
                 g.m,
                 g.n,
                 g.k,
                 g.lda,
                 g.ldb,
                 g.ldc,
                 batch > 1 ? g.strideA : 0,
                 batch > 1 ? g.strideB : 0,
                 batch > 1 ? g.strideC : 0,
                 (alignA << 10) | (alignB << 5) | alignC,
                 smTarget,
                 (g.transA ? 1 : 0) | (g.transB ? 2 : 0) |
                     (g.overwrite ? 4 : 0)};
}
