//===- BenchRunner.cpp - One GEMM + collective on the GPU ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/BenchRunner.h"

#include "overlap/Calibration/MeasuringContext.h"
#include "overlap/Calibration/RankMajorBench.h"
#include "overlap/Calibration/StandIn.h"
#include "overlap/Calibration/TileSchedule.h"
#include "overlap/Planner/Ring.h"

#include "CudaCheck.h"
#include "RankMajorSum.h"
#include "SmCopy.h"

#include "overlap/Runtime/overlap_runtime_cuda.h"

#include "llvm/Support/ErrorHandling.h"

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;
using planner::TileLayout;
using planner::TileSpan;

static const int compute = OVERLAP_STREAM_COMPUTE, comm = OVERLAP_STREAM_COMM;

Inputs calibration::makeInputs(const RankProblem &p, int64_t me) {
  Inputs in;
  const size_t aBytes = size_t(p.aRows() * p.k) * elementBytes(p.dtype);
  if (p.dispatches()) {
    // What the exchange delivers to this rank, in row order.
    in.gathered = p.dispatchedA(me);
    in.a =
        inputElements(p.dtype, p.seed(me, Operand::A), size_t(p.aRows() * p.k));
  } else if (p.gathers()) {
    in.gathered = p.gatheredA();
    in.a.assign(in.gathered.begin() + ptrdiff_t(size_t(me) * aBytes),
                in.gathered.begin() + ptrdiff_t(size_t(me + 1) * aBytes));
  } else {
    in.a =
        inputElements(p.dtype, p.seed(me, Operand::A), size_t(p.aRows() * p.k));
  }
  in.b = inputElements(p.dtype, p.seed(me, Operand::B), size_t(p.k * p.n));
  in.c0 = inputElements(p.dtype, p.seed(me, Operand::C0), size_t(p.m * p.n));
  return in;
}

char *BenchRunner::at(void *base, int64_t row, int64_t width) const {
  return static_cast<char *>(base) + size_t(row * width) * elt;
}

char *BenchRunner::tileBuffer(const TileLayout &l, size_t t) const {
  if (packsOutput() && l.isWhole(t))
    return static_cast<char *>(c);
  return at(packed, l[t].offset, commWidth());
}

size_t BenchRunner::packedOffset(const TileLayout &l, size_t t,
                                 int64_t slot) const {
  return size_t(l.packedRow(t, slot, 0) * commWidth()) * elt;
}

size_t BenchRunner::resultBytes() const {
  return coll == Collective::ReduceScatter ? size_t(s.m / group * s.n) * elt
                                           : size_t(s.m * s.n) * elt;
}

/// Which layout case a collective's tile GEMM follows: A in place and the
/// output packed (reduce-scatter, combine), A packed and C in place
/// (all-gather, dispatch), or both in place (all-reduce).
enum class GemmCase { InPlace, PackedOutput, PackedInput };

static GemmCase gemmCase(const BenchRunner &r) {
  if (r.packsOutput())
    return GemmCase::PackedOutput;
  if (r.receivesA())
    return GemmCase::PackedInput;
  return GemmCase::InPlace;
}

size_t BenchRunner::packedBytes() const {
  return size_t(s.m * commWidth()) * elt;
}

void BenchRunner::gemm(const TileLayout &l, size_t t, int64_t tag) {
  const TileSpan &sp = l[t];
  const int64_t batch = l.gemmBatch(t);
  const void *aTile = nullptr;
  void *cTile = nullptr;
  int64_t strideA = 0, strideC = 0;
  switch (gemmCase(*this)) {
  case GemmCase::InPlace:
    aTile = at(a, sp.offset, s.k);
    cTile = at(c, sp.offset, s.n);
    break;
  case GemmCase::PackedOutput:
    // A's rows of every block, a block apart; the output packed.
    aTile = at(a, sp.blockOffset, s.k);
    strideA = l.blockSize() * s.k;
    cTile = tileBuffer(l, t);
    strideC = sp.blockRows * s.n;
    break;
  case GemmCase::PackedInput:
    // The slices that arrived one after another; C's rows a block apart.
    aTile = tileBuffer(l, t);
    strideA = sp.blockRows * s.k;
    cTile = at(c, sp.blockOffset, s.n);
    strideC = l.blockSize() * s.n;
    break;
  }
  if (batch == 1)
    strideA = strideC = 0;
  check(ctx,
        overlap_gemm(ctx, compute, tag, batch,
                     batch == 1 ? sp.rows : sp.blockRows, s.n, s.k, dtype,
                     aTile, s.k, strideA, b, s.n, 0, dtype, cTile, s.n, strideC,
                     0),
        "overlap_gemm");
}

void BenchRunner::tileGemm(const TileLayout &l, size_t t, bool batched) {
  // Tagged with its tile index: a tile GEMM runs under the SM target, as
  // in the overlapped run (the serial and "GEMM alone" runs pass -1 and
  // get every SM).
  const TileSpan &sp = l[t];
  const bool rs = packsOutput();
  // Reduce-scatter, combine: A in place, the output into the packed
  // buffer; all-gather, dispatch: A from the packed buffer, the output
  // into C.
  void *aBase = rs ? a : packed, *cBase = rs ? packed : c;
  if (!batched) {
    check(ctx,
          overlap_gemm(ctx, compute, int64_t(t), 1, sp.rows, s.n, s.k, dtype,
                       at(aBase, sp.offset, s.k), s.k, 0, b, s.n, 0, dtype,
                       at(cBase, sp.offset, s.n), s.n, 0, 0),
          "overlap_gemm (contiguous tile)");
    return;
  }
  const int64_t g = l.slots(), rows = sp.blockRows;
  const void *aTile =
      rs ? at(a, sp.blockOffset, s.k) : at(packed, sp.offset, s.k);
  void *cTile = rs ? at(packed, sp.offset, s.n) : at(c, sp.blockOffset, s.n);
  const int64_t strideA = rs ? l.blockSize() * s.k : rows * s.k;
  const int64_t strideC = rs ? rows * s.n : l.blockSize() * s.n;
  check(ctx,
        overlap_gemm(ctx, compute, int64_t(t), g, rows, s.n, s.k, dtype, aTile,
                     s.k, strideA, b, s.n, 0, dtype, cTile, s.n, strideC, 0),
        "overlap_gemm (batched tile)");
}

void BenchRunner::packC(const TileLayout &l, size_t t, int64_t tag) {
  const TileSpan &sp = l[t];
  check(ctx,
        overlap_pack(ctx, compute, tag, int64_t(elt),
                     at(c, sp.blockOffset, s.n), l.slots(), sp.blockRows, s.n,
                     l.blockSize() * s.n, s.n, tileBuffer(l, t)),
        "overlap_pack");
}

void BenchRunner::packA(const TileLayout &l, size_t t, int64_t tag) {
  const TileSpan &sp = l[t];
  // The compute stream, as overlap-schedule-streams places the packs (A is
  // written by no tile work): on the comm stream the pack of tile t + 1
  // queued behind exchange t, which waits for GEMM t-1 that holds every SM.
  check(ctx,
        overlap_pack(ctx, compute, tag, int64_t(elt),
                     at(a, sp.blockOffset, s.k), l.slots(), sp.blockRows, s.k,
                     l.blockSize() * s.k, s.k, at(send, sp.offset, s.k)),
        "overlap_pack (dispatch)");
}

void BenchRunner::standInCopy(void *dst, const void *src, size_t bytes,
                              int64_t tag) {
  if (!bytes)
    return;
  if (smCopy())
    calibration::smCopy(ctx, comm, dst, src, bytes, smCopyCtas);
  else
    check(ctx, overlap_memcpy(ctx, comm, tag, dst, src, bytes),
          "overlap_memcpy");
}

void BenchRunner::collective(const TileLayout &l, size_t t, int64_t tag) {
  const TileSpan &sp = l[t];
  const size_t tileBytes = size_t(sp.rows * commWidth()) * elt;
  const size_t slice = tileBytes / size_t(l.slots());
  // What both stand-ins move (copy-engine and sm-copy alike).
  const StandInBytes moved = standInBytes(coll, group, tileBytes);
  const size_t wire = moved.wire;
  auto copy = [&](void *dst, const void *src, size_t bytes) {
    standInCopy(dst, src, bytes, tag);
  };
  switch (coll) {
  case Collective::AllReduce: {
    char *rows = at(c, sp.offset, s.n);
    if (nccl) {
      enqueueCollective(ctx, tag, coll, dtype, rows, at(result, sp.offset, s.n),
                        sp.rows * s.n);
      return;
    }
    // The tile itself, then the rest of the ring's bytes from scratch.
    copy(mirror + packedOffset(l, t, 0), rows, moved.fromTile);
    copy(hostExtra, extra, wire - moved.fromTile);
    return;
  }
  case Collective::ReduceScatter: {
    char *src = tileBuffer(l, t);
    if (nccl) {
      enqueueCollective(ctx, tag, coll, dtype, src,
                        at(result, sp.blockOffset, s.n), sp.blockRows * s.n);
      return;
    }
    // A ring sends the slices of the other ranks' blocks (G-1 of G);
    // this rank's own slice stays.
    copy(mirror + packedOffset(l, t, 1), src + slice, wire);
    return;
  }
  case Collective::AllGather: {
    char *dst = tileBuffer(l, t);
    const char *local = at(a, sp.blockOffset, s.k);
    if (nccl) {
      enqueueCollective(ctx, tag, coll, dtype, local, dst, sp.blockRows * s.k);
      return;
    }
    // This rank (rank 0, the only process) writes its own slot, as an
    // out-of-place all-gather does; the other slots' bytes go to the
    // host, as many as a ring moves.
    copy(dst, local, moved.local);
    copy(mirror + packedOffset(l, t, 1), dst + slice, wire);
    return;
  }
  case Collective::AllToAll: {
    // Dispatch: the tile's packed rows of A (A itself for a whole tile,
    // whose blocks are already contiguous) into the packed buffer.
    // Combine: the tile's GEMM output into its rows of the result (packed
    // order). Block j goes to rank j either way.
    const char *src = dispatches()
                          ? (l.isWhole(t) ? static_cast<const char *>(a)
                                          : at(send, sp.offset, s.k))
                          : tileBuffer(l, t);
    char *dst = dispatches() ? tileBuffer(l, t) : at(result, sp.offset, s.n);
    if (nccl) {
      enqueueCollective(ctx, tag, coll, dtype, src, dst,
                        sp.blockRows * commWidth());
      return;
    }
    // This rank's own block stays (device -> device); the G - 1 others
    // leave it: their bytes go to the host.
    copy(dst + size_t(me) * slice, src + size_t(me) * slice, moved.local);
    copy(mirror + packedOffset(l, t, 1), src + slice, wire);
    return;
  }
  }
}

void BenchRunner::rankMajorGemm(size_t t, int64_t tag) {
  const planner::RankMajorLayout &l = *rankMajor;
  const int64_t rows = l[t].rows, row = l.globalRow(t, me);
  if (coll == Collective::ReduceScatter) {
    // The partial's own buffer (step 0: straight into staging slot 0, as
    // the compiled program does when C and the result share a type).
    const int64_t at = rankMajorStagingRow(l, t);
    char *partial =
        l.exchanges(t) ? this->at(send, at, s.n) : this->at(packed, at, s.n);
    check(ctx,
          overlap_memcpy(ctx, compute, tag, partial, this->at(c, row, s.n),
                         size_t(rows * s.n) * elt),
          "overlap_memcpy (C's rows of a rank-major chunk)");
    check(ctx,
          overlap_gemm(ctx, compute, tag, 1, rows, s.n, s.k, dtype,
                       this->at(a, row, s.k), s.k, 0, b, s.n, 0, dtype, partial,
                       s.n, 0, 0),
          "overlap_gemm (rank-major chunk)");
    return;
  }
  // All-gather: step 0 reads the local shard's chunk, the others the rows
  // that arrived.
  const char *rowsOfA = l.exchanges(t) ? this->at(packed, row, s.k)
                                       : this->at(a, l[t].chunkOffset, s.k);
  check(ctx,
        overlap_gemm(ctx, compute, tag, 1, rows, s.n, s.k, dtype, rowsOfA, s.k,
                     0, b, s.n, 0, dtype, this->at(c, row, s.n), s.n, 0, 0),
        "overlap_gemm (rank-major chunk)");
}

void BenchRunner::shift(size_t t, int64_t tag) {
  const planner::RankMajorLayout &l = *rankMajor;
  if (!l.exchanges(t))
    return;
  const int64_t rows = l[t].rows, width = commWidth();
  const bool rs = coll == Collective::ReduceScatter;
  // Reduce-scatter sends the partial from its buffer into slot s of the
  // owner's staging buffer; all-gather sends the local chunk, and receives
  // block (r + s) mod G's at its rows of the gathered buffer.
  const int64_t row = rs ? rankMajorStagingRow(l, t) : l.globalRow(t, me);
  const char *src = rs ? at(send, row, width) : at(a, l[t].chunkOffset, width);
  char *dst = at(packed, row, width);
  if (nccl) {
    check(ctx,
          overlap_shift(ctx, comm, tag, nullptr, dtype, l.shift(t), src, dst,
                        rows * width),
          "overlap_shift");
    return;
  }
  // One point-to-point block: the bytes this rank sends (what the
  // Planner's shiftBytes prices), to the far side at the rows the chunk
  // has in the receiving buffer; the stand-in receives nothing (the
  // receiving buffer holds what the peers would send, see
  // checkRankMajorRun).
  standInCopy(mirror + size_t(row * width) * elt, src,
              size_t(rows * width) * elt, tag);
}

void BenchRunner::rankMajorSum() {
  auto *stream = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, compute));
  const int64_t g = rankMajor->groupSize();
  checkCuda(launchRankOrderSum(dtype, packed,
                               size_t(rankMajor->blockSize() * s.n), int(g),
                               int(me), result, stream),
            "the rank-major sum's launch");
}

int BenchRunner::producer() const { return receivesA() ? comm : compute; }

int BenchRunner::consumer() const { return receivesA() ? compute : comm; }

int BenchRunner::overlappedEnd() const {
  return rankMajorSums() ? compute : consumer();
}

namespace {

/// The runtime calls of one tile's steps: GEMM producers (with
/// reduce-scatter's pack of C) or collective producers, signal/wait on the
/// acquired set: signal t for tile t, tiles + t for dispatch's pack of
/// tile t.
class RunnerSteps : public TileSteps {
public:
  RunnerSteps(BenchRunner &r, const TileLayout &l, overlap_signals *sigs)
      : r(r), l(l), sigs(sigs) {}

  /// Dispatch over several tiles: every tile's pack first, on the compute
  /// stream.
  static TileExtras extras(const BenchRunner &r, const TileLayout &l) {
    TileExtras e;
    e.prepareAll = r.dispatches() && !l.isWhole(0);
    return e;
  }
  static int32_t signalsNeeded(const BenchRunner &r, const TileLayout &l) {
    return int32_t(l.size() * (extras(r, l).prepareAll ? 2 : 1));
  }

  void prepare(size_t t) override { r.packA(l, t, tag(t)); }
  void signalPrepared(size_t t) override {
    check(r.ctx, overlap_signal(r.ctx, compute, sigs, packSignal(t)),
          "signal (pack)");
  }
  void waitPrepared(size_t t) override {
    check(r.ctx, overlap_wait(r.ctx, comm, sigs, packSignal(t)), "wait (pack)");
  }

  void produce(size_t t) override {
    if (r.receivesA()) {
      r.collective(l, t, tag(t));
      return;
    }
    if (r.packsOutput() && !l.isWhole(t))
      r.packC(l, t, tag(t));
    r.gemm(l, t, tag(t));
  }
  void signal(size_t t) override {
    check(r.ctx, overlap_signal(r.ctx, r.producer(), sigs, int32_t(t)),
          "signal");
  }
  void wait(size_t t) override {
    check(r.ctx, overlap_wait(r.ctx, r.consumer(), sigs, int32_t(t)), "wait");
  }
  void consume(size_t t) override {
    if (r.receivesA())
      r.gemm(l, t, tag(t));
    else
      r.collective(l, t, tag(t));
  }

private:
  int64_t tag(size_t t) const { return l.size() == 1 ? -1 : int64_t(t); }
  int32_t packSignal(size_t t) const { return int32_t(l.size() + t); }

  BenchRunner &r;
  const TileLayout &l;
  overlap_signals *sigs;
};

/// A rank-major plan's steps (BenchRunner::runRankMajor): signal t for tile
/// t, signal `tiles` after the last shift (reduce-scatter's sum waits).
class RankMajorSteps : public TileSteps {
public:
  RankMajorSteps(BenchRunner &r, overlap_signals *sigs)
      : r(r), l(*r.rankMajor), sigs(sigs) {}

  bool crosses(size_t t) const override { return l.exchanges(t); }
  void produce(size_t t) override {
    if (r.rankMajorSums())
      r.rankMajorGemm(t, int64_t(t));
    else
      r.shift(t, int64_t(t));
  }
  void signal(size_t t) override {
    check(r.ctx, overlap_signal(r.ctx, r.producer(), sigs, int32_t(t)),
          "signal");
  }
  void wait(size_t t) override {
    check(r.ctx, overlap_wait(r.ctx, r.consumer(), sigs, int32_t(t)), "wait");
  }
  void consume(size_t t) override {
    if (r.rankMajorSums())
      r.shift(t, int64_t(t));
    else
      r.rankMajorGemm(t, int64_t(t));
  }
  void signalDone() override {
    check(r.ctx, overlap_signal(r.ctx, comm, sigs, int32_t(l.size())),
          "signal (last shift)");
  }
  void waitDone() override {
    check(r.ctx, overlap_wait(r.ctx, compute, sigs, int32_t(l.size())),
          "wait (last shift)");
  }
  void finish() override { r.rankMajorSum(); }

private:
  BenchRunner &r;
  const planner::RankMajorLayout &l;
  overlap_signals *sigs;
};

} // namespace

void BenchRunner::run(const TileLayout &l, int64_t sigKey) {
  overlap_signals *sigs = nullptr;
  check(ctx,
        overlap_signals_acquire(ctx, sigKey,
                                RunnerSteps::signalsNeeded(*this, l), &sigs),
        "acquire");
  RunnerSteps steps(*this, l, sigs);
  enqueueTiles(l.size(), RunnerSteps::extras(*this, l), steps);
}

void BenchRunner::runRankMajor(int64_t sigKey) {
  const size_t tiles = rankMajor->size();
  TileExtras extras;
  extras.finish = rankMajorSums();
  overlap_signals *sigs = nullptr;
  check(ctx,
        overlap_signals_acquire(
            ctx, sigKey, int32_t(tiles + (extras.finish ? 1 : 0)), &sigs),
        "acquire");
  RankMajorSteps steps(*this, sigs);
  enqueueTiles(tiles, extras, steps);
}

void BenchRunner::allocate() {
  const size_t aRows = size_t(gathers() ? s.m / group : s.m);
  check(ctx, overlap_alloc(ctx, aRows * size_t(s.k) * elt, &a), "alloc A");
  check(ctx, overlap_alloc(ctx, size_t(s.k * s.n) * elt, &b), "alloc B");
  check(ctx, overlap_alloc(ctx, size_t(s.m * s.n) * elt, &c), "alloc C");
  check(ctx, overlap_alloc(ctx, size_t(s.m * s.n) * elt, &c0), "alloc C0");
  if (coll != Collective::AllReduce)
    check(ctx, overlap_alloc(ctx, packedBytes(), &packed), "alloc packed");
  if (dispatches() || rankMajorSums())
    check(ctx, overlap_alloc(ctx, packedBytes(), &send), "alloc send");
  if ((nccl && !receivesA()) || combines() || rankMajorSums())
    check(ctx, overlap_alloc(ctx, resultBytes(), &result), "alloc result");
  if (nccl)
    return;
  // The far side: pinned host memory for the copy engines, device memory
  // for the sm-copy kernel (an NVLink peer's memory is device memory).
  auto far = [&](size_t bytes, char *&p) {
    void *made = nullptr;
    if (smCopy())
      check(ctx, overlap_alloc(ctx, bytes, &made), "alloc (sm-copy mirror)");
    else
      checkCuda(cudaMallocHost(&made, bytes), "cudaMallocHost");
    p = static_cast<char *>(made);
  };
  far(packedBytes(), mirror);
  if (coll == Collective::AllReduce) {
    size_t surplus =
        size_t(planner::ringWireBytes(coll, group, int64_t(packedBytes())));
    surplus = surplus > packedBytes() ? surplus - packedBytes() + 64 : 64;
    far(surplus, hostExtra);
    check(ctx, overlap_alloc(ctx, surplus, &extra), "alloc");
  }
}

void BenchRunner::release() {
  for (void *p : {a, b, c, c0, packed, send, result, extra})
    overlap_free(ctx, p);
  if (smCopy()) {
    overlap_free(ctx, mirror);
    overlap_free(ctx, hostExtra);
  } else {
    cudaFreeHost(mirror);
    cudaFreeHost(hostExtra);
  }
  a = b = c = c0 = packed = send = result = extra = nullptr;
  mirror = hostExtra = nullptr;
}

void BenchRunner::upload(const Inputs &in) {
  check(ctx, overlap_memcpy(ctx, compute, -1, a, in.a.data(), in.a.size()),
        "upload");
  check(ctx, overlap_memcpy(ctx, compute, -1, b, in.b.data(), in.b.size()),
        "upload");
  check(ctx, overlap_memcpy(ctx, compute, -1, c0, in.c0.data(), in.c0.size()),
        "upload");
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
}
