//===- overlap-calibrate.cpp - Measure a GPU, write a profile ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Times cuBLASLt GEMMs (through overlap_gemm) over m for given N, K and
// dtype, and the communication leg over buffer sizes, then writes a profile
// the Planner reads (docs/profiles.md): monotone tables (the fit: medians,
// made nondecreasing by a running maximum), the device's name and SM count,
// and contention factors measured by running both legs at once. The profile
// is parsed back with the Planner before it is written, so a profile this
// tool writes always loads.
//
// Legs: `copy-engine` (one process, one GPU: for a collective of "size" S
// over R ranks, the bytes one rank puts on the wire, ringFactor(R) x S,
// copied device -> pinned host; a stand-in for a network link, recorded as
// such in the profile). `nccl` (one process per GPU, at least 2, started by
// mpirun, srun or torchrun: overlap_cuda_context_create_launched): NCCL's
// all-reduce, reduce-scatter and all-gather on the world over sizes S
// (nccl-tests' size), curves for R = the world size. Over several ranks every
// rank runs every measurement, each repetition after a barrier, and a
// repetition counts as long as its slowest rank took (GEMMs too: each rank
// times its own GPU); only rank 0 prints and writes the profile.
//
//   overlap-calibrate --nk 8192x3072,4096x1024 --dtype f16 --ranks 8 \
//       --out p.json
//   mpirun -np 8 overlap-calibrate --leg nccl --dtype f16 --out p.json
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"
#include "BenchRanks.h"
#include "overlap/Planner/Profile.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <ctime>
#include <fstream>

using namespace overlap;
using namespace overlap::bench;

static const char *usage =
    "usage: overlap-calibrate [--nk NxK,...] [--dtype f16|bf16|f32]\n"
    "         [--ranks R] [--leg copy-engine|nccl] [--max-m M] [--step 128]\n"
    "         [--max-bytes B] [--warmup 5] [--iters 20] [--name NAME]\n"
    "         [--out FILE]\n"
    "One GEMM curve per (N, K). Defaults: the (N, K) pairs of overlap-bench's\n"
    "sweep, f16, 8 ranks, copy-engine, m up to 8192 in steps of 128, sizes\n"
    "64 KiB .. 256 MiB, output calibrated.json.\n"
    "--leg copy-engine runs in one process and stands in for R ranks.\n"
    "--leg nccl times NCCL on the world: one process per GPU, at least 2,\n"
    "e.g. mpirun -np 8 overlap-calibrate --leg nccl ... (or srun, torchrun\n"
    "--no-python); R is the world size, every rank must get the same\n"
    "arguments, rank 0 writes the profile.\n";

/// A nondecreasing table from measured medians (the Planner requires it).
static llvm::json::Array monotoneTable(const std::vector<double> &x,
                                       const std::vector<double> &y) {
  llvm::json::Array table;
  double top = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    top = std::max(top, y[i]);
    table.push_back(llvm::json::Array{x[i], top});
  }
  return table;
}

int main(int argc, char **argv) {
  Args args;
  if (!args.parse(argc, argv,
                  {"--nk", "--dtype", "--ranks", "--leg", "--max-m", "--step",
                   "--max-bytes", "--warmup", "--iters", "--name", "--out"},
                  {"--help"}) ||
      args.has("--help")) {
    std::fputs(usage, args.has("--help") ? stdout : stderr);
    return args.has("--help") ? 0 : 2;
  }
  std::vector<std::pair<int64_t, int64_t>> nks;
  {
    std::string list = args.get(
        "--nk",
        "8192x3072,4096x1024,8192x8192,4096x16384,8192x1024,2048x12288");
    size_t at = 0;
    while (at <= list.size()) {
      size_t comma = list.find(',', at);
      std::string item = list.substr(
          at, comma == std::string::npos ? std::string::npos : comma - at);
      long long n = 0, k = 0;
      char x = 0;
      if (std::sscanf(item.c_str(), "%lld%c%lld", &n, &x, &k) != 3 ||
          x != 'x' || n <= 0 || k <= 0) {
        std::fprintf(stderr, "error: --nk wants NxK[,NxK...], got '%s'\n",
                     item.c_str());
        return 2;
      }
      nks.push_back({n, k});
      if (comma == std::string::npos)
        break;
      at = comma + 1;
    }
  }
  int64_t maxN = 0, maxK = 0;
  for (auto [n, k] : nks)
    maxN = std::max(maxN, n), maxK = std::max(maxK, k);
  int64_t ranks = args.getInt("--ranks", 8);
  const int64_t maxM = args.getInt("--max-m", 8192);
  const int64_t step = args.getInt("--step", 128);
  const int64_t maxBytes = args.getInt("--max-bytes", int64_t(256) << 20);
  const int warmup = int(args.getInt("--warmup", 5));
  const int iters = int(args.getInt("--iters", 20));
  std::optional<overlap_dtype> dtype = parseDtype(args.get("--dtype", "f16"));
  std::string leg = args.get("--leg", "copy-engine");
  const bool nccl = leg == "nccl";
  if (!dtype || (!nccl && ranks < 2) || (leg != "copy-engine" && !nccl)) {
    std::fputs("error: bad --dtype, --leg, or --ranks < 2\n", stderr);
    std::fputs(usage, stderr);
    return 2;
  }
  cudaDeviceProp prop;
  overlap_context *ctx = nullptr;
  if (nccl) {
    ctx = createLaunchedContext("overlap-calibrate", prop);
    agreeOnArguments(ctx, argc, argv, {"--out"}, "");
    printOnlyOnRankZero(ctx);
    const int world = overlap_context_size(ctx);
    const bool first = overlap_context_rank(ctx) == 0;
    if (world < 2) {
      std::fputs("error: the nccl leg times collectives between processes: "
                 "start 2 or more, one per GPU (e.g. mpirun -np 8 "
                 "overlap-calibrate --leg nccl ...); this one is alone\n",
                 stderr);
      leave(2);
    }
    if (args.has("--ranks") && ranks != world) {
      if (first)
        std::fprintf(stderr,
                     "error: --ranks %lld, but the nccl leg's group is the "
                     "world of %d ranks (the processes the launcher "
                     "started); drop --ranks\n",
                     (long long)ranks, world);
      leave(2);
    }
    ranks = world;
  } else {
    ctx = createMeasuringContext("overlap-calibrate", prop);
  }
  const size_t elt = overlap_dtype_size(*dtype);

  // GEMM curves: one call of m rows (N columns, depth K), C of the input
  // type, for each (N, K).
  void *a = nullptr, *b = nullptr, *c = nullptr;
  check(ctx, overlap_alloc(ctx, size_t(maxM * maxK) * elt, &a), "alloc A");
  check(ctx, overlap_alloc(ctx, size_t(maxK * maxN) * elt, &b), "alloc B");
  check(ctx, overlap_alloc(ctx, size_t(maxM * maxN) * elt, &c), "alloc C");
  std::vector<char> host = randomElements(*dtype, size_t(maxM * maxK), 1);
  check(ctx, overlap_memcpy(ctx, 0, -1, a, host.data(), host.size()), "upload");
  host = randomElements(*dtype, size_t(maxK * maxN), 2);
  check(ctx, overlap_memcpy(ctx, 0, -1, b, host.data(), host.size()), "upload");
  host = randomElements(*dtype, size_t(maxM * maxN), 3);
  check(ctx, overlap_memcpy(ctx, 0, -1, c, host.data(), host.size()), "upload");
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  auto gemm = [&](int64_t m, int64_t n, int64_t k) {
    check(ctx,
          overlap_gemm(ctx, 0, -1, 1, m, n, k, *dtype, a, k, 0, b, n, 0, *dtype,
                       c, n, 0),
          "overlap_gemm");
  };
  llvm::json::Array gemmCurves;
  for (auto [n, k] : nks) {
    std::vector<double> gemmX, gemmY;
    for (int64_t m = step; m <= maxM; m += step) {
      gemmX.push_back(double(m));
      gemmY.push_back(timeUs(ctx, 0, 0, warmup, iters,
                             [&, n = n, k = k] { gemm(m, n, k); }));
      std::printf("gemm  n %6lld  k %6lld  m %6lld  %10.2f us\n", (long long)n,
                  (long long)k, (long long)m, gemmY.back());
    }
    gemmCurves.push_back(llvm::json::Object{
        {"n", n},
        {"k", k},
        {"dtype", args.get("--dtype", "f16")},
        {"curve", llvm::json::Object{{"table", monotoneTable(gemmX, gemmY)}}}});
  }

  // Communication curves. copy-engine: size S -> a copy of ringFactor(R) x S
  // bytes. nccl: size S -> the collective of S bytes (all-reduce: S in and
  // out; reduce-scatter: S in, S/R out; all-gather: S/R in, S out).
  const size_t maxWire = size_t(2.0 * double(maxBytes)) + 64;
  void *src = nullptr, *dst = nullptr, *pinned = nullptr;
  if (nccl) {
    check(ctx, overlap_alloc(ctx, size_t(maxBytes), &src), "alloc");
    check(ctx, overlap_alloc(ctx, size_t(maxBytes), &dst), "alloc");
    // Values in [-1, 1) that differ between ranks: sums stay finite.
    host = randomElements(*dtype, size_t(maxBytes) / elt,
                          mix64(uint64_t(overlap_context_rank(ctx)) + 4));
    check(ctx, overlap_memcpy(ctx, 1, -1, src, host.data(), host.size()),
          "upload");
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
    host = {};
  } else {
    check(ctx, overlap_alloc(ctx, maxWire, &src), "alloc");
    checkCuda(cudaMallocHost(&pinned, maxWire), "cudaMallocHost");
  }
  // The size the leg's `coll` of nccl-tests size `size` really moves: NCCL
  // counts whole elements, per rank for reduce-scatter and all-gather.
  auto movedBytes = [&](planner::Collective coll, int64_t size) -> int64_t {
    if (!nccl)
      return size;
    const int64_t unit =
        int64_t(elt) * (coll == planner::Collective::AllReduce ? 1 : ranks);
    return size / unit * unit;
  };
  // Enqueues that collective (or its stand-in) on the comm stream; `wire`
  // is what one rank puts on the wire in a ring.
  auto communicate = [&](planner::Collective coll, int64_t size, size_t &wire) {
    if (!nccl) {
      wire =
          size_t(std::llround(planner::ringFactor(coll, ranks) * double(size)));
      check(ctx, overlap_memcpy(ctx, 1, -1, pinned, src, wire),
            "overlap_memcpy");
      return;
    }
    const int64_t moved = movedBytes(coll, size);
    const int64_t perRank = moved / (ranks * int64_t(elt));
    wire = size_t(ringWireBytes(coll, ranks, moved));
    switch (coll) {
    case planner::Collective::AllReduce:
      check(ctx,
            overlap_all_reduce(ctx, 1, -1, nullptr, *dtype, OVERLAP_SUM, src,
                               dst, moved / int64_t(elt)),
            "overlap_all_reduce");
      break;
    case planner::Collective::ReduceScatter:
      check(ctx,
            overlap_reduce_scatter(ctx, 1, -1, nullptr, *dtype, OVERLAP_SUM,
                                   src, dst, perRank),
            "overlap_reduce_scatter");
      break;
    case planner::Collective::AllGather:
      check(ctx,
            overlap_all_gather(ctx, 1, -1, nullptr, *dtype, src, dst, perRank),
            "overlap_all_gather");
      break;
    }
  };
  llvm::json::Object collectives;
  for (planner::Collective coll :
       {planner::Collective::AllReduce, planner::Collective::ReduceScatter,
        planner::Collective::AllGather}) {
    std::vector<double> xs, ys;
    for (int64_t size = 64 << 10; size <= maxBytes; size *= 2) {
      const int64_t moved = movedBytes(coll, size);
      if (moved <= 0 || (!xs.empty() && double(moved) <= xs.back()))
        continue; // too small to split over the ranks
      size_t wire = 0;
      xs.push_back(double(moved));
      ys.push_back(timeUs(ctx, 1, 1, warmup, iters,
                          [&] { communicate(coll, size, wire); }));
      std::printf("%-14s size %10lld  wire %10zu  %10.2f us\n",
                  planner::toString(coll).str().c_str(), (long long)moved, wire,
                  ys.back());
    }
    const std::string note =
        nccl ? "NCCL " + planner::toString(coll).str() + " over " +
                   std::to_string(ranks) +
                   " ranks (one process per GPU), nccl-tests size; median "
                   "over runs of the slowest rank's time"
             : "copy-engine stand-in: ringFactor x size bytes device -> "
               "pinned host";
    collectives[planner::toString(coll)] = llvm::json::Array{llvm::json::Object{
        {"ranks", ranks},
        {"x_unit", "B"},
        {"note", note},
        {"curve", llvm::json::Object{{"table", monotoneTable(xs, ys)}}}}};
  }

  // Contention: a mid-size GEMM and communication (a copy, or an NCCL
  // all-reduce), alone and at the same time. Each "both" run starts on the
  // other stream, so that over several ranks its barrier precedes both.
  int64_t midM = std::max<int64_t>(step, maxM / 2 / step * step);
  auto midComm = [&] {
    size_t wire = 0;
    if (nccl)
      communicate(planner::Collective::AllReduce, maxBytes / 4, wire);
    else
      check(ctx, overlap_memcpy(ctx, 1, -1, pinned, src, size_t(maxBytes / 4)),
            "overlap_memcpy");
  };
  const int64_t midN = nks[0].first, midK = nks[0].second;
  double gemmAlone =
      timeUs(ctx, 0, 0, warmup, iters, [&] { gemm(midM, midN, midK); });
  double commAlone = timeUs(ctx, 1, 1, warmup, iters, midComm);
  double gemmBoth = timeUs(ctx, 1, 0, warmup, iters, [&] {
    midComm();
    gemm(midM, midN, midK);
  });
  double commBoth = timeUs(ctx, 0, 1, warmup, iters, [&] {
    gemm(midM, midN, midK);
    midComm();
  });
  double computeContention = std::max(1.0, gemmBoth / gemmAlone);
  double commContention = std::max(1.0, commBoth / commAlone);
  std::printf("contention: compute %.3f, comm %.3f\n", computeContention,
              commContention);

  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  llvm::json::Object profile{
      {"name", args.get("--name", "calibrated")},
      {"description", std::string("overlap-calibrate on ") +
                          (nccl ? std::to_string(ranks) + " x " : "") +
                          prop.name + ", " + date},
      {"provenance",
       nccl ? "measured (overlap-calibrate, leg nccl: NCCL collectives over " +
                  std::to_string(ranks) +
                  " ranks, one process per GPU; each run the slowest rank's "
                  "time)"
            : "measured (overlap-calibrate, leg copy-engine: a "
              "device->pinned-host stand-in for the network)"},
      {"device", llvm::json::Object{{"name", prop.name},
                                    {"sm_count", prop.multiProcessorCount}}},
      {"gemm", llvm::json::Object{{"curves", std::move(gemmCurves)}}},
      {"collectives", std::move(collectives)},
      {"contention", llvm::json::Object{{"compute", computeContention},
                                        {"comm", commContention}}}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(profile))) << "\n";
  os.flush();
  std::string out = args.get("--out", "calibrated.json");
  int status = 0;
  if (overlap_context_rank(ctx) == 0) { // one profile for the job
    if (auto parsed = planner::parseProfile(text, out); !parsed) {
      std::fprintf(stderr, "internal error: the profile does not load: %s\n",
                   llvm::toString(parsed.takeError()).c_str());
      status = 1;
    } else {
      std::ofstream file(out);
      file << text;
      if (!file) {
        std::fprintf(stderr, "error: cannot write %s\n", out.c_str());
        status = 1;
      } else {
        std::printf("wrote %s\n", out.c_str());
      }
    }
  }
  if (pinned)
    cudaFreeHost(pinned);
  for (void *p : {src, dst, a, b, c})
    overlap_free(ctx, p);
  toolContext() = nullptr;
  return overlap_cuda_context_destroy(ctx) == OVERLAP_SUCCESS ? status : 1;
}
