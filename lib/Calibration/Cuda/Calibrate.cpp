//===- Calibrate.cpp - Measure a GPU for a Planner profile -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Calibrate.h"

#include "overlap/Calibration/RankProblem.h"
#include "overlap/Calibration/Timing.h"
#include "overlap/Planner/Ring.h"

#include "CudaCheck.h"
#include "SmCopy.h"

#include <algorithm>
#include <tuple>

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;

static const int compute = OVERLAP_STREAM_COMPUTE, comm = OVERLAP_STREAM_COMM;

namespace {

/// The buffers of a calibration and the calls it times.
class Calibrator {
public:
  Calibrator(overlap_context *ctx, const CalibrateOptions &o)
      : ctx(ctx), o(o), elt(elementBytes(o.dtype)) {}
  ~Calibrator() {
    if (pinned)
      cudaFreeHost(pinned);
    for (void *p : {src, dst, a, b, c})
      overlap_free(ctx, p);
  }
  Calibrator(const Calibrator &) = delete;
  Calibrator &operator=(const Calibrator &) = delete;

  void allocate();
  std::vector<MeasuredGemm> gemmCurves(const CalibrateProgress &progress);
  std::vector<MeasuredComm> commCurves(const CalibrateProgress &progress);
  /// (compute, comm) contention factors.
  std::pair<double, double> contention();

private:
  /// A strided batch of `batch` matrices of m / batch rows sharing B (one
  /// matrix of m rows when batch is 1), packed one after another.
  void gemm(int64_t batch, int64_t m, int64_t n, int64_t k);
  /// The leg's collective of nccl-tests size `size` (or its stand-in) on
  /// the comm stream; returns what one rank puts on the wire.
  int64_t communicate(Collective coll, int64_t size);
  /// The bytes `coll` of size `size` moves on this leg.
  int64_t movedBytes(Collective coll, int64_t size) const;
  /// A stand-in's copy of `bytes` from `src` to its far side, on the comm
  /// stream.
  void standInCopy(size_t bytes);

  overlap_context *ctx;
  const CalibrateOptions &o;
  size_t elt;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  void *src = nullptr, *dst = nullptr, *pinned = nullptr;
};

} // namespace

void Calibrator::allocate() {
  int64_t maxN = 0, maxK = 0;
  for (auto [n, k] : o.nks)
    maxN = std::max(maxN, n), maxK = std::max(maxK, k);
  check(ctx, overlap_alloc(ctx, size_t(o.maxM * maxK) * elt, &a), "alloc A");
  check(ctx, overlap_alloc(ctx, size_t(maxK * maxN) * elt, &b), "alloc B");
  check(ctx, overlap_alloc(ctx, size_t(o.maxM * maxN) * elt, &c), "alloc C");
  std::vector<char> host = inputElements(o.dtype, 1, size_t(o.maxM * maxK));
  check(ctx, overlap_memcpy(ctx, compute, -1, a, host.data(), host.size()),
        "upload");
  host = inputElements(o.dtype, 2, size_t(maxK * maxN));
  check(ctx, overlap_memcpy(ctx, compute, -1, b, host.data(), host.size()),
        "upload");
  host = inputElements(o.dtype, 3, size_t(o.maxM * maxN));
  check(ctx, overlap_memcpy(ctx, compute, -1, c, host.data(), host.size()),
        "upload");
  check(ctx, overlap_context_synchronize(ctx), "synchronize");

  // The stand-in legs copy up to the ring's bytes of the largest size (at
  // most twice it): to pinned host memory (copy-engine) or device memory
  // (sm-copy); the nccl leg moves the largest size in and out.
  const size_t maxWire = size_t(2 * o.maxBytes) + 64;
  if (o.nccl) {
    check(ctx, overlap_alloc(ctx, size_t(o.maxBytes), &src), "alloc");
    check(ctx, overlap_alloc(ctx, size_t(o.maxBytes), &dst), "alloc");
    // Values in [-1, 1) that differ between ranks: sums stay finite.
    host =
        inputElements(o.dtype, mix64(uint64_t(overlap_context_rank(ctx)) + 4),
                      size_t(o.maxBytes) / elt);
    check(ctx, overlap_memcpy(ctx, comm, -1, src, host.data(), host.size()),
          "upload");
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
  } else if (o.smCopyCtas > 0) {
    check(ctx, overlap_alloc(ctx, maxWire, &src), "alloc");
    check(ctx, overlap_alloc(ctx, maxWire, &dst), "alloc");
  } else {
    check(ctx, overlap_alloc(ctx, maxWire, &src), "alloc");
    checkCuda(cudaMallocHost(&pinned, maxWire), "cudaMallocHost");
  }
}

void Calibrator::standInCopy(size_t bytes) {
  if (o.smCopyCtas > 0)
    smCopy(ctx, comm, dst, src, bytes, o.smCopyCtas);
  else
    check(ctx, overlap_memcpy(ctx, comm, -1, pinned, src, bytes),
          "overlap_memcpy");
}

void Calibrator::gemm(int64_t batch, int64_t m, int64_t n, int64_t k) {
  const int64_t rows = m / batch;
  const int64_t strideA = batch == 1 ? 0 : rows * k;
  const int64_t strideC = batch == 1 ? 0 : rows * n;
  check(ctx,
        overlap_gemm(ctx, compute, -1, batch, rows, n, k, o.dtype, a, k,
                     strideA, b, n, 0, o.dtype, c, n, strideC, 0),
        "overlap_gemm");
}

std::vector<MeasuredGemm>
Calibrator::gemmCurves(const CalibrateProgress &progress) {
  std::vector<MeasuredGemm> curves;
  std::vector<int64_t> batches = {1};
  if (o.batchedGemms && o.ranks > 1)
    batches.push_back(o.ranks);
  for (int64_t batch : batches) {
    for (auto [n, k] : o.nks) {
      MeasuredGemm g;
      g.n = n;
      g.k = k;
      g.dtype = plannerDtype(o.dtype);
      g.batch = batch;
      for (int64_t m : gemmCurveRows(o.step, o.maxM, batch)) {
        g.rows.push_back(double(m));
        g.us.push_back(timeUs(ctx, compute, compute, o.warmup, o.iters,
                              [&, n = n, k = k] { gemm(batch, m, n, k); }));
        if (progress.gemm)
          progress.gemm({n, k, batch, m, g.us.back()});
      }
      if (!g.rows.empty())
        curves.push_back(std::move(g));
    }
  }
  return curves;
}

int64_t Calibrator::movedBytes(Collective coll, int64_t size) const {
  return o.nccl ? ncclMovedBytes(coll, size, int64_t(elt), o.ranks) : size;
}

int64_t Calibrator::communicate(Collective coll, int64_t size) {
  if (!o.nccl) {
    const int64_t wire = planner::ringWireBytes(coll, o.ranks, size);
    standInCopy(size_t(wire));
    return wire;
  }
  const int64_t moved = movedBytes(coll, size);
  // All-reduce counts the whole buffer, the others one rank's block.
  const int64_t count =
      moved / int64_t(elt) / (coll == Collective::AllReduce ? 1 : o.ranks);
  enqueueCollective(ctx, -1, coll, o.dtype, src, dst, count);
  return planner::ringWireBytes(coll, o.ranks, moved);
}

std::vector<MeasuredComm>
Calibrator::commCurves(const CalibrateProgress &progress) {
  std::vector<MeasuredComm> curves;
  for (Collective coll : {Collective::AllReduce, Collective::ReduceScatter,
                          Collective::AllGather, Collective::AllToAll}) {
    MeasuredComm curve;
    curve.collective = coll;
    curve.ranks = o.ranks;
    curve.note =
        o.nccl ? "NCCL " + planner::toString(coll).str() + " over " +
                     std::to_string(o.ranks) +
                     " ranks (one process per GPU), nccl-tests size; median "
                     "over runs of the slowest rank's time"
        : o.smCopyCtas > 0
            ? "sm-copy stand-in: ringFactor x size bytes device -> device "
              "by a copy kernel of " +
                  std::to_string(o.smCopyCtas) + " CTAs on the comm stream"
            : "copy-engine stand-in: ringFactor x size bytes device -> "
              "pinned host";
    // The smallest tiles the sweep prices (M = smallestRows rows of each
    // (N, K)) are measured exactly, and the per-call latency is fitted from
    // them up: it is most of their time.
    const std::vector<int64_t> smallest =
        sweepCommSizes(coll, o.nks, o.smallestRows, int64_t(elt));
    for (int64_t size : commCurveSizes(o.maxBytes, smallest)) {
      const int64_t moved = movedBytes(coll, size);
      if (moved <= 0 ||
          (!curve.bytes.empty() && double(moved) <= curve.bytes.back()))
        continue; // too small to split over the ranks
      int64_t wire = 0;
      curve.bytes.push_back(double(moved));
      curve.us.push_back(timeUs(ctx, comm, comm, o.warmup, o.iters,
                                [&] { wire = communicate(coll, size); }));
      if (progress.comm)
        progress.comm({coll, moved, wire, curve.us.back()});
    }
    if (!smallest.empty())
      curve.latencyUs = fitCommLatency(curve.bytes, curve.us,
                                       double(movedBytes(coll, smallest[0])));
    curves.push_back(std::move(curve));
  }
  return curves;
}

std::pair<double, double> Calibrator::contention() {
  // A mid-size GEMM and communication (a copy, or an NCCL all-reduce),
  // alone and at the same time. Each "both" run starts on the other
  // stream, so that over several ranks its barrier precedes both.
  const int64_t midM = std::max<int64_t>(o.step, o.maxM / 2 / o.step * o.step);
  const int64_t midN = o.nks[0].first, midK = o.nks[0].second;
  auto midGemm = [&] { gemm(1, midM, midN, midK); };
  auto midComm = [&] {
    if (o.nccl)
      communicate(Collective::AllReduce, o.maxBytes / 4);
    else
      standInCopy(size_t(o.maxBytes / 4));
  };
  double gemmAlone = timeUs(ctx, compute, compute, o.warmup, o.iters, midGemm);
  double commAlone = timeUs(ctx, comm, comm, o.warmup, o.iters, midComm);
  double gemmBoth = timeUs(ctx, comm, compute, o.warmup, o.iters, [&] {
    midComm();
    midGemm();
  });
  double commBoth = timeUs(ctx, compute, comm, o.warmup, o.iters, [&] {
    midGemm();
    midComm();
  });
  return {contentionFactor(gemmBoth, gemmAlone),
          contentionFactor(commBoth, commAlone)};
}

CalibrationResult calibration::calibrate(overlap_context *ctx,
                                         const DeviceInfo &device,
                                         const CalibrateOptions &o,
                                         const std::string &date,
                                         const CalibrateProgress &progress) {
  Calibrator cal(ctx, o);
  cal.allocate();
  CalibrationResult r;
  r.name = o.name;
  r.deviceName = device.name;
  r.smCount = device.smCount;
  if (o.commSms && *o.commSms < device.smCount)
    r.commSms = o.commSms;
  r.description = "overlap-calibrate on " +
                  (o.nccl ? std::to_string(o.ranks) + " x " : "") +
                  device.name + ", " + date;
  r.provenance =
      o.nccl ? "measured (overlap-calibrate, leg nccl: NCCL collectives over " +
                   std::to_string(o.ranks) +
                   " ranks, one process per GPU; each run the slowest rank's "
                   "time)"
      : o.smCopyCtas > 0
          ? "measured (overlap-calibrate, leg sm-copy: a device->device copy "
            "kernel of " +
                std::to_string(o.smCopyCtas) +
                " CTAs on the comm stream, a stand-in for the network)"
          : "measured (overlap-calibrate, leg copy-engine: a "
            "device->pinned-host stand-in for the network)";
  r.provenance += "; runtime: " + runtimeDescription(ctx);
  r.gemms = cal.gemmCurves(progress);
  r.comms = cal.commCurves(progress);
  // After the curves: a group that fell back on the way says so here.
  r.zeroSmAllGather = overlap_cuda_zero_sm_all_gather(ctx) == 1;
  std::tie(r.computeContention, r.commContention) = cal.contention();
  return r;
}
