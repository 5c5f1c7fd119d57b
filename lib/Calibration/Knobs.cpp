//===- Knobs.cpp - The CUDA backend's options on a command line -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Knobs.h"

#include <cstdint>
#include <utility>

using namespace overlap;
using namespace overlap::calibration;

namespace {

/// One flag whose values name settings of one field.
struct Choice {
  const char *flag;
  std::vector<std::pair<const char *, int32_t>> values;
};

const Choice commPriority = {
    "--comm-priority",
    {{"high", OVERLAP_CUDA_KNOB_ON}, {"normal", OVERLAP_CUDA_KNOB_OFF}}};
const Choice deviceFlagsChoice = {
    "--flags",
    {{"device", OVERLAP_CUDA_KNOB_ON}, {"host", OVERLAP_CUDA_KNOB_OFF}}};
const Choice sync = {"--sync",
                     {{"memop", OVERLAP_CUDA_SYNC_MEMOP},
                      {"spin", OVERLAP_CUDA_SYNC_SPIN},
                      {"event", OVERLAP_CUDA_SYNC_EVENT}}};
const Choice gemmCache = {
    "--gemm-cache",
    {{"on", OVERLAP_CUDA_KNOB_ON}, {"off", OVERLAP_CUDA_KNOB_OFF}}};
const Choice alloc = {
    "--alloc",
    {{"pool", OVERLAP_CUDA_KNOB_ON}, {"sync", OVERLAP_CUDA_KNOB_OFF}}};
const Choice ncclCtaCap = {
    "--nccl-cta-cap",
    {{"on", OVERLAP_CUDA_KNOB_ON}, {"off", OVERLAP_CUDA_KNOB_OFF}}};
const Choice zeroSmAllGather = {
    "--zero-sm-all-gather",
    {{"on", OVERLAP_CUDA_KNOB_ON}, {"off", OVERLAP_CUDA_KNOB_OFF}}};

constexpr int32_t maxAutotune = 16;

/// The value of `c`'s flag in `args`, or `def` (absent, or bad: then the
/// error names the accepted values).
int32_t readChoice(const Args &args, const Choice &c, int32_t def) {
  if (!args.has(c.flag))
    return def;
  const std::string text = args.get(c.flag, "");
  std::string accepted;
  for (size_t i = 0; i < c.values.size(); ++i) {
    if (text == c.values[i].first)
      return c.values[i].second;
    accepted += i == 0 ? "" : i + 1 == c.values.size() ? " or " : ", ";
    accepted += c.values[i].first;
  }
  args.fail(std::string(c.flag) + ": expected " + accepted + ", got '" + text +
            "'");
  return def;
}

/// The name `value` has among `c`'s values.
const char *nameOf(const Choice &c, int32_t value) {
  for (const auto &[name, v] : c.values)
    if (v == value)
      return name;
  return "?";
}

/// A decimal integer in [lo, hi] (no sign, no spaces), or nullopt.
std::optional<int32_t> readBounded(const std::string &text, int64_t lo,
                                   int64_t hi) {
  if (text.empty() || text.size() > 10)
    return std::nullopt;
  int64_t v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9')
      return std::nullopt;
    v = v * 10 + (ch - '0');
  }
  if (v < lo || v > hi)
    return std::nullopt;
  return int32_t(v);
}

} // namespace

const std::vector<std::string> &calibration::cudaKnobFlags() {
  static const std::vector<std::string> names = {
      "--comm-sms", "--comm-priority", "--flags",
      "--sync",     "--gemm-cache",    "--gemm-autotune",
      "--alloc",    "--nccl-cta-cap",  "--zero-sm-all-gather"};
  return names;
}

const char *calibration::cudaKnobUsage() {
  return "CUDA backend options (default: the runtime's, docs/cuda.md):\n"
         "  --comm-sms N (0: no reservation; default: the profile's\n"
         "  device.comm_sms when --profile is given) --comm-priority\n"
         "  high|normal --flags device|host --sync memop|spin|event\n"
         "  --gemm-cache on|off --gemm-autotune K (1-16) --alloc pool|sync\n"
         "  --nccl-cta-cap on|off (NCCL's maxCTAs = comm_sms, or NCCL's own)\n"
         "  --zero-sm-all-gather on|off (all-gathers on NCCL's copy engines)\n";
}

CudaKnobs calibration::readCudaKnobs(const Args &args) {
  CudaKnobs k;
  if (args.has("--comm-sms")) {
    const std::string text = args.get("--comm-sms", "");
    k.commSms = readBounded(text, 0, INT32_MAX);
    if (!k.commSms)
      args.fail("--comm-sms: expected a number of SMs >= 0 (0: no "
                "reservation), got '" +
                text + "'");
  }
  k.commPriority = readChoice(args, commPriority, k.commPriority);
  k.deviceFlags = readChoice(args, deviceFlagsChoice, k.deviceFlags);
  k.sync = readChoice(args, sync, k.sync);
  k.gemmCache = readChoice(args, gemmCache, k.gemmCache);
  k.streamOrderedAlloc = readChoice(args, alloc, k.streamOrderedAlloc);
  k.ncclCtaCap = readChoice(args, ncclCtaCap, k.ncclCtaCap);
  k.zeroSmAllGather = readChoice(args, zeroSmAllGather, k.zeroSmAllGather);
  if (args.has("--gemm-autotune")) {
    const std::string text = args.get("--gemm-autotune", "");
    std::optional<int32_t> v = readBounded(text, 1, maxAutotune);
    if (v)
      k.gemmAutotune = *v;
    else
      args.fail("--gemm-autotune: expected a number of algorithms from 1 "
                "to 16, got '" +
                text + "'");
  }
  return k;
}

std::optional<int64_t>
calibration::legDefaultCommSms(std::optional<Leg> leg,
                               std::optional<int64_t> profileCommSms) {
  if (leg == Leg::CopyEngine)
    return 0;
  return profileCommSms;
}

void calibration::applyCudaKnobs(const CudaKnobs &knobs,
                                 std::optional<int64_t> profileCommSms,
                                 overlap_cuda_options &opts) {
  if (knobs.commSms)
    opts.comm_sms = *knobs.commSms;
  else if (profileCommSms)
    opts.comm_sms = int32_t(*profileCommSms);
  if (knobs.commPriority != OVERLAP_CUDA_KNOB_DEFAULT)
    opts.comm_priority = knobs.commPriority;
  if (knobs.deviceFlags != OVERLAP_CUDA_KNOB_DEFAULT)
    opts.device_flags = knobs.deviceFlags;
  if (knobs.sync != OVERLAP_CUDA_SYNC_FROM_ENV)
    opts.sync = knobs.sync;
  if (knobs.gemmCache != OVERLAP_CUDA_KNOB_DEFAULT)
    opts.gemm_cache = knobs.gemmCache;
  if (knobs.gemmAutotune)
    opts.gemm_autotune = knobs.gemmAutotune;
  if (knobs.streamOrderedAlloc != OVERLAP_CUDA_KNOB_DEFAULT)
    opts.stream_ordered_alloc = knobs.streamOrderedAlloc;
  if (knobs.ncclCtaCap != OVERLAP_CUDA_KNOB_DEFAULT)
    opts.nccl_cta_cap = knobs.ncclCtaCap;
  if (knobs.zeroSmAllGather != OVERLAP_CUDA_KNOB_DEFAULT)
    opts.zero_sm_all_gather = knobs.zeroSmAllGather;
}

std::string calibration::describeCudaKnobs(const CudaKnobs &knobs) {
  std::string out;
  auto add = [&](const std::string &flag, const std::string &value) {
    out += (out.empty() ? "" : " ") + flag + " " + value;
  };
  if (knobs.commSms)
    add("--comm-sms", std::to_string(*knobs.commSms));
  if (knobs.commPriority != OVERLAP_CUDA_KNOB_DEFAULT)
    add(commPriority.flag, nameOf(commPriority, knobs.commPriority));
  if (knobs.deviceFlags != OVERLAP_CUDA_KNOB_DEFAULT)
    add(deviceFlagsChoice.flag, nameOf(deviceFlagsChoice, knobs.deviceFlags));
  if (knobs.sync != OVERLAP_CUDA_SYNC_FROM_ENV)
    add(sync.flag, nameOf(sync, knobs.sync));
  if (knobs.gemmCache != OVERLAP_CUDA_KNOB_DEFAULT)
    add(gemmCache.flag, nameOf(gemmCache, knobs.gemmCache));
  if (knobs.gemmAutotune)
    add("--gemm-autotune", std::to_string(knobs.gemmAutotune));
  if (knobs.streamOrderedAlloc != OVERLAP_CUDA_KNOB_DEFAULT)
    add(alloc.flag, nameOf(alloc, knobs.streamOrderedAlloc));
  if (knobs.ncclCtaCap != OVERLAP_CUDA_KNOB_DEFAULT)
    add(ncclCtaCap.flag, nameOf(ncclCtaCap, knobs.ncclCtaCap));
  if (knobs.zeroSmAllGather != OVERLAP_CUDA_KNOB_DEFAULT)
    add(zeroSmAllGather.flag, nameOf(zeroSmAllGather, knobs.zeroSmAllGather));
  return out;
}
