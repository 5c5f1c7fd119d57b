//===- overlap-bench.cpp - Serial vs overlapped GEMM + comm -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// For each collective and shape (M, N, K): C (M x N) += A (M x K) . B (K x N)
// with the collective the compiler fuses with it, run through the runtime's
// C ABI on one GPU per rank, tiled as overlap-decompose tiles it
// (planner::TileLayout; a rank-major plan of reduce-scatter or all-gather,
// planner::RankMajorLayout), in the variants
//   serial      one GEMM, then one collective (all-gather: the mirror)
//   overlapped  the plan's tiles, enqueued tile by tile: the producer (GEMM,
//               or the collective for all-gather) of tile t, signal t; wait
//               t and the consumer of tile t on the other stream (rank-
//               major: one contiguous GEMM and one shift per chunk; a
//               reduce-scatter's sum at the end)
//   ideal       max(GEMM alone, collective alone)
// and the Planner's prediction for the plan; reported in the style of
// nccl-tests, plus CSV. `--pack` times the pack kernel instead.
//
// This file reads the command line and prints; lib/Calibration measures
// (BenchMeasure.h, BenchRunner.h: legs, checks, timing) and plans
// (BenchSweep.h).
//
//===----------------------------------------------------------------------===//

#include "PackBench.h"

#include "overlap/Calibration/BenchMeasure.h"
#include "overlap/Calibration/MeasuringContext.h"
#include "overlap/Calibration/StandIn.h"
#include "overlap/Planner/Defaults.h"
#include "overlap/Planner/Ring.h"

#include "llvm/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;

namespace {

const char *synopsis =
    "usage: overlap-bench [options] [CUDA backend options]\n"
    "       overlap-bench --pack [--pack-shapes ...] [--pack-total BYTES]\n"
    "         [--warmup N] [--iters N] [--csv FILE] [CUDA backend options]\n";

const char *about =
    "\nTimes serial, overlapped and ideal GEMM + collective per shape against\n"
    "the Planner's prediction. The stand-in legs (one process) stand in for\n"
    "R ranks: copy-engine copies each tile's ring wire bytes device ->\n"
    "pinned host with the copy engines (no SM), sm-copy the same bytes\n"
    "device -> device with a kernel of comm_sms CTAs (every SM when\n"
    "comm_sms is 0) on the comm stream. The nccl leg's group is the world:\n"
    "one process per GPU, e.g. mpirun -np 8 overlap-bench --leg nccl ...\n"
    "(or srun, torchrun --no-python; one process alone is one rank); every\n"
    "rank must get the same arguments, rank 0 prints and writes --csv.\n"
    "--pack times overlap_pack and overlap_unpack against\n"
    "cudaMemcpy2DAsync and a contiguous device-to-device copy.\n\n";

/// Its own flags (overlap/Support/Flags.h); measuringFlags and the CUDA
/// backend's follow (parseMeasuringArgs).
std::vector<flags::Flag> table() {
  return {
      {"--collective", "C[,C...]",
       "all-reduce (default), reduce-scatter, all-gather or all-to-all (one "
       "expert per rank); a list runs each in turn"},
      {"--side", "dispatch|combine",
       "all-to-all: dispatch (default) exchanges A before the GEMM, combine "
       "its output after it"},
      {"--shapes", "MxNxK[,...]",
       "default: a sweep of 24 from compute- to comm-bound, including M=4096 "
       "N=8192 K=3072"},
      {"--ranks", "R",
       "group size of the stand-in legs (default 8, at least 2); the nccl "
       "leg's is the world"},
      {"--profile", "NAME|PATH",
       "the Planner's profile: the overlapped variant runs its plan and the "
       "prediction is reported"},
      {"--strategy", "S",
       "the Planner's strategy with --profile (rank-major, or auto when it "
       "picks it, runs rank-major tiles)"},
      {"--layout", "interleaved|rank-major",
       "force the overlapped variant's layout: rank-major (reduce-scatter and "
       "all-gather only; other collectives' shapes are skipped) runs --chunks "
       "uniform chunks per block without --profile, and the strategy "
       "rank-major with --profile unless --strategy says otherwise; a plan of "
       "the other layout runs uniform tiles of this one, with a note"},
      {"--chunks", "C",
       "--layout rank-major without a usable plan: C uniform chunks of every "
       "rank's block (default 1), G x C tiles"},
      {"--tiles", "T",
       "without --profile: T uniform tiles (default 4; multiples of R but for "
       "all-reduce), no prediction"},
      {"--tile-gemm", "batched|contiguous|both",
       "also time the plan's first reduce-scatter / all-gather tile's GEMM as "
       "G batched GEMMs of rows/G rows and as one contiguous GEMM of its rows"},
      {"--input-sets", "N", "sets of inputs cycled through (default 3)"},
      {"--csv", "FILE", "also write the rows as CSV"},
      {"--pack", "", "time the pack kernel instead"},
      {"--pack-shapes", "[ROWSx]BYTES[@STRIDE][:ELEM],...",
       "--pack's blocks: default rows of 2 B .. 16 KiB with a stride of twice "
       "the row; ROWS defaults to --pack-total / BYTES, STRIDE to 2 x BYTES, "
       "ELEM to the widest of 4, 2, 1 dividing BYTES"},
      {"--pack-total", "BYTES", "bytes of each block (default 64 MiB)"},
  };
}

[[noreturn]] static void usageError(const std::string &message) {
  calibration::usageError("overlap-bench", message);
}

/// Each line of `text` as a `# ` comment.
void printCommented(const std::string &text) {
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    std::printf("# %s\n", text.substr(at, end - at).c_str());
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
}

/// "all-reduce", or "all-to-all (dispatch)" with the side it runs.
std::string collectiveName(const SweepOptions &o, Collective coll) {
  if (coll != Collective::AllToAll)
    return planner::toString(coll).str();
  return "all-to-all (" + planner::toString(o.side).str() + ")";
}

/// The header of one collective's table: what a tile does, the leg, the
/// plan.
void printHeader(const SweepOptions &o, Collective coll,
                 const std::string &device) {
  const std::string name = collectiveName(o, coll);
  std::printf("\n# overlap-bench on %s, dtype %s, %s over %lld rank(s)\n",
              device.c_str(), o.dtypeName.c_str(), name.c_str(),
              (long long)o.ranks);
  // What one tile does, by collective (and all-to-all side); %lld is the
  // GEMM's batch, the ranks. All-reduce tiles are one GEMM and one
  // all-reduce: no line.
  struct TileText {
    Collective coll;
    planner::AllToAllSide side;
    const char *text;
  };
  static const TileText tiles[] = {
      {Collective::ReduceScatter, planner::AllToAllSide::Dispatch,
       "reduce-scatter tile: C's rows of every block packed (overlap_pack), "
       "one GEMM of batch %lld (B broadcast) into them, one reduce-scatter; "
       "serial: one GEMM in place, one reduce-scatter"},
      {Collective::AllGather, planner::AllToAllSide::Dispatch,
       "all-gather tile: one all-gather of the shard's rows, then one GEMM "
       "of batch %lld (B broadcast) into C's rows of every block; serial: "
       "one all-gather, one GEMM"},
      {Collective::AllToAll, planner::AllToAllSide::Dispatch,
       "all-to-all (dispatch, one expert per rank) tile: A's rows of every "
       "block packed (overlap_pack, comm stream), one all-to-all of them, "
       "then one GEMM of batch %lld (B broadcast) into C's rows of every "
       "block; serial: one all-to-all of A, one GEMM"},
      {Collective::AllToAll, planner::AllToAllSide::Combine,
       "all-to-all (combine, one expert per rank) tile: C's rows of every "
       "block packed (overlap_pack), one GEMM of batch %lld (B broadcast) "
       "into them, one all-to-all back; serial: one GEMM in place, one "
       "all-to-all"},
  };
  for (const TileText &t : tiles)
    if (t.coll == coll && (coll != Collective::AllToAll || t.side == o.side)) {
      std::printf("# ");
      std::printf(t.text, (long long)o.ranks);
      std::printf("\n");
    }
  // Rank-major rows (the layout column says which a shape ran).
  if (coll == Collective::ReduceScatter)
    std::printf("# rank-major reduce-scatter tile (layout rank-major): C's "
                "rows of one chunk of one block copied, one contiguous GEMM "
                "into them, one overlap_shift by +step into the owner's "
                "staging slot (step 0: no shift); then the %lld slots summed "
                "in rank order on the compute stream\n",
                (long long)o.ranks);
  else if (coll == Collective::AllGather)
    std::printf("# rank-major all-gather tile (layout rank-major): one "
                "overlap_shift by -step of the local chunk (step 0: none), "
                "then one contiguous GEMM into C's rows of the block that "
                "arrived\n");
  if (o.nccl())
    std::printf(
        "# leg nccl: NCCL %s on the world communicator, %lld rank(s)%s\n",
        name.c_str(), (long long)o.ranks,
        o.ranks == 1 ? " (one process: a smoke test)"
                     : ", one process per GPU; each time is the slowest "
                       "rank's, each check every rank's");
  else if (o.smCopy())
    std::printf(
        "# leg sm-copy: each tile's ring wire bytes (%.3f x tile bytes; a "
        "rank-major shift: the chunk it sends) copied device -> device by a "
        "kernel of %d CTAs on the comm stream%s; a stand-in for a link that "
        "takes SMs and follows the comm stream's priority, reduces nothing\n",
        planner::ringFactor(coll, o.ranks), o.smCopyCtas,
        coll == Collective::AllGather || coll == Collective::AllToAll
            ? ", plus the rank's own slice into its slot"
            : "");
  else
    std::printf(
        "# leg copy-engine: each tile's ring wire bytes (%.3f x tile bytes; a "
        "rank-major shift: the chunk it sends) copied device -> pinned "
        "host%s; a stand-in for a network link that reduces nothing\n",
        planner::ringFactor(coll, o.ranks),
        coll == Collective::AllGather || coll == Collective::AllToAll
            ? ", plus the rank's own slice into its slot (device -> device)"
            : "");
  std::printf(
      "# plan: %s; tiles enqueued interleaved (producer t, signal t, wait t, "
      "consumer t); %d warm-up + %d timed runs, median over %d input "
      "set(s); times in us\n",
      o.profile ? ("strategy " + o.strategy + ", profile " + o.profile->name +
                   (o.layout ? ", layout " + planner::toString(*o.layout).str()
                             : std::string()))
                      .c_str()
      : o.layout == planner::TileOrder::RankMajor
          ? ("rank-major, " + std::to_string(o.rankMajorChunks) +
             " uniform chunk(s) per block, no profile (no prediction)")
                .c_str()
          : ("uniform " + std::to_string(o.uniformTiles) +
             " tiles, no profile (no prediction)")
                .c_str(),
      o.warmup, o.iters, o.inputSets);
  if (o.tileGemm != TileGemmMode::None && coll != Collective::AllReduce)
    std::printf("# tile GEMM: the plan's first tile as %lld batched GEMMs of "
                "rows/%lld rows (B shared) and as one contiguous GEMM of its "
                "rows\n",
                (long long)o.ranks, (long long)o.ranks);
  std::printf("#%7s %7s %7s %12s %5s %-11s %10s %10s %10s %10s %10s %10s %7s "
              "%6s %8s %s\n",
              "M", "N", "K", "size(B)", "tiles", "layout", "gemm", "comm",
              "serial", "overlap", "ideal", "predicted", "speedup", "eta",
              "pred.err", "check");
}

void printRow(const ShapeResult &row) {
  std::printf(" %7lld %7lld %7lld %12zu %5zu %-11s %10.1f %10.1f %10.1f "
              "%10.1f %10.1f %10.1f %7.3f %6.3f %7.1f%% %s\n",
              (long long)row.s.m, (long long)row.s.n, (long long)row.s.k,
              row.bytes, row.tiles, planner::toString(row.layout).str().c_str(),
              row.gemm, row.comm, row.serial, row.overlapped, row.ideal,
              row.predicted, row.speedup(), row.eta(),
              100.0 * row.predictionError(), row.check.c_str());
  if (!std::isnan(row.tileBatchedUs) || !std::isnan(row.tileContiguousUs))
    std::printf("#   tile GEMM of %lld rows: %lld batched %.1f us, "
                "contiguous %.1f us\n",
                (long long)row.tileRows, (long long)row.tileBatch,
                row.tileBatchedUs, row.tileContiguousUs);
  if (!row.planNote.empty())
    std::printf("#   no plan from the profile (%s): uniform tiles\n",
                row.planNote.c_str());
  std::fflush(stdout);
}

/// Runs every shape for one collective, printing its table and summary;
/// appends its rows to `rows` and calls `measured` after each.
void sweep(overlap_context *ctx, const SweepOptions &o, Collective coll,
           const std::string &device, int64_t &keyBase,
           std::vector<ShapeResult> &rows,
           const std::function<void()> &measured) {
  printHeader(o, coll, device);
  const size_t first = rows.size();
  for (const GemmShape &s : o.shapes) {
    llvm::Expected<ShapePlan> plan = planShape(o, coll, s);
    if (!plan) {
      std::printf("#%7lld %7lld %7lld skipped: %s\n", (long long)s.m,
                  (long long)s.n, (long long)s.k,
                  llvm::toString(plan.takeError()).c_str());
      continue;
    }
    rows.push_back(measureShape(ctx, o, coll, s, *plan, keyBase));
    printRow(rows.back());
    measured();
  }
  std::vector<ShapeResult> mine(rows.begin() + first, rows.end());
  SweepSummary sum = summarize(mine);
  std::printf(
      "# %s: eta median %.3f, best %.3f (%zu shapes); |prediction error|: "
      "median %.1f%%, max %.1f%%; correctness failures: %d\n",
      collectiveName(o, coll).c_str(), sum.etaMedian, sum.etaBest,
      sum.etaShapes, 100.0 * sum.errorMedian, 100.0 * sum.errorMax,
      sum.failures);
}

} // namespace

int main(int argc, char **argv) {
  Args args =
      parseMeasuringArgs("overlap-bench", synopsis, about, table(), argc, argv);
  const CudaKnobs knobs = readCudaKnobs(args);
  SweepOptions o;
  o.warmup = int(args.getInt("--warmup", 5));
  o.iters = int(args.getInt("--iters", 20));
  if (args.has("--pack")) {
    PackOptions p;
    p.warmup = o.warmup;
    p.iters = o.iters;
    p.total = args.getInt("--pack-total", int64_t(64) << 20);
    p.shapes = args.get("--pack-shapes", "");
    p.csv = args.get("--csv", "");
    if (!args.error().empty())
      usageError(args.error());
    return packBench(p, knobs);
  }

  o.shapes = defaultShapes();
  if (args.has("--shapes")) {
    auto shapes = parseGemmShapes(args.get("--shapes", ""));
    if (!shapes)
      usageError("--shapes wants MxNxK[,MxNxK...]");
    o.shapes = *shapes;
  }
  for (const GemmShape &s : o.shapes)
    if (s.m > (int64_t(1) << 20) || s.n > (int64_t(1) << 20) ||
        s.k > (int64_t(1) << 20))
      usageError("--shapes: sizes above 2^20 are not supported");
  auto collectives = parseCollectives(args.get("--collective", "all-reduce"));
  if (!collectives)
    usageError("--collective wants all-reduce, reduce-scatter, all-gather or "
               "all-to-all, or a comma list of them");
  const bool allToAll = std::find(collectives->begin(), collectives->end(),
                                  Collective::AllToAll) != collectives->end();
  if (args.has("--side")) {
    std::optional<planner::AllToAllSide> side =
        planner::parseAllToAllSide(args.get("--side", ""));
    if (!allToAll)
      usageError("--side: only for --collective all-to-all");
    if (!side)
      usageError("--side: expected dispatch or combine, got '" +
                 args.get("--side", "") + "'");
    o.side = *side;
  }
  o.dtypeName = args.get("--dtype", "f16");
  std::optional<overlap_dtype> dtype = parseDtype(o.dtypeName);
  if (!dtype)
    usageError("--dtype: expected f16, bf16 or f32, got '" + o.dtypeName + "'");
  o.dtype = *dtype;
  o.leg = args.get("--leg", "copy-engine");
  if (!parseLeg(o.leg))
    usageError(badLegMessage(o.leg));
  if (args.has("--tile-gemm")) {
    auto mode = parseTileGemmMode(args.get("--tile-gemm", ""));
    if (!mode)
      usageError("--tile-gemm: expected batched, contiguous or both, got '" +
                 args.get("--tile-gemm", "") + "'");
    o.tileGemm = *mode;
  }
  o.ranks = args.getInt("--ranks", 8);
  o.inputSets = int(args.getInt("--input-sets", 3));
  o.uniformTiles = args.getInt("--tiles", 4);
  o.strategy = args.get("--strategy", planner::kDefaultStrategy);
  if (args.has("--layout")) {
    std::optional<planner::TileOrder> layout =
        planner::parseTileOrder(args.get("--layout", ""));
    if (!layout)
      usageError("--layout: expected interleaved or rank-major, got '" +
                 args.get("--layout", "") + "'");
    o.layout = *layout;
    // The Planner's rank-major plan unless a strategy was asked for.
    if (*layout == planner::TileOrder::RankMajor && !args.has("--strategy"))
      o.strategy = "rank-major";
  }
  o.rankMajorChunks = args.getInt("--chunks", 1);
  if (args.has("--chunks") && o.layout != planner::TileOrder::RankMajor)
    usageError("--chunks: only with --layout rank-major");
  const std::string csvPath = args.get("--csv", "");
  if (!args.error().empty())
    usageError(args.error());
  if (!o.nccl() && o.ranks < 2)
    usageError("the " + o.leg +
               " leg needs --ranks >= 2 (one rank puts nothing on the wire); "
               "use --leg nccl for one rank");
  std::string profileText; // ranks must plan from the same profile
  if (args.has("--profile")) {
    std::string path = planner::resolveProfilePath(
        args.get("--profile", ""), planner::shippedProfilesDir());
    if (path.empty())
      usageError("--profile: " + planner::unknownProfileMessage(
                                     args.get("--profile", ""),
                                     planner::shippedProfilesDir()));
    auto loaded = planner::loadProfile(path);
    if (!loaded)
      usageError(llvm::toString(loaded.takeError()));
    o.profile = std::move(*loaded);
    std::ifstream file(path);
    profileText.assign(std::istreambuf_iterator<char>(file), {});
  }
  std::optional<int64_t> profileCommSms;
  if (o.profile)
    profileCommSms = o.profile->device.commSms;
  const overlap_cuda_options opts =
      measuringOptions(knobs, profileCommSms, parseLeg(o.leg));

  DeviceInfo device;
  overlap_context *ctx = nullptr;
  if (o.nccl()) {
    // A rank of the launched job (one rank without launcher variables).
    ctx = createLaunchedContext("overlap-bench", opts, device);
    agreeOnArguments(ctx, argc, argv, {"--csv"}, profileText);
    printOnlyOnRankZero(ctx);
    o.ranks = worldRanks(ctx, args.has("--ranks"), o.ranks);
    o.rank = overlap_context_rank(ctx);
  } else {
    ctx = createMeasuringContext("overlap-bench", opts, device);
    if (o.smCopy())
      o.smCopyCtas = smCopyCtas(overlap_cuda_comm_sms(ctx), device.smCount);
  }
  const std::string runtime = runtimeDescription(ctx);
  std::printf("# runtime: %s\n", runtime.c_str());

  std::vector<ShapeResult> rows;
  int64_t keyBase = 1000;
  // The CSV so far after every shape (rank 0), so that a run stopped at a
  // time limit leaves the shapes it measured; finish() writes the whole
  // one at the end and reports a failure to write it.
  const std::string knobText = describeCudaKnobs(knobs);
  auto writeRows = [&](std::ostream &csv) {
    writeSweepCsv(csv, o, runtime, knobText, rows);
  };
  auto checkpoint = [&] {
    if (!csvPath.empty() && o.rank == 0)
      (void)writeCsvFile(csvPath, writeRows);
  };
  for (Collective coll : *collectives)
    sweep(ctx, o, coll, device.name, keyBase, rows, checkpoint);
  if (knobs.gemmAutotune) {
    std::printf("# GEMM algorithms (--gemm-autotune %d):\n",
                int(knobs.gemmAutotune));
    printCommented(gemmAlgorithmReport(ctx));
  }

  return finish(ctx, csvPath, summarize(rows).failures, writeRows);
}
