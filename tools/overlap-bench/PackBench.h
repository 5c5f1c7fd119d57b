//===- PackBench.h - overlap-bench --pack -----------------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The pack kernel's bandwidth (overlap_pack / overlap_unpack) against
// cudaMemcpy2DAsync and a contiguous device-to-device copy: the table and
// the CSV (lib/Calibration's PackMeasure.h measures).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_TOOLS_OVERLAP_BENCH_PACKBENCH_H
#define OVERLAP_TOOLS_OVERLAP_BENCH_PACKBENCH_H

#include "overlap/Calibration/Knobs.h"

#include <cstdint>
#include <string>

namespace overlap {
namespace calibration {

/// The flags of `overlap-bench --pack`.
struct PackOptions {
  int warmup = 5, iters = 20;
  int64_t total = int64_t(64) << 20; ///< --pack-total
  std::string shapes;                ///< --pack-shapes; "" for the default
  std::string csv;                   ///< --csv; "" for none
};

/// Runs `overlap-bench --pack`: a table, a summary line and the CSV;
/// returns the exit status (2 on bad blocks).
int packBench(const PackOptions &options, const CudaKnobs &knobs);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_TOOLS_OVERLAP_BENCH_PACKBENCH_H
