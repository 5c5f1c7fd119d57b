//===- PackBench.cpp - overlap-bench --pack ---------------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "PackBench.h"

#include "overlap/Calibration/MeasuringContext.h"
#include "overlap/Calibration/PackMeasure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

using namespace overlap;
using namespace overlap::calibration;

namespace {

struct PackRow {
  PackBlock block;
  PackTimes times;
};

} // namespace

int overlap::calibration::packBench(const PackOptions &o,
                                    const CudaKnobs &knobs) {
  std::vector<PackBlock> blocks = defaultPackBlocks(o.total);
  if (!o.shapes.empty()) {
    std::string why;
    auto parsed = parsePackBlocks(o.shapes, o.total, why);
    if (!parsed) {
      printDiagnostic("error", "--pack-shapes: %s\n", why.c_str());
      return 2;
    }
    blocks = *parsed;
  }
  for (const PackBlock &b : blocks) {
    std::string why;
    if (!validPackBlock(b, why)) { // a --pack-total too large for the API
      printDiagnostic("error", "--pack-total: %s\n", why.c_str());
      return 2;
    }
  }
  DeviceInfo device;
  overlap_context *ctx = createMeasuringContext(
      "overlap-bench", measuringOptions(knobs, std::nullopt, std::nullopt),
      device);
  const std::string runtime = runtimeDescription(ctx);
  std::printf("# runtime: %s\n", runtime.c_str());
  std::printf("# overlap-bench --pack on %s: overlap_pack / overlap_unpack "
              "(one kernel) vs cudaMemcpy2DAsync of the same strided block "
              "and a contiguous device-to-device cudaMemcpyAsync of the same "
              "bytes\n",
              device.name.c_str());
  std::printf("# GB/s = packed bytes / time (each byte counted once, not "
              "read + write); access = the pack kernel's word (B); %d "
              "warm-up + %d timed runs, medians\n",
              o.warmup, o.iters);
  std::printf("#%9s %7s %9s %4s %6s %11s %8s %8s %8s %8s %8s %s\n", "rows",
              "row(B)", "stride(B)", "elem", "access", "bytes", "pack",
              "unpack", "memcpy2D", "d2d", "pack/d2d", "check");

  std::vector<PackRow> rows;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const PackBlock &b = blocks[i];
    PackTimes t = measurePackBlock(ctx, b, 977 * i + 1, o.warmup, o.iters);
    std::printf(" %9lld %7lld %9lld %4lld %6d %11lld %8.1f %8.1f %8.1f %8.1f "
                "%8.3f %s\n",
                (long long)b.rows, (long long)b.rowBytes,
                (long long)b.strideBytes, (long long)b.elemBytes,
                packAccessBytes(b), (long long)b.bytes(), packGbps(b, t.packUs),
                packGbps(b, t.unpackUs), packGbps(b, t.copy2dUs),
                packGbps(b, t.d2dUs), t.d2dUs / t.packUs, t.check.c_str());
    std::fflush(stdout);
    rows.push_back({b, t});
  }

  std::vector<double> ratios;
  int failures = 0;
  for (const PackRow &row : rows) {
    failures += row.times.check != "ok";
    ratios.push_back(row.times.d2dUs / row.times.packUs);
  }
  std::printf(
      "# pack/d2d: median %.3f, min %.3f, max %.3f (%zu blocks); "
      "correctness failures: %d\n",
      median(ratios),
      ratios.empty() ? NAN : *std::min_element(ratios.begin(), ratios.end()),
      ratios.empty() ? NAN : *std::max_element(ratios.begin(), ratios.end()),
      ratios.size(), failures);
  return finish(ctx, o.csv, failures, [&](std::ostream &csv) {
    csv << "# runtime: " << runtime << "\n";
    csv << "device,rows,row_bytes,stride_bytes,elem_bytes,access_bytes,bytes,"
           "pack_us,unpack_us,memcpy2d_us,d2d_us,pack_gbps,unpack_gbps,"
           "memcpy2d_gbps,d2d_gbps,pack_over_d2d,check\n";
    for (const PackRow &row : rows) {
      const PackBlock &b = row.block;
      const PackTimes &t = row.times;
      csv << '"' << device.name << "\"," << b.rows << ',' << b.rowBytes << ','
          << b.strideBytes << ',' << b.elemBytes << ',' << packAccessBytes(b)
          << ',' << b.bytes() << ',' << t.packUs << ',' << t.unpackUs << ','
          << t.copy2dUs << ',' << t.d2dUs << ',' << packGbps(b, t.packUs) << ','
          << packGbps(b, t.unpackUs) << ',' << packGbps(b, t.copy2dUs) << ','
          << packGbps(b, t.d2dUs) << ',' << t.d2dUs / t.packUs << ",\""
          << t.check << "\"\n";
    }
  });
}
