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
// Legs: `copy-engine` (one GPU: for a collective of "size" S over R ranks,
// the bytes one rank puts on the wire, ringFactor(R) x S, copied device ->
// pinned host; a stand-in for a network link, recorded as such in the
// profile). `nccl` needs several ranks (one process per GPU), whose
// bootstrap this tool does not have yet; it says so.
//
//   overlap-calibrate --nk 8192x3072,4096x1024 --dtype f16 --ranks 8 \
//       --out p.json
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"
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
    "64 KiB .. 256 MiB, output calibrated.json.\n";

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
  const int64_t ranks = args.getInt("--ranks", 8);
  const int64_t maxM = args.getInt("--max-m", 8192);
  const int64_t step = args.getInt("--step", 128);
  const int64_t maxBytes = args.getInt("--max-bytes", int64_t(256) << 20);
  const int warmup = int(args.getInt("--warmup", 5));
  const int iters = int(args.getInt("--iters", 20));
  std::optional<overlap_dtype> dtype = parseDtype(args.get("--dtype", "f16"));
  std::string leg = args.get("--leg", "copy-engine");
  if (!dtype || ranks < 2 || (leg != "copy-engine" && leg != "nccl")) {
    std::fputs("error: bad --dtype, --leg, or --ranks < 2\n", stderr);
    std::fputs(usage, stderr);
    return 2;
  }
  if (leg == "nccl") {
    std::fputs("overlap-calibrate: the nccl leg needs one process per GPU and "
               "a multi-rank bootstrap, which this tool does not have yet; "
               "use --leg copy-engine\n",
               stderr);
    return 2;
  }
  cudaDeviceProp prop;
  overlap_context *ctx = createMeasuringContext("overlap-calibrate", prop);
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

  // Communication curves: size S -> copy of ringFactor(R) x S bytes.
  size_t maxWire = size_t(2.0 * double(maxBytes)) + 64;
  void *src = nullptr, *pinned = nullptr;
  check(ctx, overlap_alloc(ctx, maxWire, &src), "alloc");
  checkCuda(cudaMallocHost(&pinned, maxWire), "cudaMallocHost");
  auto copy = [&](size_t bytes) {
    check(ctx, overlap_memcpy(ctx, 1, -1, pinned, src, bytes),
          "overlap_memcpy");
  };
  llvm::json::Object collectives;
  for (planner::Collective coll :
       {planner::Collective::AllReduce, planner::Collective::ReduceScatter,
        planner::Collective::AllGather}) {
    double factor = planner::ringFactor(coll, ranks);
    std::vector<double> xs, ys;
    for (int64_t size = 64 << 10; size <= maxBytes; size *= 2) {
      size_t wire = size_t(std::llround(factor * double(size)));
      xs.push_back(double(size));
      ys.push_back(timeUs(ctx, 1, 1, warmup, iters, [&] { copy(wire); }));
      std::printf("%-14s size %10lld  wire %10zu  %10.2f us\n",
                  planner::toString(coll).str().c_str(), (long long)size, wire,
                  ys.back());
    }
    collectives[planner::toString(coll)] = llvm::json::Array{llvm::json::Object{
        {"ranks", ranks},
        {"x_unit", "B"},
        {"note", "copy-engine stand-in: ringFactor x size "
                 "bytes device -> pinned host"},
        {"curve", llvm::json::Object{{"table", monotoneTable(xs, ys)}}}}};
  }

  // Contention: a mid-size GEMM and copy, alone and at the same time.
  int64_t midM = std::max<int64_t>(step, maxM / 2 / step * step);
  size_t midWire = size_t(maxBytes / 4);
  const int64_t midN = nks[0].first, midK = nks[0].second;
  double gemmAlone =
      timeUs(ctx, 0, 0, warmup, iters, [&] { gemm(midM, midN, midK); });
  double copyAlone = timeUs(ctx, 1, 1, warmup, iters, [&] { copy(midWire); });
  double gemmBoth = timeUs(ctx, 0, 0, warmup, iters, [&] {
    copy(midWire);
    gemm(midM, midN, midK);
  });
  double copyBoth = timeUs(ctx, 1, 1, warmup, iters, [&] {
    gemm(midM, midN, midK);
    copy(midWire);
  });
  double computeContention = std::max(1.0, gemmBoth / gemmAlone);
  double commContention = std::max(1.0, copyBoth / copyAlone);
  std::printf("contention: compute %.3f, comm %.3f\n", computeContention,
              commContention);

  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  llvm::json::Object profile{
      {"name", args.get("--name", "calibrated")},
      {"description",
       std::string("overlap-calibrate on ") + prop.name + ", " + date},
      {"provenance", "measured (overlap-calibrate, leg copy-engine: a "
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
  if (auto parsed = planner::parseProfile(text, out); !parsed) {
    std::fprintf(stderr, "internal error: the profile does not load: %s\n",
                 llvm::toString(parsed.takeError()).c_str());
    return 1;
  }
  std::ofstream file(out);
  file << text;
  if (!file) {
    std::fprintf(stderr, "error: cannot write %s\n", out.c_str());
    return 1;
  }
  std::printf("wrote %s\n", out.c_str());
  cudaFreeHost(pinned);
  overlap_free(ctx, src);
  overlap_free(ctx, a);
  overlap_free(ctx, b);
  overlap_free(ctx, c);
  return overlap_cuda_context_destroy(ctx) == OVERLAP_SUCCESS ? 0 : 1;
}
