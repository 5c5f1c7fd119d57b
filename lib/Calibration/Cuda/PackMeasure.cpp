//===- PackMeasure.cpp - The pack kernel's bandwidth on the GPU -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/PackMeasure.h"

#include "overlap/Calibration/MeasuringContext.h"
#include "overlap/Calibration/Timing.h"

#include "CudaCheck.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

using namespace overlap;
using namespace overlap::calibration;

static const int compute = OVERLAP_STREAM_COMPUTE;

static std::vector<char> randomBytes(size_t n, uint64_t seed) {
  std::vector<char> out(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&out[i], &v, std::min<size_t>(8, n - i));
  }
  return out;
}

static std::vector<char> complement(std::vector<char> v) {
  for (char &c : v)
    c = char(~c);
  return v;
}

namespace {

/// Device buffers of one block and the calls the pack benchmark times, all
/// on the compute stream.
struct PackRunner {
  overlap_context *ctx;
  PackBlock b;
  cudaStream_t stream;
  void *strided = nullptr;  // the block, rows strideBytes apart
  void *packed = nullptr;   // pack's output, unpack's input
  void *unpacked = nullptr; // unpack's output, shaped like `strided`
  void *copied = nullptr;   // the copies' output

  int64_t n2() const { return b.rowBytes / b.elemBytes; }
  int64_t s1() const { return b.strideBytes / b.elemBytes; }
  void allocate() {
    check(ctx, overlap_alloc(ctx, size_t(b.footprint()), &strided), "alloc");
    check(ctx, overlap_alloc(ctx, size_t(b.footprint()), &unpacked), "alloc");
    check(ctx, overlap_alloc(ctx, size_t(b.bytes()), &packed), "alloc");
    check(ctx, overlap_alloc(ctx, size_t(b.bytes()), &copied), "alloc");
  }
  void release() {
    for (void *p : {strided, packed, unpacked, copied})
      overlap_free(ctx, p);
  }
  void pack() {
    check(ctx,
          overlap_pack(ctx, compute, -1, b.elemBytes, strided, 1, b.rows, n2(),
                       b.rows * s1(), s1(), packed),
          "overlap_pack");
  }
  void unpack() {
    check(ctx,
          overlap_unpack(ctx, compute, -1, b.elemBytes, packed, 1, b.rows, n2(),
                         b.rows * s1(), s1(), unpacked),
          "overlap_unpack");
  }
  void copy2d() {
    checkCuda(cudaMemcpy2DAsync(copied, size_t(b.rowBytes), strided,
                                size_t(b.strideBytes), size_t(b.rowBytes),
                                size_t(b.rows), cudaMemcpyDeviceToDevice,
                                stream),
              "cudaMemcpy2DAsync");
  }
  void d2d() {
    checkCuda(cudaMemcpyAsync(copied, packed, size_t(b.bytes()),
                              cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync");
  }
  void upload(void *dst, const std::vector<char> &src) {
    check(ctx, overlap_memcpy(ctx, compute, -1, dst, src.data(), src.size()),
          "upload");
  }
  std::vector<char> download(const void *src, size_t n) {
    std::vector<char> out(n);
    check(ctx, overlap_memcpy(ctx, compute, -1, out.data(), src, n),
          "download");
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
    return out;
  }
};

/// Packs and unpacks random bytes once and compares with the host
/// reference; returns an empty string or what failed. Leaves the packed
/// block in `p.packed`.
std::string checkPackUnpack(PackRunner &p, uint64_t seed) {
  const std::vector<char> source = randomBytes(size_t(p.b.footprint()), seed);
  std::vector<char> expected(size_t(p.b.bytes()));
  hostPack(p.b, source.data(), expected.data());
  p.upload(p.strided, source);
  p.upload(p.packed, complement(expected));
  p.pack();
  if (p.download(p.packed, expected.size()) != expected)
    return "FAIL pack";
  // Unpack: the rows become the packed bytes, the gaps stay as they were.
  std::vector<char> before = complement(source), after = before;
  hostUnpack(p.b, expected.data(), after.data());
  p.upload(p.unpacked, before);
  p.unpack();
  if (p.download(p.unpacked, after.size()) != after)
    return "FAIL unpack";
  return "";
}

} // namespace

PackTimes calibration::measurePackBlock(overlap_context *ctx,
                                        const PackBlock &block, uint64_t seed,
                                        int warmup, int iters) {
  PackRunner p{ctx, block,
               static_cast<cudaStream_t>(overlap_cuda_stream(ctx, compute))};
  const PackBlock &b = p.b;
  PackTimes times;
  p.allocate();
  times.check = checkPackUnpack(p, seed);
  // cudaMemcpy2DAsync is timed as the reference: check that it copies the
  // same block.
  std::vector<char> expected = p.download(p.packed, size_t(b.bytes()));
  p.upload(p.copied, complement(expected));
  p.copy2d();
  if (times.check.empty() && p.download(p.copied, expected.size()) != expected)
    times.check = "FAIL memcpy2D";
  if (times.check.empty())
    times.check = "ok";

  times.packUs =
      timeUs(ctx, compute, compute, warmup, iters, [&] { p.pack(); });
  times.unpackUs =
      timeUs(ctx, compute, compute, warmup, iters, [&] { p.unpack(); });
  times.copy2dUs =
      timeUs(ctx, compute, compute, warmup, iters, [&] { p.copy2d(); });
  times.d2dUs = timeUs(ctx, compute, compute, warmup, iters, [&] { p.d2d(); });
  p.release();
  return times;
}
