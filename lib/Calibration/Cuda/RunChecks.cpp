//===- RunChecks.cpp - What a benchmark run wrote, checked -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// C is reset, what the run must write is poisoned (0xff bytes: NaN in every
// type), the layout runs once, then: what the collective (or its stand-in)
// delivered (bit for bit where it moves bytes or one rank reduces; a sum over
// several ranks: nothing left poisoned, sampled elements within the rounding
// bound of the other ranks' references plus this rank's own term), and
// sampled elements of every tile's GEMM against a double-precision
// reference. A rank-major plan (checkRankMajorRun) checks the same things
// at the rows its chunks have, and a reduce-scatter's final sum bit for bit.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/BenchRunner.h"

#include "overlap/Calibration/MeasuringContext.h"
#include "overlap/Calibration/RankMajorBench.h"
#include "overlap/Planner/Ring.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cstring>
#include <random>

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;
using planner::TileLayout;

static const int compute = OVERLAP_STREAM_COMPUTE;

/// What a sum over ranks (the nccl leg's all-reduce or reduce-scatter)
/// delivered on this rank. Row q of `result` is row sumResultRow(q) of the
/// sum over ranks of C0 + A.B; `input` is what this rank fed the
/// collective (its GEMM's output; in the tiles' packed order when
/// `packed`). One rank: the result is the input, bit for bit. Several: no
/// element is left poisoned, and sampled elements (16 per tile) lie within
/// expectedSum's bound of this rank's own term plus the other ranks'
/// references. Returns "" or what is wrong.
static std::string checkSum(const BenchRunner &r, const TileLayout &l,
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
      ExpectedElement e = expectedSum(problem, r.me, local, i, j);
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

/// What the nccl leg's combine delivered on this rank: slot j of tile t
/// (in the result's packed order) is rank j's GEMM output of the tile's
/// rows of block `me`. This rank's own slot is its own output (`input`,
/// packed like the result) bit for bit; the others' sampled elements lie
/// within a GEMM's tolerance of their double references, and none is left
/// poisoned. Returns "" or what is wrong.
static std::string checkCombined(const BenchRunner &r, const TileLayout &l,
                                 const std::vector<char> &result,
                                 const std::vector<char> &input,
                                 bool inputPacked, const RankProblem &problem,
                                 std::mt19937_64 &rng) {
  const GemmShape &s = r.s;
  const size_t rowBytes = size_t(s.n) * r.elt;
  if (int64_t bad = firstNaN(r.dtype, result.data(), result.size() / r.elt);
      bad >= 0)
    return "the all-to-all's output (" + std::to_string(bad / s.n) + ", " +
           std::to_string(bad % s.n) + ") is NaN (never written?)";
  for (size_t t = 0; t < l.size(); ++t) {
    for (int64_t w = 0; w < l[t].blockRows; ++w) {
      int64_t own = l.packedRow(t, r.me, w);
      int64_t from = inputPacked ? own : l.globalRow(t, r.me, w);
      if (std::memcmp(&result[size_t(own) * rowBytes],
                      &input[size_t(from) * rowBytes], rowBytes))
        return "tile " + std::to_string(t) + ": this rank's own block of the "
               "all-to-all's output differs from its GEMM's output";
    }
    for (int sample = 0; sample < 16 && r.group > 1; ++sample) {
      int64_t slot = int64_t(rng() % uint64_t(l.slots()));
      int64_t w = int64_t(rng() % uint64_t(l[t].blockRows));
      int64_t j = int64_t(rng() % uint64_t(s.n));
      // Rank `slot` sent its rows of block `me`.
      double ref = problem.reference(slot, l.globalRow(t, r.me, w), j);
      double got = elementAt(result, r.dtype,
                             size_t(l.packedRow(t, slot, w) * s.n + j));
      if (!gemmAccepts(r.dtype, got, ref))
        return "tile " + std::to_string(t) + ": the all-to-all's output "
               "from rank " + std::to_string(slot) + " (row " +
               std::to_string(w) + ", column " + std::to_string(j) + ") = " +
               std::to_string(got) + ", its reference " + std::to_string(ref);
    }
  }
  return "";
}

std::string calibration::checkRun(BenchRunner &r, const TileLayout &l,
                                  int64_t key, const Inputs &in,
                                  const RankProblem &problem, uint64_t seed) {
  overlap_context *ctx = r.ctx;
  const GemmShape &s = r.s;
  const size_t elt = r.elt, cBytes = size_t(s.m * s.n) * elt;
  const size_t packedBytes = r.packedBytes();
  const bool rs = r.packsOutput();
  check(ctx, overlap_memcpy(ctx, compute, -1, r.c, r.c0, cBytes), "reset C");
  // What the run must write starts as NaN (0xff bytes) in every type.
  std::vector<char> poison(std::max(cBytes, packedBytes), char(0xff));
  if (r.result)
    check(ctx,
          overlap_memcpy(ctx, compute, -1, r.result, poison.data(),
                         r.resultBytes()),
          "poison");
  if (r.mirror && r.smCopy())
    check(
        ctx,
        overlap_memcpy(ctx, compute, -1, r.mirror, poison.data(), packedBytes),
        "poison");
  else if (r.mirror)
    std::fill(r.mirror, r.mirror + packedBytes, char(0xff));
  if (rs)
    check(
        ctx,
        overlap_memcpy(ctx, compute, -1, r.packed, poison.data(), packedBytes),
        "poison");
  // All-gather and dispatch: the slots the collective writes start
  // poisoned: every slot on the nccl leg; on the stand-in legs this
  // rank's own, the others holding the other ranks' rows (what they would
  // send) as inputs.
  std::vector<char> gathered;
  if (r.receivesA()) {
    gathered.resize(packedBytes);
    planner::arrangeRows(l, in.gathered.data(), size_t(s.k) * elt,
                         gathered.data());
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
  // What the sm-copy kernel wrote is device memory.
  std::vector<char> mirrorGot;
  if (r.mirror && r.smCopy()) {
    mirrorGot.resize(packedBytes);
    check(ctx,
          overlap_memcpy(ctx, compute, -1, mirrorGot.data(), r.mirror,
                         packedBytes),
          "download");
  }
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  const char *mirror = r.smCopy() ? mirrorGot.data() : r.mirror;
  const std::string copied =
      r.smCopy() ? "copied by the sm-copy kernel" : "copied to the host";

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
  auto wireOf = [&](size_t t, int64_t width) {
    return size_t(planner::ringWireBytes(r.coll, r.group,
                                         l[t].rows * width * int64_t(elt)));
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
      if (!sameBytes(got, mirror, 0, cBytes))
        return "the bytes " + copied + " differ from C";
      break;
    }
    for (size_t t = 0; t < l.size(); ++t)
      if (!sameBytes(out, mirror, r.packedOffset(l, t, 1), wireOf(t, s.n)))
        return "tile " + std::to_string(t) + ": the bytes " + copied +
               " differ from its buffer";
    break;
  case Collective::AllGather:
    if (packedGot != gathered)
      return "the gathered A differs from every rank's rows";
    if (!r.nccl)
      for (size_t t = 0; t < l.size(); ++t)
        if (!sameBytes(gathered, mirror, r.packedOffset(l, t, 1),
                       wireOf(t, s.k)))
          return "tile " + std::to_string(t) + ": the bytes " + copied +
                 " differ from its buffer";
    break;
  case Collective::AllToAll:
    if (r.dispatches()) {
      if (packedGot != gathered)
        return "the exchanged A differs from every rank's rows of this "
               "rank's block";
      if (!r.nccl) {
        // The stand-in sent the tiles' packed rows of A's other blocks.
        std::vector<char> sent(packedBytes);
        planner::arrangeRows(l, in.a.data(), size_t(s.k) * elt, sent.data());
        for (size_t t = 0; t < l.size(); ++t)
          if (!sameBytes(sent, mirror, r.packedOffset(l, t, 1), wireOf(t, s.k)))
            return "tile " + std::to_string(t) + ": the bytes " + copied +
                   " differ from A's rows";
      }
      break;
    }
    if (r.nccl) {
      std::string bad =
          checkCombined(r, l, resultGot, out, outPacked, problem, rng);
      if (!bad.empty())
        return bad;
      break;
    }
    for (size_t t = 0; t < l.size(); ++t) {
      const size_t own = r.packedOffset(l, t, r.me);
      const size_t slice = size_t(l[t].blockRows * s.n) * elt;
      // A whole tile's output is C in row order, which is its packed order.
      if (!std::equal(out.begin() + ptrdiff_t(own),
                      out.begin() + ptrdiff_t(own + slice),
                      resultGot.begin() + ptrdiff_t(own)))
        return "tile " + std::to_string(t) +
               ": this rank's own block of the exchange differs from its "
               "GEMM's output";
      if (!sameBytes(out, mirror, r.packedOffset(l, t, 1), wireOf(t, s.n)))
        return "tile " + std::to_string(t) + ": the bytes " + copied +
               " differ from its buffer";
    }
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

std::string calibration::checkRankMajorRun(BenchRunner &r, int64_t key,
                                           const Inputs &in,
                                           const RankProblem &problem,
                                           uint64_t seed) {
  overlap_context *ctx = r.ctx;
  const planner::RankMajorLayout &l = *r.rankMajor;
  const GemmShape &s = r.s;
  const size_t elt = r.elt, cBytes = size_t(s.m * s.n) * elt;
  const size_t packedBytes = r.packedBytes();
  const int64_t g = l.groupSize(), block = l.blockSize();
  const int64_t width = r.commWidth();
  const size_t rowBytes = size_t(width) * elt;
  const bool rs = r.coll == Collective::ReduceScatter;
  auto upload = [&](void *dst, const void *src, size_t bytes) {
    check(ctx, overlap_memcpy(ctx, compute, -1, dst, src, bytes), "upload");
  };
  auto download = [&](std::vector<char> &dst, const void *src, size_t bytes) {
    dst.resize(bytes);
    check(ctx, overlap_memcpy(ctx, compute, -1, dst.data(), src, bytes),
          "download");
  };
  check(ctx, overlap_memcpy(ctx, compute, -1, r.c, r.c0, cBytes), "reset C");
  // What the run must write starts as NaN (0xff bytes) in every type.
  std::vector<char> poison(std::max(cBytes, packedBytes), char(0xff));
  if (r.result)
    upload(r.result, poison.data(), r.resultBytes());
  if (r.send)
    upload(r.send, poison.data(), packedBytes);
  if (r.mirror && r.smCopy())
    upload(r.mirror, poison.data(), packedBytes);
  else if (r.mirror)
    std::fill(r.mirror, r.mirror + packedBytes, char(0xff));
  // The receiving buffer starts poisoned where shifts write (nccl: every
  // block but this rank's own). A stand-in receives nothing: there it holds
  // what the peers would send, all-gather's other ranks' chunks (their A's
  // rows), and for reduce-scatter slots 1..G-1 C0's rows of blocks 1..G-1
  // (known data: the sum is checked against what the slots hold). The own
  // block (all-gather) and slot 0 (reduce-scatter, written by the step-0
  // GEMMs) stay poisoned.
  std::vector<char> init(packedBytes, char(0xff));
  const size_t blockBytes = size_t(block) * rowBytes;
  if (!r.nccl) {
    const std::vector<char> &others = rs ? in.c0 : in.gathered;
    std::copy(others.begin(), others.begin() + ptrdiff_t(packedBytes),
              init.begin());
    std::fill_n(init.begin() + ptrdiff_t(size_t(rs ? 0 : r.me) * blockBytes),
                blockBytes, char(0xff));
  }
  upload(r.packed, init.data(), packedBytes);
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  r.runRankMajor(key);
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  std::vector<char> got, packedGot, sendGot, resultGot, mirrorGot;
  download(got, r.c, cBytes);
  download(packedGot, r.packed, packedBytes);
  if (r.send)
    download(sendGot, r.send, packedBytes);
  if (r.result)
    download(resultGot, r.result, r.resultBytes());
  if (r.mirror && r.smCopy())
    download(mirrorGot, r.mirror, packedBytes);
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  const char *mirror = r.smCopy() ? mirrorGot.data() : r.mirror;
  const std::string copied =
      r.smCopy() ? "copied by the sm-copy kernel" : "copied to the host";
  std::mt19937_64 rng(seed);
  const std::string what = planner::toString(r.coll).str();
  auto tileName = [&](size_t t) {
    return "rank-major tile " + std::to_string(t) + " (step " +
           std::to_string(l[t].step) + ", chunk " + std::to_string(l[t].chunk) +
           ")";
  };
  // Rows [row, row + rows) of `bytes` (rows of `width`) equal `want`'s.
  auto sameRows = [&](const char *bytes, const char *want, int64_t row,
                      int64_t rows) {
    const size_t from = size_t(row) * rowBytes;
    return std::equal(bytes + from, bytes + from + size_t(rows) * rowBytes,
                      want + from);
  };
  // 16 sampled elements of rows [row, row + rows) of `bytes` (rows of N)
  // against `rank`'s reference at rows [refRow, refRow + rows).
  auto sampled = [&](const std::vector<char> &bytes, int64_t row, int64_t rows,
                     int64_t rank, int64_t refRow) -> std::string {
    for (int sample = 0; sample < 16; ++sample) {
      int64_t w = int64_t(rng() % uint64_t(rows));
      int64_t j = int64_t(rng() % uint64_t(s.n));
      double ref = problem.reference(rank, refRow + w, j);
      double value = elementAt(bytes, r.dtype, size_t((row + w) * s.n + j));
      if (!gemmAccepts(r.dtype, value, ref))
        return "(" + std::to_string(refRow + w) + ", " + std::to_string(j) +
               ") of rank " + std::to_string(rank) +
               "'s product = " + std::to_string(value) + ", reference " +
               std::to_string(ref);
    }
    return "";
  };

  if (rs) {
    if (int64_t bad = firstNaN(r.dtype, packedGot.data(), packedBytes / elt);
        bad >= 0)
      return "the rank-major " + what + "'s staging slot " +
             std::to_string(bad / s.n / block) + ", row " +
             std::to_string(bad / s.n % block) + " is NaN (never written?)";
    const size_t slotElements = size_t(block * s.n);
    std::vector<char> want =
        rankOrderSum(r.dtype, packedGot.data(), g, r.me, slotElements);
    for (size_t e = 0; e < slotElements; ++e)
      if (std::memcmp(&resultGot[e * elt], &want[e * elt], elt))
        return "the rank-major " + what + "'s sum (" +
               std::to_string(int64_t(e) / s.n) + ", " +
               std::to_string(int64_t(e) % s.n) +
               ") = " + std::to_string(elementAt(resultGot, r.dtype, e)) +
               ", its slots summed in rank order " +
               std::to_string(elementAt(want, r.dtype, e));
    for (size_t t = 0; t < l.size(); ++t) {
      const int64_t row = rankMajorStagingRow(l, t), rows = l[t].rows;
      // This rank's partial: in its own buffer, or (step 0) in slot 0.
      const std::vector<char> &partial = l.exchanges(t) ? sendGot : packedGot;
      std::string bad = sampled(partial, row, rows, r.me, l.globalRow(t, r.me));
      if (!bad.empty())
        return tileName(t) + ": the partial " + bad;
      if (!l.exchanges(t))
        continue;
      if (r.nccl) {
        // Slot s holds rank (me - s) mod G's partial of this rank's block.
        const int64_t from = l.recvPeer(t, r.me);
        bad = sampled(packedGot, row, rows, from,
                      r.me * block + l[t].chunkOffset);
        if (!bad.empty())
          return tileName(t) + ": the partial received from rank " +
                 std::to_string(from) + " " + bad;
      } else if (!sameRows(mirror, sendGot.data(), row, rows)) {
        return tileName(t) + ": the bytes " + copied +
               " differ from its partial";
      }
    }
    return "";
  }

  // All-gather: every other block's chunks arrived, the own block's rows
  // were never written (step 0 reads the local shard).
  std::vector<char> gathered = in.gathered;
  std::fill_n(gathered.begin() + ptrdiff_t(size_t(r.me) * blockBytes),
              blockBytes, char(0xff));
  if (packedGot != gathered)
    return "the rank-major " + what +
           "'s received rows differ from the other ranks' chunks";
  for (size_t t = 0; t < l.size(); ++t) {
    const int64_t row = l.globalRow(t, r.me), rows = l[t].rows;
    if (!r.nccl && l.exchanges(t)) {
      // The local chunk, at the rows its receiver puts it.
      const size_t from = size_t(l[t].chunkOffset) * rowBytes;
      if (!std::equal(in.a.begin() + ptrdiff_t(from),
                      in.a.begin() + ptrdiff_t(from + size_t(rows) * rowBytes),
                      mirror + size_t(row) * rowBytes))
        return tileName(t) + ": the bytes " + copied +
               " differ from the local chunk";
    }
    std::string bad = sampled(got, row, rows, r.me, row);
    if (!bad.empty())
      return tileName(t) + ": C " + bad;
  }
  return "";
}
