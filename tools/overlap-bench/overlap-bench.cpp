//===- overlap-bench.cpp - Serial vs overlapped GEMM + collective -*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// For each shape (M, N, K): C (M x N) += A (M x K) . B (K x N), then an
// all-reduce of C, run through the runtime's C ABI on one GPU:
//   serial      one GEMM, then the collective of the whole C
//   overlapped  the plan's tiles: GEMM of tile t on the compute stream,
//               signal t; wait t and the collective of tile t on the comm
//               stream (the schedule the compiler emits)
//   ideal       max(GEMM alone, collective alone)
// and the Planner's prediction for the plan. Reported in the style of
// nccl-tests, plus CSV: speedup = serial / overlapped, efficiency
// eta = (serial - overlapped) / (serial - ideal), prediction error =
// (predicted - overlapped) / overlapped.
//
// Communication legs (every table says which):
//   copy-engine  the bytes one rank would put on the wire for the
//                all-reduce of a tile over --ranks R (ringFactor x tile
//                bytes), copied device -> pinned host by the copy engines:
//                a stand-in for a network link, on one GPU.
//   nccl         ncclAllReduce on the world communicator. This tool runs
//                one process (one rank), so this is a one-rank smoke test
//                until a multi-rank launcher exists.
//
// Timing: CUDA events around each run, warm-up runs, medians over timed
// runs and over several input sets. Correctness on every input set: C is
// reset, the collective's output poisoned, then the serial and the
// overlapped run are checked (the collective's output equals C bit for
// bit; sampled elements of C equal a double-precision reference).
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"
#include "overlap/Planner/TilePlanner.h"

#include "llvm/Support/Error.h"

#include <cmath>
#include <fstream>
#include <sstream>

using namespace overlap;
using namespace overlap::bench;

namespace {

const char *usage =
    "usage: overlap-bench [--shapes MxNxK,...] [--dtype f16|bf16|f32]\n"
    "         [--leg copy-engine|nccl] [--ranks R] [--profile NAME|PATH]\n"
    "         [--strategy S] [--tiles T] [--warmup 5] [--iters 20]\n"
    "         [--input-sets 3] [--csv FILE]\n"
    "Without --profile the overlapped variant uses T uniform tiles (default\n"
    "4) and no prediction is reported. Default shapes: a sweep of 24 from\n"
    "compute- to comm-bound, including M=4096 N=8192 K=3072.\n";

struct Shape {
  int64_t m, n, k;
};

std::vector<Shape> defaultShapes() {
  std::vector<Shape> shapes;
  const std::pair<int64_t, int64_t> nk[] = {{8192, 3072}, {4096, 1024},
                                            {8192, 8192}, {4096, 16384},
                                            {8192, 1024}, {2048, 12288}};
  for (int64_t m : {1024, 2048, 4096, 8192})
    for (auto [n, k] : nk)
      shapes.push_back({m, n, k});
  return shapes;
}

bool parseShapes(const std::string &text, std::vector<Shape> &out) {
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    long long m, n, k;
    char x1, x2;
    std::stringstream one(item);
    if (!(one >> m >> x1 >> n >> x2 >> k) || x1 != 'x' || x2 != 'x' || m <= 0 ||
        n <= 0 || k <= 0)
      return false;
    out.push_back({m, n, k});
  }
  return !out.empty();
}

/// Device buffers of one shape and the enqueue functions of each variant.
struct Runner {
  overlap_context *ctx;
  overlap_dtype dtype;
  size_t elt;
  Shape s;
  bool nccl;
  double wireFactor; // copy-engine: wire bytes per tile byte
  std::vector<int64_t> tiles;
  void *a = nullptr, *b = nullptr, *c = nullptr, *c0 = nullptr;
  void *ncclOut = nullptr; // nccl: the all-reduce's destination
  char *hostOut = nullptr; // copy-engine: pinned copy of C
  void *extra = nullptr;   // copy-engine: source of the surplus wire bytes
  char *hostExtra = nullptr;
  int64_t key; // signal-set keys of this shape

  void gemm(int64_t row0, int64_t rows, int64_t tile) {
    check(ctx,
          overlap_gemm(ctx, OVERLAP_STREAM_COMPUTE, tile, 1, rows, s.n, s.k,
                       dtype, static_cast<char *>(a) + row0 * s.k * elt, s.k, 0,
                       b, s.n, 0, dtype,
                       static_cast<char *>(c) + row0 * s.n * elt, s.n, 0),
          "overlap_gemm");
  }
  void comm(int64_t row0, int64_t rows, int64_t tile) {
    size_t offset = size_t(row0 * s.n) * elt, bytes = size_t(rows * s.n) * elt;
    char *src = static_cast<char *>(c) + offset;
    if (nccl) {
      check(ctx,
            overlap_all_reduce(
                ctx, OVERLAP_STREAM_COMM, tile, nullptr, dtype, OVERLAP_SUM,
                src, static_cast<char *>(ncclOut) + offset, rows * s.n),
            "overlap_all_reduce");
      return;
    }
    check(ctx,
          overlap_memcpy(ctx, OVERLAP_STREAM_COMM, tile, hostOut + offset, src,
                         bytes),
          "overlap_memcpy");
    size_t wire = size_t(std::llround(wireFactor * double(bytes)));
    if (wire > bytes)
      check(ctx,
            overlap_memcpy(ctx, OVERLAP_STREAM_COMM, tile, hostExtra, extra,
                           wire - bytes),
            "overlap_memcpy");
  }
  void serial() {
    overlap_signals *sigs = nullptr;
    check(ctx, overlap_signals_acquire(ctx, key, 1, &sigs), "acquire");
    gemm(0, s.m, -1);
    check(ctx, overlap_signal(ctx, OVERLAP_STREAM_COMPUTE, sigs, 0), "signal");
    check(ctx, overlap_wait(ctx, OVERLAP_STREAM_COMM, sigs, 0), "wait");
    comm(0, s.m, -1);
  }
  void overlapped() {
    overlap_signals *sigs = nullptr;
    check(ctx,
          overlap_signals_acquire(ctx, key + 1, int32_t(tiles.size()), &sigs),
          "acquire");
    int64_t row = 0;
    for (size_t t = 0; t < tiles.size(); ++t) {
      gemm(row, tiles[t], int64_t(t));
      check(ctx, overlap_signal(ctx, OVERLAP_STREAM_COMPUTE, sigs, int32_t(t)),
            "signal");
      row += tiles[t];
    }
    row = 0;
    for (size_t t = 0; t < tiles.size(); ++t) {
      check(ctx, overlap_wait(ctx, OVERLAP_STREAM_COMM, sigs, int32_t(t)),
            "wait");
      comm(row, tiles[t], int64_t(t));
      row += tiles[t];
    }
  }
};

/// Resets C, poisons the collective's output, runs `variant` once and
/// checks it; returns an empty string or what is wrong.
std::string checkRun(Runner &r, const std::function<void()> &variant,
                     const std::vector<char> &hostA,
                     const std::vector<char> &hostB,
                     const std::vector<char> &hostC0, uint64_t seed) {
  overlap_context *ctx = r.ctx;
  const size_t cBytes = size_t(r.s.m * r.s.n) * r.elt;
  check(ctx, overlap_memcpy(ctx, 0, -1, r.c, r.c0, cBytes), "reset C");
  std::vector<char> poison(cBytes, char(0xff)); // NaN in every type
  if (r.nccl)
    check(ctx, overlap_memcpy(ctx, 0, -1, r.ncclOut, poison.data(), cBytes),
          "poison");
  else
    std::fill(r.hostOut, r.hostOut + cBytes, char(0xff));
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  variant();
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  std::vector<char> got(cBytes), sent(cBytes);
  check(ctx, overlap_memcpy(ctx, 0, -1, got.data(), r.c, cBytes), "download");
  if (r.nccl)
    check(ctx, overlap_memcpy(ctx, 0, -1, sent.data(), r.ncclOut, cBytes),
          "download");
  check(ctx, overlap_context_synchronize(ctx), "synchronize");
  if (!r.nccl)
    std::copy(r.hostOut, r.hostOut + cBytes, sent.begin());
  // One rank: the all-reduce (or the copy) delivers C exactly.
  if (sent != got)
    return "the collective's output differs from C";
  std::mt19937_64 rng(seed);
  const double tol = r.dtype == OVERLAP_F32   ? 1e-4
                     : r.dtype == OVERLAP_F16 ? 4e-3
                                              : 2e-2;
  for (int sample = 0; sample < 64; ++sample) {
    int64_t i = int64_t(rng() % uint64_t(r.s.m));
    int64_t j = int64_t(rng() % uint64_t(r.s.n));
    double ref = elementAt(hostC0, r.dtype, size_t(i * r.s.n + j));
    for (int64_t p = 0; p < r.s.k; ++p)
      ref += double(elementAt(hostA, r.dtype, size_t(i * r.s.k + p))) *
             elementAt(hostB, r.dtype, size_t(p * r.s.n + j));
    double value = elementAt(got, r.dtype, size_t(i * r.s.n + j));
    double bound = tol * (1.0 + std::abs(ref));
    if (!(std::abs(value - ref) <= bound))
      return "C(" + std::to_string(i) + ", " + std::to_string(j) +
             ") = " + std::to_string(value) + ", reference " +
             std::to_string(ref);
  }
  return "";
}

struct Row {
  Shape s;
  size_t bytes;
  size_t tiles;
  double gemm, comm, serial, overlapped, ideal, predicted;
  std::string check;
};

} // namespace

int main(int argc, char **argv) {
  Args args;
  if (!args.parse(argc, argv,
                  {"--shapes", "--dtype", "--leg", "--ranks", "--profile",
                   "--strategy", "--tiles", "--warmup", "--iters",
                   "--input-sets", "--csv"},
                  {"--help"}) ||
      args.has("--help")) {
    std::fputs(usage, args.has("--help") ? stdout : stderr);
    return args.has("--help") ? 0 : 2;
  }
  std::vector<Shape> shapes;
  if (args.has("--shapes") ? !parseShapes(args.get("--shapes", ""), shapes)
                           : (shapes = defaultShapes(), false)) {
    std::fputs("error: --shapes wants MxNxK[,MxNxK...]\n", stderr);
    return 2;
  }
  std::optional<overlap_dtype> dtype = parseDtype(args.get("--dtype", "f16"));
  const std::string leg = args.get("--leg", "copy-engine");
  if (!dtype || (leg != "copy-engine" && leg != "nccl")) {
    std::fputs("error: bad --dtype or --leg\n", stderr);
    return 2;
  }
  const int warmup = int(args.getInt("--warmup", 5));
  const int iters = int(args.getInt("--iters", 20));
  const int inputSets = int(args.getInt("--input-sets", 3));
  const int64_t uniformTiles = args.getInt("--tiles", 4);
  const std::string strategy = args.get("--strategy", "auto");

  std::optional<planner::Profile> profile;
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
    profile = std::move(*loaded);
  }
  requireDevice("overlap-bench");

  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  overlap_context *ctx = nullptr;
  check(nullptr, overlap_cuda_context_create_single(0, &opts, &ctx),
        "overlap_cuda_context_create_single");
  const int64_t ranks =
      leg == "nccl" ? overlap_context_size(ctx) : args.getInt("--ranks", 8);
  const size_t elt = overlap_dtype_size(*dtype);
  const planner::DType plannerType = *dtype == OVERLAP_F16 ? planner::DType::F16
                                     : *dtype == OVERLAP_BF16
                                         ? planner::DType::BF16
                                         : planner::DType::F32;
  cudaDeviceProp prop;
  checkCuda(cudaGetDeviceProperties(&prop, overlap_cuda_device(ctx)),
            "cudaGetDeviceProperties");

  std::printf("# overlap-bench on %s, dtype %s, all-reduce over %lld "
              "rank(s)\n",
              prop.name, args.get("--dtype", "f16").c_str(), (long long)ranks);
  if (leg == "copy-engine")
    std::printf("# leg copy-engine: each tile's wire bytes (ring factor %.3f x "
                "tile bytes) copied device -> pinned host; a stand-in for a "
                "network link\n",
                planner::ringFactor(planner::Collective::AllReduce, ranks));
  else
    std::printf("# leg nccl: ncclAllReduce on the world communicator "
                "(%lld rank(s))\n",
                (long long)ranks);
  std::printf(
      "# plan: %s; %d warm-up + %d timed runs, median over %d input "
      "set(s); times in us\n",
      profile ? ("strategy " + strategy + ", profile " + profile->name).c_str()
              : ("uniform " + std::to_string(uniformTiles) +
                 " tiles, no profile (no prediction)")
                    .c_str(),
      warmup, iters, inputSets);
  std::printf("#%7s %7s %7s %12s %5s %10s %10s %10s %10s %10s %10s %7s %6s "
              "%8s %s\n",
              "M", "N", "K", "size(B)", "tiles", "gemm", "comm", "serial",
              "overlap", "ideal", "predicted", "speedup", "eta", "pred.err",
              "check");

  std::vector<Row> rows;
  int64_t keyBase = 1000;
  for (const Shape &s : shapes) {
    Row row{s, size_t(s.m * s.n) * elt, 0, 0, 0, 0, 0, 0, NAN, "ok"};
    Runner r{ctx,
             *dtype,
             elt,
             s,
             leg == "nccl",
             planner::ringFactor(planner::Collective::AllReduce, ranks),
             {}};
    r.key = (keyBase += 2);
    // The plan: the Planner's tiles and prediction, or uniform tiles.
    std::string planNote;
    if (profile) {
      planner::MatmulProblem problem{
          planner::Collective::AllReduce, s.m, s.n, s.k, plannerType, ranks};
      auto plan = planner::planTiles(*profile, problem, strategy);
      if (plan) {
        r.tiles = plan->tiles;
        row.predicted = plan->predictedUs;
      } else {
        planNote = llvm::toString(plan.takeError());
      }
    }
    if (r.tiles.empty()) {
      int64_t t = std::min(uniformTiles, s.m);
      for (int64_t i = 0; i < t; ++i)
        r.tiles.push_back(s.m / t + (i < s.m % t ? 1 : 0));
    }
    row.tiles = r.tiles.size();
    const size_t aBytes = size_t(s.m * s.k) * elt,
                 bBytes = size_t(s.k * s.n) * elt;
    const size_t cBytes = row.bytes;
    check(ctx, overlap_alloc(ctx, aBytes, &r.a), "alloc A");
    check(ctx, overlap_alloc(ctx, bBytes, &r.b), "alloc B");
    check(ctx, overlap_alloc(ctx, cBytes, &r.c), "alloc C");
    check(ctx, overlap_alloc(ctx, cBytes, &r.c0), "alloc C0");
    if (r.nccl) {
      check(ctx, overlap_alloc(ctx, cBytes, &r.ncclOut), "alloc");
    } else {
      size_t surplus =
          size_t(std::max(0.0, r.wireFactor - 1.0) * double(cBytes)) + 64;
      checkCuda(cudaMallocHost(reinterpret_cast<void **>(&r.hostOut), cBytes),
                "cudaMallocHost");
      checkCuda(
          cudaMallocHost(reinterpret_cast<void **>(&r.hostExtra), surplus),
          "cudaMallocHost");
      check(ctx, overlap_alloc(ctx, surplus, &r.extra), "alloc");
    }
    std::vector<double> gemmT, commT, serialT, overlapT;
    for (int set = 0; set < inputSets && row.check == "ok"; ++set) {
      uint64_t seed =
          uint64_t(set) * 7919 + uint64_t(s.m * 31 + s.n * 17 + s.k);
      std::vector<char> hostA = randomElements(*dtype, size_t(s.m * s.k), seed);
      std::vector<char> hostB =
          randomElements(*dtype, size_t(s.k * s.n), seed + 1);
      std::vector<char> hostC0 =
          randomElements(*dtype, size_t(s.m * s.n), seed + 2);
      check(ctx, overlap_memcpy(ctx, 0, -1, r.a, hostA.data(), aBytes),
            "upload");
      check(ctx, overlap_memcpy(ctx, 0, -1, r.b, hostB.data(), bBytes),
            "upload");
      check(ctx, overlap_memcpy(ctx, 0, -1, r.c0, hostC0.data(), cBytes),
            "upload");
      check(ctx, overlap_context_synchronize(ctx), "synchronize");
      for (auto [name, fn] : {std::pair<const char *, std::function<void()>>{
                                  "serial", [&] { r.serial(); }},
                              {"overlapped", [&] { r.overlapped(); }}}) {
        std::string bad = checkRun(r, fn, hostA, hostB, hostC0, seed + 3);
        if (!bad.empty()) {
          row.check = std::string("FAIL ") + name + ": " + bad;
          break;
        }
      }
      gemmT.push_back(
          timeUs(ctx, 0, 0, warmup, iters, [&] { r.gemm(0, s.m, -1); }));
      commT.push_back(
          timeUs(ctx, 1, 1, warmup, iters, [&] { r.comm(0, s.m, -1); }));
      serialT.push_back(timeUs(ctx, 0, 1, warmup, iters, [&] { r.serial(); }));
      overlapT.push_back(
          timeUs(ctx, 0, 1, warmup, iters, [&] { r.overlapped(); }));
    }
    row.gemm = median(gemmT);
    row.comm = median(commT);
    row.serial = median(serialT);
    row.overlapped = median(overlapT);
    row.ideal = std::max(row.gemm, row.comm);
    double eta = (row.serial - row.overlapped) / (row.serial - row.ideal);
    double err = (row.predicted - row.overlapped) / row.overlapped;
    std::printf(" %7lld %7lld %7lld %12zu %5zu %10.1f %10.1f %10.1f %10.1f "
                "%10.1f %10.1f %7.3f %6.3f %7.1f%% %s\n",
                (long long)s.m, (long long)s.n, (long long)s.k, row.bytes,
                row.tiles, row.gemm, row.comm, row.serial, row.overlapped,
                row.ideal, row.predicted, row.serial / row.overlapped, eta,
                100.0 * err, row.check.c_str());
    if (!planNote.empty())
      std::printf("#   no plan from the profile (%s): uniform tiles\n",
                  planNote.c_str());
    std::fflush(stdout);
    rows.push_back(row);
    overlap_free(ctx, r.a);
    overlap_free(ctx, r.b);
    overlap_free(ctx, r.c);
    overlap_free(ctx, r.c0);
    overlap_free(ctx, r.ncclOut);
    overlap_free(ctx, r.extra);
    cudaFreeHost(r.hostOut);
    cudaFreeHost(r.hostExtra);
  }

  // Summary: eta median and best, prediction error.
  std::vector<double> etas, errs;
  int failures = 0;
  for (const Row &row : rows) {
    failures += row.check != "ok";
    if (row.serial - row.ideal > 0)
      etas.push_back((row.serial - row.overlapped) / (row.serial - row.ideal));
    if (!std::isnan(row.predicted))
      errs.push_back(std::abs(row.predicted - row.overlapped) / row.overlapped);
  }
  std::printf(
      "# eta: median %.3f, best %.3f (%zu shapes); |prediction "
      "error|: median %.1f%%, max %.1f%%; correctness failures: %d\n",
      median(etas),
      etas.empty() ? NAN : *std::max_element(etas.begin(), etas.end()),
      etas.size(), 100.0 * median(errs),
      errs.empty() ? NAN : 100.0 * *std::max_element(errs.begin(), errs.end()),
      failures);

  if (args.has("--csv")) {
    std::ofstream csv(args.get("--csv", ""));
    csv << "leg,ranks,dtype,M,N,K,size_bytes,tiles,gemm_us,comm_us,serial_us,"
           "overlapped_us,ideal_us,predicted_us,speedup,eta,prediction_error,"
           "check\n";
    for (const Row &row : rows)
      csv << leg << ',' << ranks << ',' << args.get("--dtype", "f16") << ','
          << row.s.m << ',' << row.s.n << ',' << row.s.k << ',' << row.bytes
          << ',' << row.tiles << ',' << row.gemm << ',' << row.comm << ','
          << row.serial << ',' << row.overlapped << ',' << row.ideal << ','
          << row.predicted << ',' << row.serial / row.overlapped << ','
          << (row.serial - row.overlapped) / (row.serial - row.ideal) << ','
          << (row.predicted - row.overlapped) / row.overlapped << ",\""
          << row.check << "\"\n";
    if (!csv)
      std::fprintf(stderr, "error: cannot write %s\n",
                   args.get("--csv", "").c_str());
  }
  overlap_status final = overlap_cuda_context_destroy(ctx);
  return failures || final != OVERLAP_SUCCESS ? 1 : 0;
}
