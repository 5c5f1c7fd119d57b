//===- overlap-bench.cpp - Serial vs overlapped GEMM + comm -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// For each collective and shape (M, N, K): C (M x N) += A (M x K) . B (K x N)
// with the collective the compiler fuses with it, run through the runtime's
// C ABI on one GPU per rank, tiled as overlap-decompose tiles it
// (BenchLayout.h):
//   all-reduce      tile t: GEMM of its rows of C in place, then the
//                   all-reduce of those rows
//   reduce-scatter  tile t takes tiles[t]/G rows of every rank's block of
//                   M/G rows: C's rows packed into the tile's buffer, one
//                   strided-batched GEMM (batch G, B broadcast) into it, one
//                   reduce-scatter of it into the tile's rows of the result
//   all-gather      tile t: one all-gather of its rows of the local A shard
//                   into a packed buffer, then one strided-batched GEMM
//                   writing its rows of every block of C
// and the variants
//   serial      one GEMM, then one collective (all-gather: the mirror)
//   overlapped  the plan's tiles: the producer (GEMM, or the collective for
//               all-gather) of tile t on its stream, signal t; wait t and
//               the consumer of tile t on the other stream (the schedule
//               the compiler emits)
//   ideal       max(GEMM alone, collective alone)
// and the Planner's prediction for the plan. Reported in the style of
// nccl-tests, plus CSV: speedup = serial / overlapped, efficiency
// eta = (serial - overlapped) / (serial - ideal), prediction error =
// (predicted - overlapped) / overlapped.
//
// Communication legs (every table says which):
//   copy-engine  the bytes one rank would put on the wire for the tile's
//                collective over --ranks G in a ring (2(G-1)/G of the tile
//                for all-reduce, (G-1)/G for reduce-scatter and all-gather),
//                copied device -> pinned host by the copy engines: a
//                stand-in for a network link, on one GPU. It reduces
//                nothing; for all-gather it also copies this rank's own
//                slice into its slot (device -> device), so that the GEMM
//                reads what the stand-in wrote.
//   nccl         NCCL on the world communicator, G = the world size: one
//                process per GPU, started by mpirun, srun or torchrun
//                (overlap_cuda_context_create_launched; without launcher
//                variables one rank, a smoke test). Every rank runs the same
//                schedule on its own inputs (seeds that include the rank,
//                BenchRanks.h), so each can work out what the others fed
//                the collective; only rank 0 prints.
//
// Timing: CUDA events around each run, warm-up runs, medians over timed
// runs and over several input sets; over several ranks every run starts
// after a barrier and counts as long as its slowest rank took. Correctness
// on every input set: C is reset, what the run must write is poisoned, then
// the serial and the overlapped run are checked: what the collective (or its
// stand-in) delivered (bit for bit where it moves bytes or one rank reduces;
// a sum over several ranks: nothing left poisoned, sampled elements within
// the rounding bound of the other ranks' references plus this rank's own
// term), and sampled elements of every tile's GEMM against a
// double-precision reference. Every rank's failures are gathered by rank 0,
// whose exit status counts them.
//
// `--pack` instead times the pack kernel (overlap_pack / overlap_unpack)
// on strided 2-D blocks against cudaMemcpy2DAsync of the same block and a
// contiguous device-to-device copy of the same bytes, and checks pack and
// unpack against a host reference on every block.
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"
#include "BenchLayout.h"
#include "BenchRanks.h"
#include "PackBench.h"
#include "overlap/Planner/TilePlanner.h"

#include "llvm/Support/Error.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <tuple>

using namespace overlap;
using namespace overlap::bench;
using planner::Collective;

namespace {

const char *usage =
    "usage: overlap-bench [--collective C[,C...]] [--shapes MxNxK,...]\n"
    "         [--dtype f16|bf16|f32] [--leg copy-engine|nccl] [--ranks R]\n"
    "         [--profile NAME|PATH] [--strategy S] [--tiles T]\n"
    "         [--warmup 5] [--iters 20] [--input-sets 3] [--csv FILE]\n"
    "       overlap-bench --pack [--pack-shapes [ROWSx]BYTES[@STRIDE][:ELEM],"
    "...]\n"
    "         [--pack-total BYTES] [--warmup 5] [--iters 20] [--csv FILE]\n"
    "C is all-reduce (default), reduce-scatter or all-gather; a list runs\n"
    "each in turn. R (default 8, at least 2) is the group size of the\n"
    "copy-engine leg (one process). The nccl leg's group is the world: one\n"
    "process per GPU, e.g. mpirun -np 8 overlap-bench --leg nccl ... (or\n"
    "srun, torchrun --no-python; one process alone is one rank); every rank\n"
    "must get the same arguments, rank 0 prints and writes --csv. Without\n"
    "--profile the overlapped variant uses T uniform tiles (default 4;\n"
    "multiples of R for reduce-scatter and all-gather) and no prediction is\n"
    "reported. Default shapes: a sweep of 24 from compute- to comm-bound,\n"
    "including M=4096 N=8192 K=3072.\n"
    "--pack times overlap_pack and overlap_unpack against cudaMemcpy2DAsync\n"
    "and a contiguous device-to-device copy. Blocks default to rows of 2 B\n"
    ".. 16 KiB with a stride of twice the row, --pack-total bytes each\n"
    "(default 64 MiB); ROWS defaults to that total / BYTES, STRIDE to\n"
    "2 x BYTES, ELEM to the widest of 4, 2, 1 dividing BYTES.\n";

const int compute = OVERLAP_STREAM_COMPUTE, comm = OVERLAP_STREAM_COMM;

std::vector<GemmShape> defaultShapes() {
  std::vector<GemmShape> shapes;
  const std::pair<int64_t, int64_t> nk[] = {{8192, 3072}, {4096, 1024},
                                            {8192, 8192}, {4096, 16384},
                                            {8192, 1024}, {2048, 12288}};
  for (int64_t m : {1024, 2048, 4096, 8192})
    for (auto [n, k] : nk)
      shapes.push_back({m, n, k});
  return shapes;
}

/// Device buffers of one shape and collective and the enqueue functions of
/// each variant: `whole` is the unsplit problem (serial, and the GEMM and
/// the collective alone), `plan` the overlapped tiles.
struct Runner {
  overlap_context *ctx;
  overlap_dtype dtype;
  size_t elt;
  GemmShape s;
  Collective coll;
  bool nccl;
  int64_t group; // the collective's ranks: --ranks, or the nccl world
  int64_t me;    // this rank in the group (0 on the copy-engine leg)
  TileLayout whole, plan;
  int64_t key; // signal-set keys: key (serial) and key + 1 (overlapped)
  // A is M x K; for all-gather it is this rank's shard, M/G x K.
  void *a = nullptr, *b = nullptr, *c = nullptr, *c0 = nullptr;
  // Packed tiles: reduce-scatter's GEMM outputs (M x N), all-gather's
  // gathered A (M x K).
  void *packed = nullptr;
  void *result = nullptr; // nccl: all-reduce M x N, reduce-scatter M/G x N
  char *mirror = nullptr; // copy-engine: pinned, laid out like its source
  void *extra = nullptr;  // copy-engine all-reduce: surplus wire bytes
  char *hostExtra = nullptr;

  bool gathers() const { return coll == Collective::AllGather; }
  /// Elements per row of what the collective moves: N, or K for all-gather.
  int64_t commWidth() const { return gathers() ? s.k : s.n; }
  char *at(void *base, int64_t row, int64_t width) const {
    return static_cast<char *>(base) + size_t(row * width) * elt;
  }
  /// The packed rows of tile t: for reduce-scatter its GEMM's output (C
  /// itself for a whole tile, whose packed order is C's), for all-gather
  /// the gathered A. All-reduce tiles have none (C in place).
  char *tileBuffer(const TileLayout &l, size_t t) const {
    if (coll == Collective::ReduceScatter && l.isWhole(t))
      return static_cast<char *>(c);
    return at(packed, l[t].offset, commWidth());
  }
  /// Byte offset of (tile t, slot) in a buffer in packed order.
  size_t packedOffset(const TileLayout &l, size_t t, int64_t slot) const {
    return size_t(l.packedRow(t, slot, 0) * commWidth()) * elt;
  }

  void gemm(const TileLayout &l, size_t t, int64_t tag) {
    const TileSpan &sp = l[t];
    const int64_t batch = l.gemmBatch(t);
    const void *aTile = nullptr;
    void *cTile = nullptr;
    int64_t strideA = 0, strideC = 0;
    switch (coll) {
    case Collective::AllReduce:
      aTile = at(a, sp.offset, s.k);
      cTile = at(c, sp.offset, s.n);
      break;
    case Collective::ReduceScatter:
      // A's rows of every block, a block apart; the output packed.
      aTile = at(a, sp.blockOffset, s.k);
      strideA = l.blockSize() * s.k;
      cTile = tileBuffer(l, t);
      strideC = sp.blockRows * s.n;
      break;
    case Collective::AllGather:
      // The gathered slices one after another; C's rows a block apart.
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
                       aTile, s.k, strideA, b, s.n, 0, dtype, cTile, s.n,
                       strideC),
          "overlap_gemm");
  }

  /// Reduce-scatter: the tile's buffer starts as C's rows of the tile (the
  /// copy overlap-decompose emits when C is not a fill), one kernel for all
  /// blocks.
  void packC(const TileLayout &l, size_t t, int64_t tag) {
    const TileSpan &sp = l[t];
    check(ctx,
          overlap_pack(ctx, compute, tag, int64_t(elt),
                       at(c, sp.blockOffset, s.n), l.slots(), sp.blockRows, s.n,
                       l.blockSize() * s.n, s.n, tileBuffer(l, t)),
          "overlap_pack");
  }

  void collective(const TileLayout &l, size_t t, int64_t tag) {
    const TileSpan &sp = l[t];
    const size_t tileBytes = size_t(sp.rows * commWidth()) * elt;
    const size_t slice = tileBytes / size_t(l.slots());
    const size_t wire = size_t(ringWireBytes(coll, group, int64_t(tileBytes)));
    auto copy = [&](void *dst, const void *src, size_t bytes) {
      if (bytes)
        check(ctx, overlap_memcpy(ctx, comm, tag, dst, src, bytes),
              "overlap_memcpy");
    };
    switch (coll) {
    case Collective::AllReduce: {
      char *rows = at(c, sp.offset, s.n);
      if (nccl) {
        check(ctx,
              overlap_all_reduce(ctx, comm, tag, nullptr, dtype, OVERLAP_SUM,
                                 rows, at(result, sp.offset, s.n),
                                 sp.rows * s.n),
              "overlap_all_reduce");
        return;
      }
      // The tile itself, then the rest of the ring's bytes from scratch.
      copy(mirror + packedOffset(l, t, 0), rows, tileBytes);
      copy(hostExtra, extra, wire > tileBytes ? wire - tileBytes : 0);
      return;
    }
    case Collective::ReduceScatter: {
      char *src = tileBuffer(l, t);
      if (nccl) {
        check(ctx,
              overlap_reduce_scatter(
                  ctx, comm, tag, nullptr, dtype, OVERLAP_SUM, src,
                  at(result, sp.blockOffset, s.n), sp.blockRows * s.n),
              "overlap_reduce_scatter");
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
        check(ctx,
              overlap_all_gather(ctx, comm, tag, nullptr, dtype, local, dst,
                                 sp.blockRows * s.k),
              "overlap_all_gather");
        return;
      }
      // This rank (rank 0, the only process) writes its own slot, as an
      // out-of-place all-gather does; the other slots' bytes go to the
      // host, as many as a ring moves.
      copy(dst, local, slice);
      copy(mirror + packedOffset(l, t, 1), dst + slice, wire);
      return;
    }
    }
  }

  int producer() const { return gathers() ? comm : compute; }
  int consumer() const { return gathers() ? compute : comm; }

  /// The schedule the compiler emits for layout `l`: the producer's tasks
  /// back to back on its stream, each followed by a signal; the consumer
  /// waits for tile t before its task t. Signals are enqueued before their
  /// waits, which the `event` signal mode requires.
  void run(const TileLayout &l, int64_t sigKey) {
    overlap_signals *sigs = nullptr;
    check(ctx, overlap_signals_acquire(ctx, sigKey, int32_t(l.size()), &sigs),
          "acquire");
    auto tagOf = [&](size_t t) { return l.size() == 1 ? -1 : int64_t(t); };
    for (size_t t = 0; t < l.size(); ++t) {
      if (gathers()) {
        collective(l, t, tagOf(t));
      } else {
        if (coll == Collective::ReduceScatter && !l.isWhole(t))
          packC(l, t, tagOf(t));
        gemm(l, t, tagOf(t));
      }
      check(ctx, overlap_signal(ctx, producer(), sigs, int32_t(t)), "signal");
    }
    for (size_t t = 0; t < l.size(); ++t) {
      check(ctx, overlap_wait(ctx, consumer(), sigs, int32_t(t)), "wait");
      if (gathers())
        gemm(l, t, tagOf(t));
      else
        collective(l, t, tagOf(t));
    }
  }
  void serial() { run(whole, key); }
  void overlapped() { run(plan, key + 1); }

  size_t resultBytes() const {
    return coll == Collective::ReduceScatter ? size_t(s.m / group * s.n) * elt
                                             : size_t(s.m * s.n) * elt;
  }
  size_t packedBytes() const { return size_t(s.m * commWidth()) * elt; }

  void allocate() {
    const size_t aRows = size_t(gathers() ? s.m / group : s.m);
    check(ctx, overlap_alloc(ctx, aRows * size_t(s.k) * elt, &a), "alloc A");
    check(ctx, overlap_alloc(ctx, size_t(s.k * s.n) * elt, &b), "alloc B");
    check(ctx, overlap_alloc(ctx, size_t(s.m * s.n) * elt, &c), "alloc C");
    check(ctx, overlap_alloc(ctx, size_t(s.m * s.n) * elt, &c0), "alloc C0");
    if (coll != Collective::AllReduce)
      check(ctx, overlap_alloc(ctx, packedBytes(), &packed), "alloc packed");
    if (nccl && !gathers())
      check(ctx, overlap_alloc(ctx, resultBytes(), &result), "alloc result");
    if (nccl)
      return;
    checkCuda(cudaMallocHost(reinterpret_cast<void **>(&mirror), packedBytes()),
              "cudaMallocHost");
    if (coll == Collective::AllReduce) {
      size_t surplus =
          size_t(ringWireBytes(coll, group, int64_t(packedBytes())));
      surplus = surplus > packedBytes() ? surplus - packedBytes() + 64 : 64;
      checkCuda(cudaMallocHost(reinterpret_cast<void **>(&hostExtra), surplus),
                "cudaMallocHost");
      check(ctx, overlap_alloc(ctx, surplus, &extra), "alloc");
    }
  }
  void release() {
    for (void *p : {a, b, c, c0, packed, result, extra})
      overlap_free(ctx, p);
    cudaFreeHost(mirror);
    cudaFreeHost(hostExtra);
  }
};

/// Host inputs of one input set on this rank, from the set's seeds
/// (RankProblem): its own A (for all-gather its M/G x K shard), B and C0,
/// and for all-gather every rank's shard in rank order (what the gathered
/// buffer holds once the collective has run).
struct Inputs {
  std::vector<char> a, b, c0, gathered;
};

Inputs makeInputs(const RankProblem &p, int64_t me) {
  Inputs in;
  const size_t aBytes = size_t(p.aRows() * p.k) * overlap_dtype_size(p.dtype);
  if (p.gathers()) {
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

/// What a sum over ranks (the nccl leg's all-reduce or reduce-scatter)
/// delivered on this rank. Row q of `result` is row sumResultRow(q) of the
/// sum over ranks of C0 + A.B; `input` is what this rank fed the
/// collective (its GEMM's output; in the tiles' packed order when
/// `packed`). One rank: the result is the input, bit for bit. Several: no
/// element is left poisoned, and sampled elements (16 per tile) lie within
/// expectedSum's bound of this rank's own term plus the other ranks'
/// references. Returns "" or what is wrong.
std::string checkSum(const Runner &r, const TileLayout &l,
                     const std::vector<char> &result,
                     const std::vector<char> &input, bool packed,
                     const RankProblem &problem, std::mt19937_64 &rng) {
  const GemmShape &s = r.s;
  const size_t rowBytes = size_t(s.n) * r.elt;
  const int64_t rows = int64_t(result.size() / rowBytes);
  const std::string what = planner::toString(r.coll).str();
  auto inputRow = [&](int64_t i) {
    if (!packed)
      return i;
    TileLayout::Location at = l.locate(i);
    return l.packedRow(at.tile, at.slot, at.row);
  };
  if (r.group == 1) {
    for (int64_t q = 0; q < rows; ++q)
      if (std::memcmp(
              &result[size_t(q) * rowBytes],
              &input[size_t(inputRow(sumResultRow(l, r.me, q))) * rowBytes],
              rowBytes))
        return "row " + std::to_string(q) + " of the " + what +
               "'s output differs from its input (one rank)";
    return "";
  }
  const size_t count = result.size() / r.elt;
  if (int64_t bad = firstNaN(r.dtype, result.data(), count); bad >= 0)
    return "the " + what + "'s output (" + std::to_string(bad / s.n) + ", " +
           std::to_string(bad % s.n) + ") is NaN (never written?)";
  for (size_t t = 0; t < l.size(); ++t) {
    for (int sample = 0; sample < 16; ++sample) {
      int64_t q = l[t].blockOffset + int64_t(rng() % uint64_t(l[t].blockRows));
      int64_t j = int64_t(rng() % uint64_t(s.n));
      int64_t i = sumResultRow(l, r.me, q);
      double local = elementAt(input, r.dtype, size_t(inputRow(i) * s.n + j));
      Expected e = expectedSum(problem, r.me, local, i, j);
      double got = elementAt(result, r.dtype, size_t(q * s.n + j));
      if (!e.accepts(got))
        return "tile " + std::to_string(t) + ": the " + what + "'s output (" +
               std::to_string(q) + ", " + std::to_string(j) +
               ") = " + std::to_string(got) + ", expected " +
               std::to_string(e.value) + " +- " + std::to_string(e.bound) +
               " (sum over " + std::to_string(r.group) + " ranks)";
    }
  }
  return "";
}

/// Runs `l` once on fresh C with poisoned outputs and checks it; returns an
/// empty string or what is wrong.
std::string checkRun(Runner &r, const TileLayout &l, int64_t key,
                     const Inputs &in, const RankProblem &problem,
                     uint64_t seed) {
  overlap_context *ctx = r.ctx;
  const GemmShape &s = r.s;
  const size_t elt = r.elt, cBytes = size_t(s.m * s.n) * elt;
  const size_t packedBytes = r.packedBytes();
  const bool rs = r.coll == Collective::ReduceScatter;
  check(ctx, overlap_memcpy(ctx, compute, -1, r.c, r.c0, cBytes), "reset C");
  // What the run must write starts as NaN (0xff bytes) in every type.
  std::vector<char> poison(std::max(cBytes, packedBytes), char(0xff));
  if (r.result)
    check(ctx,
          overlap_memcpy(ctx, compute, -1, r.result, poison.data(),
                         r.resultBytes()),
          "poison");
  if (r.mirror)
    std::fill(r.mirror, r.mirror + packedBytes, char(0xff));
  if (rs)
    check(
        ctx,
        overlap_memcpy(ctx, compute, -1, r.packed, poison.data(), packedBytes),
        "poison");
  // All-gather: the slots the collective writes start poisoned: every slot
  // on the nccl leg; on the copy-engine leg this rank's own, the others
  // holding the other ranks' rows (what they would send) as inputs.
  std::vector<char> gathered;
  if (r.gathers()) {
    gathered.resize(packedBytes);
    arrangeRows(l, in.gathered.data(), size_t(s.k) * elt, gathered.data());
    std::vector<char> init = gathered;
    const size_t sliceRowBytes = size_t(s.k) * elt;
    for (size_t t = 0; t < l.size(); ++t)
      for (int64_t slot = 0; slot < l.slots(); ++slot)
        if (r.nccl || slot == r.me)
          std::fill_n(init.begin() + ptrdiff_t(r.packedOffset(l, t, slot)),
                      size_t(l[t].blockRows) * sliceRowBytes, char(0xff));
    check(ctx,
          overlap_memcpy(ctx, compute, -1, r.packed, init.data(), packedBytes),
          "upload");
  }
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  r.run(l, key);
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  std::vector<char> got(cBytes), packedGot, resultGot;
  check(ctx, overlap_memcpy(ctx, compute, -1, got.data(), r.c, cBytes),
        "download");
  if (r.packed) {
    packedGot.resize(packedBytes);
    check(ctx,
          overlap_memcpy(ctx, compute, -1, packedGot.data(), r.packed,
                         packedBytes),
          "download");
  }
  if (r.result) {
    resultGot.resize(r.resultBytes());
    check(ctx,
          overlap_memcpy(ctx, compute, -1, resultGot.data(), r.result,
                         r.resultBytes()),
          "download");
  }
  check(ctx, overlap_context_synchronize(ctx), "synchronize");

  // The GEMM's output in packed order: a reduce-scatter's tile buffers, or
  // C (all-reduce, all-gather, a whole reduce-scatter tile: row order).
  const bool outPacked = rs && !l.isWhole(0);
  const std::vector<char> &out = outPacked ? packedGot : got;
  std::mt19937_64 rng(seed);
  // What a stand-in copied, bit for bit.
  auto sameBytes = [](const std::vector<char> &x, const char *y, size_t from,
                      size_t bytes) {
    return std::equal(x.begin() + ptrdiff_t(from),
                      x.begin() + ptrdiff_t(from + bytes), y + from);
  };
  switch (r.coll) {
  case Collective::AllReduce:
  case Collective::ReduceScatter:
    if (r.nccl) {
      std::string bad = checkSum(r, l, resultGot, out, outPacked, problem, rng);
      if (!bad.empty())
        return bad;
      break;
    }
    if (!rs) {
      if (!sameBytes(got, r.mirror, 0, cBytes))
        return "the bytes copied to the host differ from C";
      break;
    }
    for (size_t t = 0; t < l.size(); ++t)
      if (!sameBytes(out, r.mirror, r.packedOffset(l, t, 1),
                     size_t(ringWireBytes(r.coll, r.group,
                                          l[t].rows * s.n * int64_t(elt)))))
        return "tile " + std::to_string(t) +
               ": the bytes copied to the host differ from its buffer";
    break;
  case Collective::AllGather:
    if (packedGot != gathered)
      return "the gathered A differs from every rank's rows";
    if (!r.nccl)
      for (size_t t = 0; t < l.size(); ++t)
        if (!sameBytes(gathered, r.mirror, r.packedOffset(l, t, 1),
                       size_t(ringWireBytes(r.coll, r.group,
                                            l[t].rows * s.k * int64_t(elt)))))
          return "tile " + std::to_string(t) +
                 ": the bytes copied to the host differ from its buffer";
    break;
  }

  // The GEMM part of every tile: sampled elements (every slot, random rows
  // and columns) against a double-precision reference of this rank's
  // C0 + A.B (for all-gather, A gathered from every rank).
  for (size_t t = 0; t < l.size(); ++t) {
    for (int sample = 0; sample < 16; ++sample) {
      int64_t slot = sample % l.slots();
      int64_t row = int64_t(rng() % uint64_t(l[t].blockRows));
      int64_t j = int64_t(rng() % uint64_t(s.n));
      int64_t i = l.globalRow(t, slot, row);
      double ref = problem.reference(r.me, i, j);
      int64_t outRow = outPacked ? l.packedRow(t, slot, row) : i;
      double value = elementAt(out, r.dtype, size_t(outRow * s.n + j));
      if (!gemmAccepts(r.dtype, value, ref))
        return "tile " + std::to_string(t) + ": C(" + std::to_string(i) + ", " +
               std::to_string(j) + ") = " + std::to_string(value) +
               ", reference " + std::to_string(ref);
    }
  }
  return "";
}

struct Row {
  Collective coll;
  GemmShape s;
  size_t bytes, wire;
  size_t tiles;
  double gemm, comm, serial, overlapped, ideal, predicted;
  std::string check;
};

double etaOf(const Row &row) {
  return (row.serial - row.overlapped) / (row.serial - row.ideal);
}

struct SweepOptions {
  std::vector<GemmShape> shapes;
  overlap_dtype dtype;
  std::string dtypeName, leg, strategy;
  int64_t ranks, uniformTiles;
  int64_t rank = 0; // this process's rank (nccl leg), else 0
  int warmup, iters, inputSets;
  std::optional<planner::Profile> profile;
};

/// Runs every shape for one collective, printing its table and summary.
void sweep(overlap_context *ctx, const SweepOptions &o, Collective coll,
           const std::string &device, int64_t &keyBase,
           std::vector<Row> &rows) {
  const bool nccl = o.leg == "nccl";
  const size_t elt = overlap_dtype_size(o.dtype);
  const std::string name = planner::toString(coll).str();
  const planner::DType plannerType =
      o.dtype == OVERLAP_F16    ? planner::DType::F16
      : o.dtype == OVERLAP_BF16 ? planner::DType::BF16
                                : planner::DType::F32;
  std::printf("\n# overlap-bench on %s, dtype %s, %s over %lld rank(s)\n",
              device.c_str(), o.dtypeName.c_str(), name.c_str(),
              (long long)o.ranks);
  if (coll == Collective::ReduceScatter)
    std::printf("# reduce-scatter tile: C's rows of every block packed "
                "(overlap_pack), one GEMM of batch %lld (B broadcast) into "
                "them, one reduce-scatter; serial: one GEMM in place, one "
                "reduce-scatter\n",
                (long long)o.ranks);
  else if (coll == Collective::AllGather)
    std::printf("# all-gather tile: one all-gather of the shard's rows, then "
                "one GEMM of batch %lld (B broadcast) into C's rows of every "
                "block; serial: one all-gather, one GEMM\n",
                (long long)o.ranks);
  if (nccl)
    std::printf(
        "# leg nccl: NCCL %s on the world communicator, %lld rank(s)%s\n",
        name.c_str(), (long long)o.ranks,
        o.ranks == 1 ? " (one process: a smoke test)"
                     : ", one process per GPU; each time is the slowest "
                       "rank's, each check every rank's");
  else
    std::printf(
        "# leg copy-engine: each tile's ring wire bytes (%.3f x tile bytes) "
        "copied device -> pinned host%s; a stand-in for a network link that "
        "reduces nothing\n",
        planner::ringFactor(coll, o.ranks),
        coll == Collective::AllGather
            ? ", plus the rank's own slice into its slot (device -> device)"
            : "");
  std::printf(
      "# plan: %s; %d warm-up + %d timed runs, median over %d input "
      "set(s); times in us\n",
      o.profile
          ? ("strategy " + o.strategy + ", profile " + o.profile->name).c_str()
          : ("uniform " + std::to_string(o.uniformTiles) +
             " tiles, no profile (no prediction)")
                .c_str(),
      o.warmup, o.iters, o.inputSets);
  std::printf("#%7s %7s %7s %12s %5s %10s %10s %10s %10s %10s %10s %7s %6s "
              "%8s %s\n",
              "M", "N", "K", "size(B)", "tiles", "gemm", "comm", "serial",
              "overlap", "ideal", "predicted", "speedup", "eta", "pred.err",
              "check");

  const size_t first = rows.size();
  for (const GemmShape &s : o.shapes) {
    std::string why;
    auto whole = TileLayout::create(coll, s.m, o.ranks, {s.m}, why);
    if (!whole) {
      std::printf("#%7lld %7lld %7lld skipped: %s\n", (long long)s.m,
                  (long long)s.n, (long long)s.k, why.c_str());
      continue;
    }
    Runner r{ctx,     o.dtype, elt,    s,      coll, nccl,
             o.ranks, o.rank,  *whole, *whole, 0};
    r.key = (keyBase += 2);
    Row row{coll, s, 0, 0, 0, 0, 0, 0, 0, 0, NAN, "ok"};
    row.bytes = r.packedBytes();
    row.wire = size_t(ringWireBytes(coll, o.ranks, int64_t(row.bytes)));
    // The plan: the Planner's tiles and prediction, or uniform tiles.
    std::string planNote;
    std::optional<TileLayout> plan;
    if (o.profile) {
      planner::MatmulProblem problem{coll, s.m, s.n, s.k, plannerType, o.ranks};
      auto planned = planner::planTiles(*o.profile, problem, o.strategy);
      if (!planned) {
        planNote = llvm::toString(planned.takeError());
      } else if (!(plan = TileLayout::create(coll, s.m, o.ranks, planned->tiles,
                                             why))) {
        planNote = "the plan's tiles do not fit the layout: " + why;
      } else {
        row.predicted = planned->predictedUs;
      }
    }
    if (!plan)
      plan = TileLayout::create(
          coll, s.m, o.ranks, uniformTiles(coll, s.m, o.ranks, o.uniformTiles),
          why);
    if (!plan) { // cannot happen once the whole layout exists; be loud
      std::printf("#%7lld %7lld %7lld skipped: no uniform tiles (%s)\n",
                  (long long)s.m, (long long)s.n, (long long)s.k, why.c_str());
      continue;
    }
    r.plan = *plan;
    row.tiles = r.plan.size();
    r.allocate();

    std::vector<double> gemmT, commT, serialT, overlapT;
    for (int set = 0; set < o.inputSets && row.check == "ok"; ++set) {
      uint64_t seed =
          uint64_t(set) * 7919 + uint64_t(s.m * 31 + s.n * 17 + s.k);
      // Every rank's inputs follow from the seed and its rank.
      RankProblem problem{coll, s.m, s.n, s.k, o.ranks, o.dtype, seed};
      Inputs in = makeInputs(problem, o.rank);
      check(ctx,
            overlap_memcpy(ctx, compute, -1, r.a, in.a.data(), in.a.size()),
            "upload");
      check(ctx,
            overlap_memcpy(ctx, compute, -1, r.b, in.b.data(), in.b.size()),
            "upload");
      check(ctx,
            overlap_memcpy(ctx, compute, -1, r.c0, in.c0.data(), in.c0.size()),
            "upload");
      check(ctx, overlap_context_synchronize(ctx), "synchronize");
      // Both variants run whatever the first found, so that every rank
      // issues the same collectives; then every rank learns every rank's
      // verdict and all stop after this set if one failed.
      RankReport verdict;
      for (auto [variant, layout, key] :
           {std::tuple<const char *, const TileLayout *, int64_t>{
                "serial", &r.whole, r.key},
            {"overlapped", &r.plan, r.key + 1}}) {
        std::string bad = checkRun(r, *layout, key, in, problem,
                                   mix64(seed + 3) + uint64_t(o.rank));
        if (!bad.empty() && verdict.message.empty())
          verdict.message = std::string(variant) + ": " + bad;
      }
      std::string failed = describeFailures(exchangeReports(ctx, verdict));
      if (!failed.empty())
        row.check = "FAIL " + failed;
      gemmT.push_back(timeUs(ctx, compute, compute, o.warmup, o.iters,
                             [&] { r.gemm(r.whole, 0, -1); }));
      commT.push_back(timeUs(ctx, comm, comm, o.warmup, o.iters,
                             [&] { r.collective(r.whole, 0, -1); }));
      serialT.push_back(timeUs(ctx, r.producer(), r.consumer(), o.warmup,
                               o.iters, [&] { r.serial(); }));
      overlapT.push_back(timeUs(ctx, r.producer(), r.consumer(), o.warmup,
                                o.iters, [&] { r.overlapped(); }));
    }
    row.gemm = median(gemmT);
    row.comm = median(commT);
    row.serial = median(serialT);
    row.overlapped = median(overlapT);
    row.ideal = std::max(row.gemm, row.comm);
    double err = (row.predicted - row.overlapped) / row.overlapped;
    std::printf(" %7lld %7lld %7lld %12zu %5zu %10.1f %10.1f %10.1f %10.1f "
                "%10.1f %10.1f %7.3f %6.3f %7.1f%% %s\n",
                (long long)s.m, (long long)s.n, (long long)s.k, row.bytes,
                row.tiles, row.gemm, row.comm, row.serial, row.overlapped,
                row.ideal, row.predicted, row.serial / row.overlapped,
                etaOf(row), 100.0 * err, row.check.c_str());
    if (!planNote.empty())
      std::printf("#   no plan from the profile (%s): uniform tiles\n",
                  planNote.c_str());
    std::fflush(stdout);
    rows.push_back(row);
    r.release();
  }

  // Summary: eta median and best, prediction error.
  std::vector<double> etas, errs;
  int failures = 0;
  for (size_t i = first; i < rows.size(); ++i) {
    const Row &row = rows[i];
    failures += row.check != "ok";
    if (row.serial - row.ideal > 0)
      etas.push_back(etaOf(row));
    if (!std::isnan(row.predicted))
      errs.push_back(std::abs(row.predicted - row.overlapped) / row.overlapped);
  }
  std::printf(
      "# %s: eta median %.3f, best %.3f (%zu shapes); |prediction error|: "
      "median %.1f%%, max %.1f%%; correctness failures: %d\n",
      name.c_str(), median(etas),
      etas.empty() ? NAN : *std::max_element(etas.begin(), etas.end()),
      etas.size(), 100.0 * median(errs),
      errs.empty() ? NAN : 100.0 * *std::max_element(errs.begin(), errs.end()),
      failures);
}

} // namespace

int main(int argc, char **argv) {
  Args args;
  if (!args.parse(argc, argv,
                  {"--collective", "--shapes", "--dtype", "--leg", "--ranks",
                   "--profile", "--strategy", "--tiles", "--warmup", "--iters",
                   "--input-sets", "--csv", "--pack-shapes", "--pack-total"},
                  {"--help", "--pack"}) ||
      args.has("--help")) {
    std::fputs(usage, args.has("--help") ? stdout : stderr);
    return args.has("--help") ? 0 : 2;
  }
  const int warmup = int(args.getInt("--warmup", 5));
  const int iters = int(args.getInt("--iters", 20));
  if (args.has("--pack"))
    return packBench(args, warmup, iters);

  SweepOptions o;
  o.warmup = warmup;
  o.iters = iters;
  if (args.has("--shapes")) {
    auto shapes = parseGemmShapes(args.get("--shapes", ""));
    if (!shapes) {
      std::fputs("error: --shapes wants MxNxK[,MxNxK...]\n", stderr);
      return 2;
    }
    o.shapes = *shapes;
  } else {
    o.shapes = defaultShapes();
  }
  for (const GemmShape &s : o.shapes)
    if (s.m > (int64_t(1) << 20) || s.n > (int64_t(1) << 20) ||
        s.k > (int64_t(1) << 20)) {
      std::fputs("error: --shapes: sizes above 2^20 are not supported\n",
                 stderr);
      return 2;
    }
  auto collectives = parseCollectives(args.get("--collective", "all-reduce"));
  if (!collectives) {
    std::fputs("error: --collective wants all-reduce, reduce-scatter or "
               "all-gather, or a comma list of them\n",
               stderr);
    return 2;
  }
  o.dtypeName = args.get("--dtype", "f16");
  std::optional<overlap_dtype> dtype = parseDtype(o.dtypeName);
  o.leg = args.get("--leg", "copy-engine");
  if (!dtype || (o.leg != "copy-engine" && o.leg != "nccl")) {
    std::fputs("error: bad --dtype or --leg\n", stderr);
    return 2;
  }
  o.dtype = *dtype;
  o.ranks = args.getInt("--ranks", 8);
  if (o.leg == "copy-engine" && o.ranks < 2) {
    std::fputs("error: the copy-engine leg needs --ranks >= 2 (one rank puts "
               "nothing on the wire); use --leg nccl for one rank\n",
               stderr);
    return 2;
  }
  o.inputSets = int(args.getInt("--input-sets", 3));
  o.uniformTiles = args.getInt("--tiles", 4);
  o.strategy = args.get("--strategy", "auto");
  std::string profileText; // ranks must plan from the same profile
  if (args.has("--profile")) {
    std::string path = planner::resolveProfilePath(args.get("--profile", ""),
                                                   OVERLAP_PROFILES_DIR);
    if (path.empty()) {
      std::fprintf(stderr, "error: no profile %s\n",
                   args.get("--profile", "").c_str());
      return 2;
    }
    auto loaded = planner::loadProfile(path);
    if (!loaded) {
      std::fprintf(stderr, "error: %s\n",
                   llvm::toString(loaded.takeError()).c_str());
      return 2;
    }
    o.profile = std::move(*loaded);
    std::ifstream file(path);
    profileText.assign(std::istreambuf_iterator<char>(file), {});
  }
  cudaDeviceProp prop;
  overlap_context *ctx = nullptr;
  if (o.leg == "nccl") {
    // A rank of the launched job (one rank without launcher variables).
    ctx = createLaunchedContext("overlap-bench", prop);
    agreeOnArguments(ctx, argc, argv, {"--csv"}, profileText);
    printOnlyOnRankZero(ctx);
    const int world = overlap_context_size(ctx);
    if (args.has("--ranks") && o.ranks != world) {
      if (overlap_context_rank(ctx) == 0)
        std::fprintf(stderr,
                     "error: --ranks %lld, but the nccl leg's group is the "
                     "world of %d rank(s) (the processes the launcher "
                     "started); drop --ranks\n",
                     (long long)o.ranks, world);
      leave(2);
    }
    o.ranks = world;
    o.rank = overlap_context_rank(ctx);
  } else {
    ctx = createMeasuringContext("overlap-bench", prop);
  }

  std::vector<Row> rows;
  int64_t keyBase = 1000;
  for (Collective coll : *collectives)
    sweep(ctx, o, coll, prop.name, keyBase, rows);

  int failures = 0;
  for (const Row &row : rows)
    failures += row.check != "ok";
  return finish(args, ctx, failures, [&](std::ostream &csv) {
    csv << "leg,collective,ranks,dtype,M,N,K,size_bytes,wire_bytes,tiles,"
           "gemm_us,comm_us,serial_us,overlapped_us,ideal_us,predicted_us,"
           "speedup,eta,prediction_error,check\n";
    for (const Row &row : rows)
      csv << o.leg << ',' << planner::toString(row.coll).str() << ',' << o.ranks
          << ',' << o.dtypeName << ',' << row.s.m << ',' << row.s.n << ','
          << row.s.k << ',' << row.bytes << ',' << row.wire << ',' << row.tiles
          << ',' << row.gemm << ',' << row.comm << ',' << row.serial << ','
          << row.overlapped << ',' << row.ideal << ',' << row.predicted << ','
          << row.serial / row.overlapped << ',' << etaOf(row) << ','
          << (row.predicted - row.overlapped) / row.overlapped << ",\""
          << row.check << "\"\n";
  });
}
