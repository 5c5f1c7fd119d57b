//===- CostModel.h - Per-call GEMM and collective costs --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Binds a profile to one matmul problem and answers: how long does the GEMM
// of a tile of m rows take as the decomposition runs it, how many bytes does
// the tile put on the wire and how long does its collective take. Every
// answer is per call, per-call latency included, uncontended.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_COSTMODEL_H
#define OVERLAP_PLANNER_COSTMODEL_H

#include "overlap/Planner/Profile.h"
#include "overlap/Planner/Simulator.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace overlap {
namespace planner {

/// Which side of the experts' GEMM an all-to-all sits on in expert
/// parallelism: Dispatch exchanges the tokens that feed the GEMM (A, as
/// all-gather does), Combine exchanges its output (C, as reduce-scatter
/// does).
enum class AllToAllSide { Dispatch, Combine };
std::optional<AllToAllSide> parseAllToAllSide(llvm::StringRef name);
llvm::StringRef toString(AllToAllSide side);
/// The all-to-all's dispatch (resp. combine) exchange: `side` is read for
/// all-to-all only.
inline bool dispatches(Collective collective, AllToAllSide side) {
  return collective == Collective::AllToAll && side == AllToAllSide::Dispatch;
}
inline bool combines(Collective collective, AllToAllSide side) {
  return collective == Collective::AllToAll && side == AllToAllSide::Combine;
}

/// One fused matmul + collective. M, N, K are the global GEMM sizes
/// (C[M,N] = A[M,K] B[K,N]); ranks is the collective's group size. For
/// all-to-all, M is the tokens one rank's experts compute: G blocks of M/G
/// rows, block j exchanged with group rank j.
struct MatmulProblem {
  Collective collective = Collective::AllReduce;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::F16;
  int64_t ranks = 1;
  /// Only read for all-to-all.
  AllToAllSide side = AllToAllSide::Dispatch;
  /// Experts per rank (all-to-all only; 1 for every other collective). M is
  /// then the rows all of a rank's experts compute, ranks x experts blocks
  /// of tokens; a tile takes tiles[i] / (ranks x experts) tokens of every
  /// block and runs as `experts` GEMMs, each of tiles[i] / experts rows.
  int64_t experts = 1;
  /// The collective's element type when it differs from the GEMM's
  /// factors' (`dtype`): an f32 accumulator reduced as f32 (bf16 x bf16 ->
  /// f32 moves 4 bytes an element), or a sum rounded to bf16 before the
  /// collective. The wire bytes are priced from it.
  std::optional<DType> commDtype;
  /// Bytes the decomposition's own copies move (read plus written) per row
  /// of a tile smaller than M, on the compute and on the comm stream: an
  /// all-to-all dispatch packs each tile's tokens (compute), a combine
  /// unpacks each exchange into its strided rows (comm), a reduce-scatter
  /// or combine copies the rows of an accumulator that is not a fill
  /// (compute). Priced at the device's memory bandwidth
  /// (CostModel::copyUs); a tile of all of M needs none.
  double computeCopyBytesPerRow = 0;
  double commCopyBytesPerRow = 0;
  /// Reduce-scatter and all-gather: rows come in groups of this many that
  /// a tile never splits (the b of sequence parallelism on a `[b, s, h]`
  /// layout, whose tiles the decomposition computes b-major in place), so
  /// tiles take a multiple of ranks x rowGroup rows.
  int64_t rowGroup = 1;
};

/// Whether the collective delivers the GEMM's input (all-gather, all-to-all
/// dispatch: the pipeline runs comm then compute) rather than taking its
/// output.
bool exchangesInput(const MatmulProblem &problem);
/// The same for a collective and, for all-to-all, its side.
bool exchangesInput(Collective collective, AllToAllSide side);
/// "all-gather", or "all-to-all (dispatch)" where the side matters.
std::string describeCollective(const MatmulProblem &problem);

enum class Bound { Compute, Comm };
llvm::StringRef toString(Bound bound);

/// How the GEMM of a reduce-scatter or all-gather tile smaller than M is
/// priced. The decomposition runs such a tile as one strided-batched GEMM
/// of G matrices of rows/G rows sharing B (G = the group size); every other
/// tile (all-reduce, one rank, the whole of M) is one GEMM of its rows.
enum class TileGemmPricing {
  /// Every tile is one GEMM of its rows: nothing to approximate.
  Contiguous,
  /// The profile's curve for (N, K, dtype) with batch G.
  BatchedCurve,
  /// The one-GEMM price of the output row tiles the batched GEMM computes:
  /// G x ceil(rows/G / tile rows) x tile rows (device.gemm_tile).
  TileQuantized,
  /// Neither a batch-G curve nor device.gemm_tile: one GEMM of the tile's
  /// rows, which ignores the padding of the G small matrices.
  UnbatchedApproximation,
};
llvm::StringRef toString(TileGemmPricing pricing);

class CostModel {
public:
  /// Fails when the problem is malformed or the profile cannot price it
  /// (std::errc::not_supported: no GEMM curve for (N, K, dtype), no
  /// roofline and no curve of the dtype, or of another dtype with both
  /// peaks, to scale from; no curve for the collective). GEMM times come
  /// from the exact curve, else the roofline, else the nearest curve scaled
  /// (Profile::findNearestGemmCurve); describeGemmSource says which.
  static llvm::Expected<CostModel> create(const Profile &profile,
                                          const MatmulProblem &problem);

  /// The GEMM work of one tile of `rows` rows as the decomposition runs it:
  /// a strided-batched GEMM priced as getTileGemmPricing() says for a
  /// reduce-scatter or all-gather tile smaller than M, else one GEMM of
  /// `rows` rows. With calls > 1 the tile is issued as `calls` separate
  /// GEMMs of near-equal contiguous rows (FiCCO's unfused schedules), each
  /// priced by contiguousGemmUs. A tile smaller than M adds its copies on
  /// the compute stream (MatmulProblem::computeCopyBytesPerRow).
  double gemmUs(int64_t rows, int64_t calls = 1) const;
  /// One GEMM call of `rows` contiguous rows (of N columns, depth K): the
  /// profile's batch-1 curve or its roofline.
  double contiguousGemmUs(int64_t rows) const;
  TileGemmPricing getTileGemmPricing() const { return tilePricing; }
  /// The collective's buffer size (a comm curve's x) for a tile of `rows`
  /// rows: rows x N x elt for all-reduce and reduce-scatter (the whole tile
  /// summed over ranks), rows x K x elt for all-gather (local rows/R times R
  /// ranks); for all-to-all one rank's send buffer, R blocks of rows/R rows
  /// of K (dispatch) or N (combine), the local block included. The curve's
  /// ring factor (R-1)/R takes the local block out.
  double commBytes(int64_t rows) const;
  /// One collective call for a tile of `rows` rows (0 when ranks == 1),
  /// plus the copies of the tile on the comm stream.
  double commUs(int64_t rows) const;
  /// Rank-major tiles (RankMajor.h). The bytes one rank sends in one
  /// point-to-point shift of a chunk of `rows` rows: rows x N x elt for
  /// reduce-scatter (a partial of the output, in the collective's dtype),
  /// rows x K x elt for all-gather (A's rows).
  double shiftBytes(int64_t rows) const;
  /// One shift of a chunk of `rows` rows (0 with one rank), priced from the
  /// collective's own curve: a ring reduce-scatter or all-gather of a buffer
  /// X puts (G-1)/G X bytes on the wire per rank (Ring.h), so a shift of b
  /// bytes costs the curve at X = b G / (G-1), the curve's per-call latency
  /// included (many small shifts pay many latencies). A prediction.
  double shiftUs(int64_t rows) const;
  /// The reduce-scatter's final sum of a rank-major plan: reading the G
  /// partials of every chunk and writing one, (G+1) x M/G x N elements of
  /// the collective's dtype, over the device's memory bandwidth; nullopt
  /// when the profile has no device.memory_bandwidth_gbps. 0 for every
  /// other collective.
  std::optional<double> rankMajorSumUs() const;

  /// Moving `bytes` (read plus written) through the device's memory: bytes
  /// over DeviceInfo::memoryBandwidth; 0 when the profile has none.
  double copyUs(double bytes) const;

  const MatmulProblem &getProblem() const { return problem; }
  const Profile &getProfile() const { return *profile; }
  PipelineOrder getOrder() const;
  /// Row alignment of tile boundaries: the profile's, raised to a multiple
  /// of the group size for reduce-scatter and all-gather, whose tiles take
  /// an equal share of every rank's block (so every tile, the remainder
  /// tile included, divides by the group size when M does).
  int64_t getAlignment() const;
  /// The rows every tile must be a multiple of, whatever the profile
  /// prefers: 1 for an all-reduce, else ranks x experts x rowGroup (the
  /// tile layout).
  int64_t getMinAlignment() const;
  /// Whether the collective takes SMs from the GEMM beside it: not for an
  /// all-gather on a device whose all-gathers run on the copy engines
  /// (DeviceInfo::zeroSmAllGather).
  bool commTakesSms() const {
    return !(problem.collective == Collective::AllGather &&
             profile->device.zeroSmAllGather);
  }
  /// The GEMM's slowdown while the collective runs: 1 when it takes no SMs.
  double getComputeContention() const {
    return commTakesSms() ? profile->computeContention : 1.0;
  }
  double getCommContention() const { return profile->commContention; }

  /// The unsplit GEMM: one call of M rows (one of M / experts rows per
  /// expert with several experts, a batch of `experts` matrices).
  double fullGemmUs() const;
  /// Unsplit, uncontended: the unsplit GEMM and one collective call.
  double serialUs() const { return fullGemmUs() + commUs(problem.m); }
  /// Perfect overlap with no decomposition loss: max(T_comp, T_comm) with
  /// T_comp the problem's GEMM as one call of M rows.
  double idealUs() const;
  Bound getBound() const;

  /// Describes where GEMM times come from ("curve N=8192 K=3072 f16" or
  /// "roofline ..."), followed for reduce-scatter and all-gather by how
  /// tiles smaller than M are priced; and how the collective curve was
  /// scaled.
  std::string describeGemmSource() const;
  std::string describeCommSource() const;

private:
  CostModel() = default;
  /// A reduce-scatter or all-gather tile smaller than M.
  double batchedGemmUs(int64_t rows) const;
  /// gemmUs for one expert (all of them when there is one).
  double expertGemmUs(int64_t rows, int64_t calls) const;

  const Profile *profile = nullptr;
  MatmulProblem problem;
  const GemmCurve *gemmCurve = nullptr;
  /// gemmCurve's times are multiplied by this: 1 for the exact curve, else
  /// Profile::findNearestGemmCurve's factor (a neighbour's curve).
  double gemmScale = 1.0;
  TileGemmPricing tilePricing = TileGemmPricing::Contiguous;
  /// The batch-G curve when tilePricing is BatchedCurve.
  const GemmCurve *batchCurve = nullptr;
  double batchScale = 1.0;
  double peakFlops = 0;
  double bandwidth = 0;
  const CommCurve *commCurve = nullptr;
  double commScale = 0;
};

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_COSTMODEL_H
