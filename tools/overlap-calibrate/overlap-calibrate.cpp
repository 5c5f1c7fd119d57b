//===- overlap-calibrate.cpp - Measure a GPU, write a profile ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Times cuBLASLt GEMMs (through overlap_gemm) over m for given N, K and
// dtype, also as the strided batches of G matrices that reduce-scatter and
// all-gather tiles run (curves with "batch": G), and the communication leg
// over buffer sizes, then writes a profile the Planner reads
// (docs/profiles.md): monotone tables, the device's name and SM count, and
// contention factors measured by running both legs at once. The profile is
// parsed back with the Planner before it is written.
//
// Legs: `copy-engine` (one process, one GPU: for a collective of "size" S
// over R ranks, the bytes one rank puts on the wire, ringWireBytes(R, S),
// copied device -> pinned host; a stand-in for a network link, recorded as
// such in the profile). `sm-copy` (one process: the same bytes copied
// device -> device by a kernel of comm_sms CTAs on the comm stream, so
// that the contention factors see a leg that takes SMs). `nccl` (one
// process per GPU, at least 2, started by
// mpirun, srun or torchrun): NCCL's all-reduce, reduce-scatter and
// all-gather on the world over sizes S (nccl-tests' size), curves for R =
// the world size. Only rank 0 prints and writes the profile.
//
// This file reads the command line and prints; lib/Calibration measures
// (Calibrate.h) and writes the profile (ProfileWriter.h).
//
//   overlap-calibrate --nk 8192x3072,4096x1024 --dtype f16 --ranks 8 \
//       --out p.json
//   mpirun -np 8 overlap-calibrate --leg nccl --dtype f16 --out p.json
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Calibrate.h"
#include "overlap/Calibration/StandIn.h"

#include "llvm/Support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

using namespace overlap;
using namespace overlap::calibration;

static const char *synopsis =
    "usage: overlap-calibrate [options] [CUDA backend options]\n";

static const char *about =
    "\nMeasures GEMMs and the communication leg on a GPU and writes a\n"
    "Planner profile: one GEMM curve per (N, K), and with --batched-gemms on\n"
    "one more per (N, K) for strided batches of R matrices (\"batch\": R).\n"
    "--leg copy-engine runs in one process and stands in for R ranks with\n"
    "the copy engines (no SM); --leg sm-copy moves the same bytes with a\n"
    "copy kernel of comm_sms CTAs (every SM when comm_sms is 0). --leg nccl\n"
    "times NCCL on the world: one process per GPU, at least 2, e.g. mpirun\n"
    "-np 8 overlap-calibrate --leg nccl ... (or srun, torchrun --no-python);\n"
    "R is the world size, every rank must get the same arguments, rank 0\n"
    "writes the profile.\n\n";

/// Its own flags (overlap/Support/Flags.h); measuringFlags and the CUDA
/// backend's follow (parseMeasuringArgs).
static std::vector<flags::Flag> table() {
  return {
      {"--nk", "NxK[,NxK...]",
       "the GEMM curves (default: the (N, K) pairs of overlap-bench's sweep)"},
      {"--ranks", "R", "ranks the stand-in legs stand in for (default 8)"},
      {"--max-m", "M", "largest M of the GEMM curves (default 8192)"},
      {"--step", "S", "step of M (default 128)"},
      {"--max-bytes", "B",
       "largest message of the leg (default 256 MiB; from 64 KiB, and at "
       "M = 128 rows of each --nk pair, where the per-call latency is fitted)"},
      {"--name", "NAME", "the profile's name (default calibrated)"},
      {"--batched-gemms", "on|off",
       "also the batched GEMM curves (default on)"},
      {"--out", "FILE", "the profile written (default calibrated.json)"},
  };
}

[[noreturn]] static void usageError(const std::string &message) {
  calibration::usageError("overlap-calibrate", message);
}

int main(int argc, char **argv) {
  Args args = parseMeasuringArgs("overlap-calibrate", synopsis, about, table(),
                                 argc, argv);
  const CudaKnobs knobs = readCudaKnobs(args);
  CalibrateOptions o;
  auto nks = parseNkPairs(args.get(
      "--nk", "8192x3072,4096x1024,8192x8192,4096x16384,8192x1024,2048x12288"));
  if (!nks)
    usageError("--nk wants NxK[,NxK...], got '" + args.get("--nk", "") + "'");
  o.nks = *nks;
  o.ranks = args.getInt("--ranks", 8);
  o.maxM = args.getInt("--max-m", 8192);
  o.step = args.getInt("--step", 128);
  o.maxBytes = args.getInt("--max-bytes", int64_t(256) << 20);
  o.warmup = int(args.getInt("--warmup", 5));
  o.iters = int(args.getInt("--iters", 20));
  o.name = args.get("--name", "calibrated");
  const std::string dtypeName = args.get("--dtype", "f16");
  std::optional<overlap_dtype> dtype = parseDtype(dtypeName);
  if (!dtype)
    usageError("--dtype: expected f16, bf16 or f32, got '" + dtypeName + "'");
  o.dtype = *dtype;
  const std::string leg = args.get("--leg", "copy-engine");
  const std::optional<Leg> parsedLeg = parseLeg(leg);
  if (!parsedLeg)
    usageError(badLegMessage(leg));
  o.nccl = parsedLeg == Leg::Nccl;
  const std::string batched = args.get("--batched-gemms", "on");
  if (batched != "on" && batched != "off")
    usageError("--batched-gemms: expected on or off, got '" + batched + "'");
  o.batchedGemms = batched == "on";
  if (!args.error().empty())
    usageError(args.error());
  if (!o.nccl && o.ranks < 2)
    usageError("the " + leg +
               " leg needs --ranks >= 2 (one rank puts nothing on the wire)");
  const overlap_cuda_options opts =
      measuringOptions(knobs, std::nullopt, parsedLeg);

  DeviceInfo device;
  overlap_context *ctx = nullptr;
  if (o.nccl) {
    ctx = createLaunchedContext("overlap-calibrate", opts, device);
    agreeOnArguments(ctx, argc, argv, {"--out"}, "");
    printOnlyOnRankZero(ctx);
    if (overlap_context_size(ctx) < 2) {
      printDiagnostic("error",
                      "the nccl leg times collectives between processes: "
                      "start 2 or more, one per GPU (e.g. mpirun -np 8 "
                      "overlap-calibrate --leg nccl ...); this one is alone\n");
      leave(2);
    }
    o.ranks = worldRanks(ctx, args.has("--ranks"), o.ranks);
  } else {
    ctx = createMeasuringContext("overlap-calibrate", opts, device);
  }
  std::printf("# runtime: %s\n", runtimeDescription(ctx).c_str());
  // The profile records the SMs its GEMMs left to communication, as the
  // runtime resolved them.
  o.commSms = overlap_cuda_comm_sms(ctx);
  if (parsedLeg == Leg::SmCopy) {
    o.smCopyCtas = smCopyCtas(*o.commSms, device.smCount);
    std::printf("# leg sm-copy: a copy kernel of %d CTAs on the comm stream\n",
                o.smCopyCtas);
  }

  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  CalibrateProgress progress;
  progress.gemm = [](const GemmPoint &p) {
    std::printf("gemm  n %6lld  k %6lld  batch %3lld  m %6lld  %10.2f us\n",
                (long long)p.n, (long long)p.k, (long long)p.batch,
                (long long)p.rows, p.us);
    std::fflush(stdout);
  };
  progress.comm = [](const CommPoint &p) {
    std::printf("%-14s size %10lld  wire %10lld  %10.2f us\n",
                planner::toString(p.collective).str().c_str(),
                (long long)p.bytes, (long long)p.wire, p.us);
    std::fflush(stdout);
  };
  CalibrationResult result = calibrate(ctx, device, o, date, progress);
  std::printf("contention: compute %.3f, comm %.3f\n", result.computeContention,
              result.commContention);
  for (const MeasuredComm &c : result.comms)
    std::printf("latency %-14s %.2f us (fitted from M = %lld rows up)\n",
                planner::toString(c.collective).str().c_str(), c.latencyUs,
                (long long)o.smallestRows);
  if (knobs.gemmAutotune)
    std::printf("GEMM algorithms (--gemm-autotune %d):\n%s\n",
                int(knobs.gemmAutotune), gemmAlgorithmReport(ctx).c_str());

  const std::string out = args.get("--out", "calibrated.json");
  int status = 0;
  if (overlap_context_rank(ctx) == 0) { // one profile for the job
    if (llvm::Error e = checkProfileLoads(result)) {
      printDiagnostic("internal error", "the profile does not load: %s\n",
                      llvm::toString(std::move(e)).c_str());
      status = 1;
    } else {
      std::ofstream file(out);
      file << profileJson(result);
      file.close(); // a write error of the buffered bytes shows here
      if (!file) {
        printDiagnostic("error", "cannot write %s\n", out.c_str());
        status = 1;
      } else {
        std::printf("wrote %s\n", out.c_str());
      }
    }
  }
  return finish(ctx, "", status, [](std::ostream &) {});
}
