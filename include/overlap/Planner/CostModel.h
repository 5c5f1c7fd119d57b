//===- CostModel.h - Per-call GEMM and collective costs --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Binds a profile to one matmul problem and answers: how long does a GEMM of
// m rows take, how many bytes does a tile of m rows put on the wire and how
// long does its collective take. Every answer is for one call, per-call
// latency included, uncontended.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_COSTMODEL_H
#define OVERLAP_PLANNER_COSTMODEL_H

#include "overlap/Planner/Profile.h"
#include "overlap/Planner/Simulator.h"

#include "llvm/Support/Error.h"

#include <string>

namespace overlap {
namespace planner {

/// One fused matmul + collective. M, N, K are the global GEMM sizes
/// (C[M,N] = A[M,K] B[K,N]); ranks is the collective's group size.
struct MatmulProblem {
  Collective collective = Collective::AllReduce;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::F16;
  int64_t ranks = 1;
};

enum class Bound { Compute, Comm };
llvm::StringRef toString(Bound bound);

class CostModel {
public:
  /// Fails when the problem is malformed or the profile cannot price it
  /// (no GEMM curve for (N, K, dtype) and no roofline; no curve for the
  /// collective).
  static llvm::Expected<CostModel> create(const Profile &profile,
                                          const MatmulProblem &problem);

  /// One GEMM call of `rows` rows (of N columns, depth K).
  double gemmUs(int64_t rows) const;
  /// Bytes on the wire for a tile of `rows` rows: rows x N x elt for
  /// all-reduce and reduce-scatter (the whole tile summed over ranks),
  /// rows x K x elt for all-gather (local rows/R times R ranks).
  double commBytes(int64_t rows) const;
  /// One collective call for a tile of `rows` rows; 0 when ranks == 1.
  double commUs(int64_t rows) const;

  const MatmulProblem &getProblem() const { return problem; }
  const Profile &getProfile() const { return *profile; }
  PipelineOrder getOrder() const;
  /// Row alignment of tile boundaries: the profile's, raised to a multiple
  /// of the group size for reduce-scatter and all-gather, whose tiles take
  /// an equal share of every rank's block (so every tile, the remainder
  /// tile included, divides by the group size when M does).
  int64_t getAlignment() const;
  double getComputeContention() const { return profile->computeContention; }
  double getCommContention() const { return profile->commContention; }

  /// Unsplit, uncontended: one GEMM of M rows and one collective call.
  double serialUs() const { return gemmUs(problem.m) + commUs(problem.m); }
  /// Perfect overlap with no decomposition loss: max(T_comp, T_comm).
  double idealUs() const;
  Bound getBound() const;

  /// Describes where GEMM times come from ("curve N=8192 K=3072 f16" or
  /// "roofline ...") and how the collective curve was scaled.
  std::string describeGemmSource() const;
  std::string describeCommSource() const;

private:
  CostModel() = default;

  const Profile *profile = nullptr;
  MatmulProblem problem;
  const GemmCurve *gemmCurve = nullptr;
  double peakFlops = 0;
  double bandwidth = 0;
  const CommCurve *commCurve = nullptr;
  double commScale = 0;
};

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_COSTMODEL_H
