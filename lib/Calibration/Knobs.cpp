//===- Knobs.cpp - The CUDA backend's options on a command line -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Knobs.h"

#include "overlap/Support/EnumNames.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

using namespace overlap;
using namespace overlap::calibration;

namespace {

/// One knob flag besides --comm-sms: a choice among named settings, or,
/// without names, a number from `low` to `high`. `unset` is the field's
/// value when the flag is absent (the runtime's default).
struct Knob {
  const char *flag;
  int32_t CudaKnobs::*field;
  int32_t overlap_cuda_options::*option;
  int32_t unset;
  std::vector<EnumName<int32_t>> names;
  int64_t low = 0, high = 0;
  /// What a number knob's error says it expects.
  const char *expected = nullptr;
};

constexpr int32_t maxAutotune = 16;

using Names = std::vector<EnumName<int32_t>>;

/// The knobs in the order of their flags (cudaKnobFlags, describeCudaKnobs).
const std::vector<Knob> &knobTable() {
  using Options = overlap_cuda_options;
  constexpr int32_t unset = OVERLAP_CUDA_KNOB_DEFAULT;
  const Names onOff = {{OVERLAP_CUDA_KNOB_ON, "on"},
                       {OVERLAP_CUDA_KNOB_OFF, "off"}};
  static const std::vector<Knob> table = {
      {"--comm-priority", &CudaKnobs::commPriority, &Options::comm_priority,
       unset,
       Names{{OVERLAP_CUDA_KNOB_ON, "high"},
             {OVERLAP_CUDA_KNOB_OFF, "normal"}}},
      {"--flags", &CudaKnobs::deviceFlags, &Options::device_flags, unset,
       Names{{OVERLAP_CUDA_KNOB_ON, "device"},
             {OVERLAP_CUDA_KNOB_OFF, "host"}}},
      {"--sync", &CudaKnobs::sync, &Options::sync, OVERLAP_CUDA_SYNC_FROM_ENV,
       Names{{OVERLAP_CUDA_SYNC_MEMOP, "memop"},
             {OVERLAP_CUDA_SYNC_SPIN, "spin"},
             {OVERLAP_CUDA_SYNC_EVENT, "event"}}},
      {"--gemm-cache", &CudaKnobs::gemmCache, &Options::gemm_cache, unset,
       onOff},
      {"--gemm-autotune", &CudaKnobs::gemmAutotune, &Options::gemm_autotune, 0,
       Names{}, 1, maxAutotune, "a number of algorithms from 1 to 16"},
      {"--alloc", &CudaKnobs::streamOrderedAlloc,
       &Options::stream_ordered_alloc, unset,
       Names{{OVERLAP_CUDA_KNOB_ON, "pool"}, {OVERLAP_CUDA_KNOB_OFF, "sync"}}},
      {"--nccl-cta-cap", &CudaKnobs::ncclCtaCap, &Options::nccl_cta_cap, unset,
       onOff},
      {"--zero-sm-all-gather", &CudaKnobs::zeroSmAllGather,
       &Options::zero_sm_all_gather, unset, onOff},
  };
  return table;
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

/// The value of `k`'s flag in `args`, or `def` (absent, or bad: then the
/// error names what the flag accepts).
int32_t readKnob(const Args &args, const Knob &k, int32_t def) {
  if (!args.has(k.flag))
    return def;
  const std::string text = args.get(k.flag, "");
  std::optional<int32_t> value = k.names.empty()
                                     ? readBounded(text, k.low, k.high)
                                     : valueOf(k.names, text);
  if (value)
    return *value;
  const std::string expected = k.names.empty()
                                   ? std::string(k.expected)
                                   : flags::listChoices(namesOf(k.names));
  args.fail(std::string(k.flag) + ": expected " + expected + ", got '" + text +
            "'");
  return def;
}

/// The setting `value` of `k` as its flag's value.
std::string describeKnob(const Knob &k, int32_t value) {
  return k.names.empty() ? std::to_string(value) : nameOf(k.names, value);
}

} // namespace

const std::vector<std::string> &calibration::cudaKnobFlags() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> flags = {"--comm-sms"};
    for (const Knob &k : knobTable())
      flags.push_back(k.flag);
    return flags;
  }();
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
  for (const Knob &knob : knobTable())
    k.*knob.field = readKnob(args, knob, knob.unset);
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
  for (const Knob &k : knobTable())
    if (knobs.*k.field != k.unset)
      opts.*k.option = knobs.*k.field;
}

std::string calibration::describeCudaKnobs(const CudaKnobs &knobs) {
  std::string out;
  auto add = [&](const std::string &flag, const std::string &value) {
    out += (out.empty() ? "" : " ") + flag + " " + value;
  };
  if (knobs.commSms)
    add("--comm-sms", std::to_string(*knobs.commSms));
  for (const Knob &k : knobTable())
    if (knobs.*k.field != k.unset)
      add(k.flag, describeKnob(k, knobs.*k.field));
  return out;
}

std::vector<flags::Flag> calibration::measuringFlags() {
  return {{"--dtype", "f16|bf16|f32", "element type (default f16)"},
          {"--leg", "copy-engine|sm-copy|nccl",
           "the communication leg (default copy-engine)"},
          {"--warmup", "N", "untimed runs first (default 5)"},
          {"--iters", "N", "timed runs (default 20)"}};
}

/// The measuring tool's name for its messages ("overlap-bench"), set by
/// parseMeasuringArgs; "overlap" before.
static const char *currentTool = "overlap";

void calibration::printDiagnostic(const char *kind, const char *format, ...) {
  std::fprintf(stderr, "%s: %s: ", currentTool, kind);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
}

void calibration::usageError(const char *tool, const std::string &message) {
  std::fprintf(stderr, "%s: error: %s\n", tool, message.c_str());
  std::exit(2);
}

Args calibration::parseMeasuringArgs(const char *tool, const char *synopsis,
                                     const char *about,
                                     const std::vector<flags::Flag> &table,
                                     int argc, char **argv) {
  currentTool = tool;
  std::vector<flags::Flag> all = table;
  for (const flags::Flag &shared : measuringFlags())
    all.push_back(shared);
  Args args(all);
  for (const std::string &knob : cudaKnobFlags())
    args.add({knob, "V", ""});
  if (!args.parse(argc, argv))
    usageError(tool, args.error() + " (" + tool + " --help: the options)");
  if (args.helpAsked()) {
    std::printf("%s%s%s%s", synopsis, about, flags::formatHelp(all).c_str(),
                cudaKnobUsage());
    std::exit(0);
  }
  return args;
}
