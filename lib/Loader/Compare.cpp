//===- Compare.cpp - Compare outputs and report them ------------*- C++ -*-===//
//
// The per-element comparison of two runs' outputs, its report, checksums of
// one run's outputs, and the small formatting helpers of the reports.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Compare.h"
#include "overlap/Loader/RuntimeApi.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace overlap {
namespace run {

using exec::rt;

template <typename T> static T loadAs(const void *base, int64_t index) {
  T value;
  std::memcpy(&value, static_cast<const char *>(base) + sizeof(T) * index,
              sizeof(T));
  return value;
}

static double loadElement(Elem elem, const void *base, int64_t index) {
  switch (elem) {
  case Elem::F32:
    return loadAs<float>(base, index);
  case Elem::F16:
    return rt().overlap_f16_to_f32(loadAs<uint16_t>(base, index));
  case Elem::BF16:
    return rt().overlap_bf16_to_f32(loadAs<uint16_t>(base, index));
  case Elem::F64:
    return loadAs<double>(base, index);
  case Elem::I1:
    return loadAs<uint8_t>(base, index) & 1;
  case Elem::I8:
    return loadAs<int8_t>(base, index);
  case Elem::I16:
    return loadAs<int16_t>(base, index);
  case Elem::I32:
    return loadAs<int32_t>(base, index);
  case Elem::I64:
    return static_cast<double>(loadAs<int64_t>(base, index));
  }
  return 0;
}

/// The element's bits (an i1 is its low bit: LLVM leaves the others
/// unspecified).
static uint64_t loadBits(Elem elem, const void *base, int64_t index) {
  switch (elemSize(elem)) {
  case 8:
    return loadAs<uint64_t>(base, index);
  case 4:
    return loadAs<uint32_t>(base, index);
  case 2:
    return loadAs<uint16_t>(base, index);
  default:
    return loadAs<uint8_t>(base, index) & (elem == Elem::I1 ? 1 : 0xff);
  }
}

/// Calls `fn(linear, index)` for every index of `sizes` in row-major order.
template <typename Fn>
static void forEachIndex(const std::vector<int64_t> &sizes, Fn fn) {
  int64_t n = 1;
  for (int64_t size : sizes)
    n *= size;
  size_t dims = sizes.size();
  std::vector<int64_t> index(dims, 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    fn(linear, index);
    for (size_t d = dims; d-- > 0;) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
}

namespace {
struct OutputStats {
  double maxAbs = 0;
  double maxRel = 0;
  bool bitIdentical = true;
  int64_t mismatches = 0;
  int64_t nans = 0;
  // First mismatch, for the message.
  int firstRank = -1;
  int64_t firstIndex = -1;
  double firstGot = 0, firstWant = 0;
};
} // namespace

/// Compares `got` against `want` element by element (see compareOutputs).
static void compareOutput(Elem elem, const OutputView &got,
                          const OutputView &want, int rank,
                          const Tolerance &tolerance, OutputStats &stats) {
  forEachIndex(got.sizes, [&](int64_t linear,
                              const std::vector<int64_t> &index) {
    int64_t gotOffset = got.offsetOf(index);
    int64_t wantOffset = want.offsetOf(index);
    double g = loadElement(elem, got.base, gotOffset);
    double w = loadElement(elem, want.base, wantOffset);
    bool sameBits = loadBits(elem, got.base, gotOffset) ==
                    loadBits(elem, want.base, wantOffset);
    if (!sameBits)
      stats.bitIdentical = false;
    bool nan = std::isnan(g) || std::isnan(w);
    double abs = nan ? std::numeric_limits<double>::infinity()
                     : std::fabs(static_cast<double>(g) - w);
    double rel = nan        ? std::numeric_limits<double>::infinity()
                 : w != 0   ? abs / std::fabs(static_cast<double>(w))
                 : abs == 0 ? 0.0
                            : std::numeric_limits<double>::infinity();
    stats.nans += nan;
    stats.maxAbs = std::max(stats.maxAbs, abs);
    stats.maxRel = std::max(stats.maxRel, rel);
    // Integers are equal by their bits (an i64 past 2^53 is not exact as
    // a double); a tolerance still admits nearby values.
    bool ok = (isInteger(elem) && sameBits) ||
              (!nan && abs <= tolerance.atol + tolerance.rtol * std::fabs(w));
    if (!ok) {
      if (stats.mismatches == 0) {
        stats.firstRank = rank;
        stats.firstIndex = linear;
        stats.firstGot = g;
        stats.firstWant = w;
      }
      ++stats.mismatches;
    }
  });
}

static std::string formatIndex(const BufferSpec &spec, int64_t linear) {
  std::vector<int64_t> index(spec.shape.size());
  for (size_t d = spec.shape.size(); d-- > 0;) {
    index[d] = linear % spec.shape[d];
    linear /= spec.shape[d];
  }
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i)
    s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

std::string formatDouble(const char *format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

/// "  result0  256x512xf32      " : the name and the type in columns.
static std::string outputColumns(const BufferSpec &spec) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, "  %-8s %-16s", spec.name.c_str(),
                spec.typeString().c_str());
  return buffer;
}

/// Whether some rank's argument `index` no longer holds the input that
/// fillArgument made for it from `seed`.
static bool argumentWritten(const BufferSpec &spec,
                            const std::vector<std::vector<OutputView>> &views,
                            size_t output, size_t index, uint64_t seed) {
  HostBuffer input(spec.numElements() * spec.elemBytes());
  bool written = false;
  // Without memory to remake the input, say "written" (the note then names
  // a writer it could not check, which is still not a mismatch).
  if (!input.data)
    return true;
  for (size_t r = 0; r < views.size(); ++r) {
    fillArgument(spec, input.data, seed, static_cast<int>(r), index);
    const OutputView &view = views[r][output];
    forEachIndex(
        view.sizes, [&](int64_t linear, const std::vector<int64_t> &at) {
          written |= loadBits(spec.elem, view.base, view.offsetOf(at)) !=
                     loadBits(spec.elem, input.data, linear);
        });
  }
  return written;
}

/// Why input-only argument `index` (output `output`) differs between the
/// two runs: which of them wrote into its buffer.
static std::string
inputOnlyNote(const BufferSpec &spec,
              const std::vector<std::vector<OutputView>> &got,
              const std::vector<std::vector<OutputView>> &want, size_t output,
              size_t index, uint64_t seed, std::string_view gotName,
              std::string_view wantName) {
  bool gotWrote = argumentWritten(spec, got, output, index, seed);
  bool wantWrote = argumentWritten(spec, want, output, index, seed);
  std::string writer(gotWrote ? gotName : wantName);
  std::string other(gotWrote ? wantName : gotName);
  std::string who = gotWrote && wantWrote
                        ? "both runs wrote into its buffer, differently"
                        : "the " + writer + " run wrote into its buffer, the " +
                              other + " run did not";
  return "not a mismatch: " + spec.name +
         " is a tensor argument, an input only, whose buffer a compiled "
         "program may reuse (for a result, or an accumulator it updates in "
         "place); " +
         who;
}

Comparison compareOutputs(const Signature &sig,
                          const std::vector<std::vector<OutputView>> &got,
                          const std::vector<std::vector<OutputView>> &want,
                          const Tolerance &tolerance, std::string_view gotName,
                          std::string_view wantName, uint64_t seed) {
  Comparison result;
  std::vector<const BufferSpec *> specs = outputSpecs(sig);
  for (size_t i = 0; i < specs.size(); ++i) {
    const BufferSpec &spec = *specs[i];
    bool inputOnly = i >= sig.results.size() && !spec.inout;
    OutputStats stats;
    for (size_t r = 0; r < got.size(); ++r)
      compareOutput(spec.elem, got[r][i], want[r][i], static_cast<int>(r),
                    tolerance, stats);
    bool ok = stats.mismatches == 0;
    result.text += outputColumns(spec) + " max abs err " +
                   formatDouble("%-10.3g", stats.maxAbs) + " max rel err " +
                   formatDouble("%-10.3g", stats.maxRel) +
                   (stats.bitIdentical ? " bit-identical" : "") + "\n";
    if (inputOnly && !ok) {
      result.text += "    " + std::to_string(stats.mismatches) + " element" +
                     (stats.mismatches == 1 ? "" : "s") +
                     " differ over all ranks; " +
                     inputOnlyNote(spec, got, want, i, i - sig.results.size(),
                                   seed, gotName, wantName) +
                     "\n";
      continue;
    }
    result.ok &= ok;
    result.bitIdentical &= stats.bitIdentical;
    result.nans += stats.nans;
    if (ok)
      continue;
    result.text += "    " + std::to_string(stats.mismatches) + " element" +
                   (stats.mismatches == 1 ? "" : "s") +
                   " differ over all ranks";
    if (stats.nans)
      result.text +=
          " (" + std::to_string(stats.nans) + " NaN: poison or invalid)";
    result.text +=
        "; first: rank " + std::to_string(stats.firstRank) + " " +
        formatIndex(spec, stats.firstIndex) + " " + std::string(gotName) + " " +
        formatDouble("%.9g", stats.firstGot) + " " + std::string(wantName) +
        " " + formatDouble("%.9g", stats.firstWant) + "\n";
  }
  return result;
}

std::string verdict(const Comparison &comparison) {
  // Identical bits with NaNs among them are a MISMATCH (NaN never equals
  // NaN): say why, or "yes" then "MISMATCH" reads as a contradiction.
  std::string nans =
      comparison.bitIdentical && comparison.nans
          ? ", but " + std::to_string(comparison.nans) +
                " NaNs in the outputs (NaN never matches: an f16 overflow?)"
          : "";
  return std::string("bit-identical: ") +
         (comparison.bitIdentical ? "yes" : "no") + nans + "\n" +
         (comparison.ok ? "OK" : "MISMATCH") + "\n";
}

std::string checksums(const Signature &sig,
                      const std::vector<std::vector<OutputView>> &outputs) {
  std::string text;
  std::vector<const BufferSpec *> specs = outputSpecs(sig);
  for (size_t i = 0; i < specs.size(); ++i) {
    const BufferSpec &spec = *specs[i];
    double sum = 0;
    int64_t nans = 0;
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (const std::vector<OutputView> &rankOutputs : outputs) {
      const OutputView &view = rankOutputs[i];
      forEachIndex(view.sizes, [&](int64_t, const std::vector<int64_t> &index) {
        int64_t offset = view.offsetOf(index);
        float value = loadElement(spec.elem, view.base, offset);
        if (std::isnan(value))
          ++nans;
        else
          sum += value;
        uint32_t bits = loadBits(spec.elem, view.base, offset);
        for (size_t b = 0; b < spec.elemBytes(); ++b) {
          hash ^= (bits >> (8 * b)) & 0xff;
          hash *= 0x100000001b3ULL;
        }
      });
    }
    char hashText[32];
    std::snprintf(hashText, sizeof hashText, "%016" PRIx64, hash);
    text += outputColumns(spec) + " sum " + formatDouble("%-14.7e", sum) +
            " nan " + std::to_string(nans) + " fnv1a " + hashText + "\n";
  }
  return text;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

} // namespace run
} // namespace overlap
