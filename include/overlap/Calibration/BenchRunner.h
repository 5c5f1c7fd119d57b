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
//   all-to-all      one expert per rank (--side). Dispatch: tile t packs
//                   its rows of every block of A (block j goes to rank j),
//                   exchanges them into a packed buffer, then one
//                   strided-batched GEMM writes its rows of every block of
//                   C, as all-gather. Combine: as reduce-scatter up to the
//                   exchange, which sends block j of the tile's buffer to
//                   rank j, into the tile's rows of the result
// on one of three legs (StandIn.h): NCCL's collective on the world, or a
// stand-in moving each tile's ring wire bytes: the copy-engine leg
// (cudaMemcpyAsync device -> pinned host) or the sm-copy leg (a copy kernel
// of a bounded number of CTAs, device -> device). The tiles are enqueued
// interleaved (TileSchedule.h). checkRun runs a layout once on poisoned
// outputs and checks what it wrote.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_BENCHRUNNER_H
#define OVERLAP_CALIBRATION_BENCHRUNNER_H

#include "overlap/Calibration/Arguments.h"
#include "overlap/Calibration/RankProblem.h"
#include "overlap/Calibration/TileSchedule.h"
#include "overlap/Planner/TileLayout.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <cstdint>
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
  // A is M x K; for all-gather it is this rank's shard, M/G x K.
  void *a = nullptr, *b = nullptr, *c = nullptr, *c0 = nullptr;
  // Packed tiles: reduce-scatter's GEMM outputs (M x N), all-gather's
  // gathered A (M x K).
  void *packed = nullptr;
  /// Dispatch: the tiles' rows of A's blocks, packed before each exchange.
  void *send = nullptr;
  /// nccl: all-reduce M x N, reduce-scatter M/G x N; combine (both legs):
  /// M x N in packed order.
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
  /// comm stream before the exchange (the pack overlap-decompose emits).
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

  int producer() const;
  int consumer() const;
  /// The schedule the compiler emits for layout `l`, enqueued tile by tile
  /// (enqueueInterleaved): the producer's work of tile t, signal t, then
  /// the consumer's wait t and work of tile t.
  void run(const planner::TileLayout &l, int64_t sigKey);
  void serial() { run(whole, key); }
  void overlapped() { run(plan, key + 1); }

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

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_BENCHRUNNER_H
