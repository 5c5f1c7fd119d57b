//===- BenchRunner.h - One GEMM + collective on the GPU --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// CUDA part (OverlapCalibrationCuda). The device buffers of one shape and
// collective and what overlap-bench enqueues on them, tiled as
// overlap-decompose tiles it (planner::TileLayout):
//   all-reduce      tile t: GEMM of its rows of C in place, then the
//                   all-reduce of those rows
//   reduce-scatter  tile t takes tiles[t]/G rows of every rank's block of
//                   M/G rows: C's rows packed into the tile's buffer, one
//                   strided-batched GEMM (batch G, B broadcast) into it, one
//                   reduce-scatter of it into the tile's rows of the result
//   all-gather      tile t: one all-gather of its rows of the local A shard
//                   into a packed buffer, then one strided-batched GEMM
//                   writing its rows of every block of C
//   all-to-all      one expert per rank (--side). Dispatch: every tile's
//                   rows of every block of A (block j goes to rank j) are
//                   packed on the compute stream before any tile's GEMM, as
//                   the compiled program does (Decompose.cpp's
//                   decomposeDispatch); tile t exchanges its packed rows
//                   once its pack's signal is up, then one strided-batched
//                   GEMM writes its rows of every block of C, as
//                   all-gather. Combine: as reduce-scatter up to the
//                   exchange, which sends block j of the tile's buffer to
//                   rank j, into the tile's rows of the result
// or, for a rank-major plan (reduce-scatter and all-gather;
// RankMajorBench.h, DecomposeRankMajor.cpp), one contiguous GEMM per chunk
// and one overlap_shift (its stand-in: the chunk's bytes, one point-to-point
// block) per exchanged chunk, and for reduce-scatter the sum of the G
// partials at the end (compute stream, after the last shift)
// on one of three legs (StandIn.h): NCCL's collective on the world, or a
// stand-in moving each tile's ring wire bytes: the copy-engine leg
// (cudaMemcpyAsync device -> pinned host) or the sm-copy leg (a copy kernel
// of a bounded number of CTAs, device -> device). The tiles are enqueued
// interleaved (TileSchedule.h). checkRun (checkRankMajorRun) runs a layout
// once on poisoned outputs and checks what it wrote.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_BENCHRUNNER_H
#define OVERLAP_CALIBRATION_BENCHRUNNER_H

#include "overlap/Calibration/Arguments.h"
#include "overlap/Calibration/RankProblem.h"
#include "overlap/Calibration/TileSchedule.h"
#include "overlap/Planner/RankMajor.h"
#include "overlap/Planner/TileLayout.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace overlap {
namespace calibration {

/// Host inputs of one input set on this rank, from the set's seeds
/// (RankProblem): its own A (for all-gather its M/G x K shard), B and C0,
/// and for all-gather every rank's shard in rank order (what the gathered
/// buffer holds once the collective has run).
struct Inputs {
  std::vector<char> a, b, c0, gathered;
};

Inputs makeInputs(const RankProblem &problem, int64_t me);

/// Device buffers of one shape and collective and the enqueue functions of
/// each variant: `whole` is the unsplit problem (serial, and the GEMM and
/// the collective alone), `plan` the overlapped tiles.
struct BenchRunner {
  overlap_context *ctx;
  overlap_dtype dtype;
  size_t elt;
  GemmShape s;
  planner::Collective coll;
  bool nccl;
  int64_t group; ///< the collective's ranks: --ranks, or the nccl world
  int64_t me;    ///< this rank in the group (0 on the stand-in legs)
  planner::TileLayout whole, plan;
  int64_t key; ///< signal-set keys: key (serial) and key + 1 (overlapped)
  /// All-to-all: which exchange (set after construction).
  planner::AllToAllSide side = planner::AllToAllSide::Dispatch;
  /// The sm-copy leg: the copy kernel's CTAs (set after construction); 0 on
  /// the other legs.
  int smCopyCtas = 0;
  /// A rank-major plan (set after construction, before allocate): the
  /// overlapped variant runs it instead of `plan`.
  std::optional<planner::RankMajorLayout> rankMajor;
  // A is M x K; for all-gather it is this rank's shard, M/G x K.
  void *a = nullptr, *b = nullptr, *c = nullptr, *c0 = nullptr;
  // Packed tiles: reduce-scatter's GEMM outputs (M x N), all-gather's
  // gathered A (M x K). Rank-major: reduce-scatter's staging buffer (G
  // slots of M/G x N), all-gather's received chunks (M x K, row order).
  void *packed = nullptr;
  /// Dispatch: the tiles' rows of A's blocks, packed before the exchanges.
  /// Rank-major reduce-scatter: the partials that are sent (M x N, at
  /// their staging rows).
  void *send = nullptr;
  /// nccl: all-reduce M x N, reduce-scatter M/G x N; combine (both legs):
  /// M x N in packed order; rank-major reduce-scatter (every leg): the sum,
  /// M/G x N.
  void *result = nullptr;
  /// The stand-ins' far side, laid out like its source: pinned host memory
  /// (copy-engine) or device memory (sm-copy).
  char *mirror = nullptr;
  void *extra = nullptr;     ///< stand-in all-reduce: surplus wire bytes
  char *hostExtra = nullptr; ///< where they go (host or device, as mirror)

  bool gathers() const { return coll == planner::Collective::AllGather; }
  bool dispatches() const { return planner::dispatches(coll, side); }
  bool combines() const { return planner::combines(coll, side); }
  /// The collective delivers the GEMM's input (all-gather, dispatch): it
  /// produces, the GEMM consumes.
  bool receivesA() const { return collectiveProduces(coll, side); }
  /// The GEMM writes packed tile buffers that the collective sends
  /// (reduce-scatter, combine).
  bool packsOutput() const {
    return coll == planner::Collective::ReduceScatter || combines();
  }
  /// Elements per row of what the collective moves: N, or K when it
  /// delivers A.
  int64_t commWidth() const { return receivesA() ? s.k : s.n; }
  char *at(void *base, int64_t row, int64_t width) const;
  /// The packed rows of tile t: for reduce-scatter its GEMM's output (C
  /// itself for a whole tile, whose packed order is C's), for all-gather
  /// the gathered A. All-reduce tiles have none (C in place).
  char *tileBuffer(const planner::TileLayout &l, size_t t) const;
  /// Byte offset of (tile t, slot) in a buffer in packed order.
  size_t packedOffset(const planner::TileLayout &l, size_t t,
                      int64_t slot) const;
  size_t resultBytes() const;
  size_t packedBytes() const;
  /// Bytes the whole problem's collective moves (nccl-tests' size).
  size_t commBytes() const { return packedBytes(); }

  /// Tile t's GEMM on the compute stream. `tag` is overlap_gemm's tile
  /// argument: the tile index for a tile of the overlapped run (the CUDA
  /// backend then keeps the communication's SMs free), -1 for a GEMM that
  /// runs alone (serial, "GEMM alone": every SM); it also names the call in
  /// errors.
  void gemm(const planner::TileLayout &l, size_t t, int64_t tag);
  /// Reduce-scatter and combine: the tile's buffer starts as C's rows of the
  /// tile (the copy overlap-decompose emits when C is not a fill), one kernel
  /// for all blocks.
  void packC(const planner::TileLayout &l, size_t t, int64_t tag);
  /// Dispatch: the tile's rows of every block of A into `send`, on the
  /// compute stream, every tile's before any GEMM (the packs
  /// overlap-decompose emits, where overlap-schedule-streams puts them).
  void packA(const planner::TileLayout &l, size_t t, int64_t tag);
  bool smCopy() const { return smCopyCtas > 0; }
  /// A stand-in's copy on the comm stream: cudaMemcpyAsync (copy-engine) or
  /// the copy kernel (sm-copy).
  void standInCopy(void *dst, const void *src, size_t bytes, int64_t tag);
  /// Tile t's collective (or its stand-in) on the comm stream.
  void collective(const planner::TileLayout &l, size_t t, int64_t tag);
  /// Tile t's GEMM for timing its two forms: `batched`, G matrices of
  /// rows/G rows sharing B (what the decomposition runs; the whole tile
  /// too is cut in G), or one contiguous GEMM of `rows` rows, both tagged
  /// tile t (under the SM target, as in the overlapped run). Reduce-scatter
  /// and all-gather only.
  void tileGemm(const planner::TileLayout &l, size_t t, bool batched);

  /// Rank-major reduce-scatter: the partials are summed at the end.
  bool rankMajorSums() const {
    return rankMajor && coll == planner::Collective::ReduceScatter;
  }
  /// Rank-major tile t's compute-stream work: reduce-scatter, C's rows of
  /// the chunk copied into its partial's buffer (C is not a fill: the copy
  /// the compiled program makes, on the compute stream) and one contiguous
  /// GEMM into it; all-gather, one contiguous GEMM of the chunk (the local
  /// A on step 0, else the received rows) into C's rows.
  void rankMajorGemm(size_t t, int64_t tag);
  /// Rank-major tile t's exchange on the comm stream (none on step 0):
  /// overlap_shift on the nccl leg; on a stand-in leg the chunk a shift
  /// sends (c x N partial, c x K rows of A), one point-to-point block,
  /// copied to the far side as the leg moves a collective's wire bytes.
  void shift(size_t t, int64_t tag);
  /// Rank-major reduce-scatter: the G staging slots summed in rank order
  /// into `result` on the compute stream (RankMajorSum.h).
  void rankMajorSum();
  /// The rank-major plan's schedule (enqueueTiles): reduce-scatter, per
  /// tile the GEMM (compute), signal; wait and shift (comm); then the
  /// comm stream's signal after the last shift, the compute stream's wait
  /// and the sum. All-gather: per tile the shift (comm), signal; wait and
  /// the GEMM (compute). Step 0 (the own block) has no shift, signal or
  /// wait.
  void runRankMajor(int64_t sigKey);

  int producer() const;
  int consumer() const;
  /// Where the overlapped variant ends: the consumer, or the compute
  /// stream for a rank-major reduce-scatter (its sum).
  int overlappedEnd() const;
  /// The schedule the compiler emits for layout `l`, enqueued tile by tile
  /// (enqueueInterleaved): the producer's work of tile t, signal t, then
  /// the consumer's wait t and work of tile t.
  void run(const planner::TileLayout &l, int64_t sigKey);
  void serial() { run(whole, key); }
  void overlapped() {
    if (rankMajor)
      runRankMajor(key + 1);
    else
      run(plan, key + 1);
  }

  void allocate();
  void release();
  /// Uploads this rank's A, B and C0 and waits for the copies.
  void upload(const Inputs &in);
};

/// Runs `l` once on fresh C with poisoned outputs and checks what the
/// collective (or its stand-in) delivered and sampled elements of every
/// tile's GEMM against a double-precision reference; returns an empty
/// string or what is wrong.
std::string checkRun(BenchRunner &r, const planner::TileLayout &l, int64_t key,
                     const Inputs &in, const RankProblem &problem,
                     uint64_t seed);

/// checkRun for r.rankMajor: reduce-scatter, the result equals the rank-
/// order sum of the staging slots bit for bit (rankOrderSum), every
/// partial this rank computed and (nccl) every partial it received is
/// within a GEMM's tolerance of the sending rank's reference, and a
/// stand-in's far side holds the sent partials; all-gather, the received
/// rows are every other rank's chunks, C's rows of every tile are within a
/// GEMM's tolerance and a stand-in's far side holds the local chunks.
std::string checkRankMajorRun(BenchRunner &r, int64_t key, const Inputs &in,
                              const RankProblem &problem, uint64_t seed);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_BENCHRUNNER_H
