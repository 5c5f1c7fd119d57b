//===- PackBench.h - overlap-bench --pack -----------------------*- C++ -*-===//
//
// The pack kernel's bandwidth (overlap_pack / overlap_unpack) against
// cudaMemcpy2DAsync and a contiguous device-to-device copy.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_TOOLS_OVERLAP_BENCH_PACKBENCH_H
#define OVERLAP_TOOLS_OVERLAP_BENCH_PACKBENCH_H

#include "BenchCommon.h"

namespace overlap {
namespace bench {

/// Runs `overlap-bench --pack` with the parsed arguments: a table, a
/// summary line and --csv; returns the exit status.
int packBench(const Args &args, int warmup, int iters);

} // namespace bench
} // namespace overlap

#endif // OVERLAP_TOOLS_OVERLAP_BENCH_PACKBENCH_H
