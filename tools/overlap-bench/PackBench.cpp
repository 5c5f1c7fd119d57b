//===- PackBench.cpp - overlap-bench --pack ---------------------*- C++ -*-===//
//
// The pack kernel's bandwidth against cudaMemcpy2DAsync and a contiguous
// device-to-device copy, every block checked against the host reference.
//
//===----------------------------------------------------------------------===//

#include "PackBench.h"
#include "BenchLayout.h"
#include "BenchRanks.h"
#include "overlap/Planner/TilePlanner.h"
#include "llvm/Support/Error.h"
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <tuple>

using namespace overlap;
using namespace overlap::bench;

namespace {

const int compute = OVERLAP_STREAM_COMPUTE;

//===----------------------------------------------------------------------===//
// --pack: the pack kernel's bandwidth
//===----------------------------------------------------------------------===//

struct PackRow {
  PackBlock block;
  double packUs, unpackUs, copy2dUs, d2dUs;
  std::string check;
};

/// Payload bandwidth: packed bytes / time, in GB/s (1e9 B/s).
double gbps(const PackBlock &b, double us) {
  return double(b.bytes()) / (us * 1e3);
}

std::vector<char> randomBytes(size_t n, uint64_t seed) {
  std::vector<char> out(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&out[i], &v, std::min<size_t>(8, n - i));
  }
  return out;
}

std::vector<char> complement(std::vector<char> v) {
  for (char &c : v)
    c = char(~c);
  return v;
}

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
/// reference; returns an empty string or what failed. A destination starts
/// as the complement of what it must become, so that no byte left unwritten
/// can pass. Leaves the packed block in `p.packed`.
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

int overlap::bench::packBench(const Args &args, int warmup, int iters) {
  const int64_t total = args.getInt("--pack-total", int64_t(64) << 20);
  std::vector<PackBlock> blocks = defaultPackBlocks(total);
  if (args.has("--pack-shapes")) {
    std::string why;
    auto parsed = parsePackBlocks(args.get("--pack-shapes", ""), total, why);
    if (!parsed) {
      std::fprintf(stderr, "error: --pack-shapes: %s\n", why.c_str());
      return 2;
    }
    blocks = *parsed;
  }
  for (const PackBlock &b : blocks) {
    std::string why;
    if (!validPackBlock(b, why)) { // a --pack-total too large for the API
      std::fprintf(stderr, "error: --pack-total: %s\n", why.c_str());
      return 2;
    }
  }
  cudaDeviceProp prop;
  overlap_context *ctx = createMeasuringContext("overlap-bench", prop);
  auto stream = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, compute));
  std::printf("# overlap-bench --pack on %s: overlap_pack / overlap_unpack "
              "(one kernel) vs cudaMemcpy2DAsync of the same strided block "
              "and a contiguous device-to-device cudaMemcpyAsync of the same "
              "bytes\n",
              prop.name);
  std::printf("# GB/s = packed bytes / time (each byte counted once, not "
              "read + write); access = the pack kernel's word (B); %d "
              "warm-up + %d timed runs, medians\n",
              warmup, iters);
  std::printf("#%9s %7s %9s %4s %6s %11s %8s %8s %8s %8s %8s %s\n", "rows",
              "row(B)", "stride(B)", "elem", "access", "bytes", "pack",
              "unpack", "memcpy2D", "d2d", "pack/d2d", "check");

  std::vector<PackRow> rows;
  for (size_t i = 0; i < blocks.size(); ++i) {
    PackRunner p{ctx, blocks[i], stream};
    const PackBlock &b = p.b;
    PackRow row{b, 0, 0, 0, 0, ""};
    p.allocate();
    row.check = checkPackUnpack(p, 977 * i + 1);
    // cudaMemcpy2DAsync is timed as the reference: check that it copies
    // the same block.
    std::vector<char> expected = p.download(p.packed, size_t(b.bytes()));
    p.upload(p.copied, complement(expected));
    p.copy2d();
    if (row.check.empty() && p.download(p.copied, expected.size()) != expected)
      row.check = "FAIL memcpy2D";
    if (row.check.empty())
      row.check = "ok";

    row.packUs =
        timeUs(ctx, compute, compute, warmup, iters, [&] { p.pack(); });
    row.unpackUs =
        timeUs(ctx, compute, compute, warmup, iters, [&] { p.unpack(); });
    row.copy2dUs =
        timeUs(ctx, compute, compute, warmup, iters, [&] { p.copy2d(); });
    row.d2dUs = timeUs(ctx, compute, compute, warmup, iters, [&] { p.d2d(); });
    std::printf(" %9lld %7lld %9lld %4lld %6d %11lld %8.1f %8.1f %8.1f %8.1f "
                "%8.3f %s\n",
                (long long)b.rows, (long long)b.rowBytes,
                (long long)b.strideBytes, (long long)b.elemBytes,
                packAccessBytes(b), (long long)b.bytes(), gbps(b, row.packUs),
                gbps(b, row.unpackUs), gbps(b, row.copy2dUs),
                gbps(b, row.d2dUs), row.d2dUs / row.packUs, row.check.c_str());
    std::fflush(stdout);
    rows.push_back(row);
    p.release();
  }

  std::vector<double> ratios;
  int failures = 0;
  for (const PackRow &row : rows) {
    failures += row.check != "ok";
    ratios.push_back(row.d2dUs / row.packUs);
  }
  std::printf(
      "# pack/d2d: median %.3f, min %.3f, max %.3f (%zu blocks); "
      "correctness failures: %d\n",
      median(ratios),
      ratios.empty() ? NAN : *std::min_element(ratios.begin(), ratios.end()),
      ratios.empty() ? NAN : *std::max_element(ratios.begin(), ratios.end()),
      ratios.size(), failures);
  return finish(args, ctx, failures, [&](std::ostream &csv) {
    csv << "device,rows,row_bytes,stride_bytes,elem_bytes,access_bytes,bytes,"
           "pack_us,unpack_us,memcpy2d_us,d2d_us,pack_gbps,unpack_gbps,"
           "memcpy2d_gbps,d2d_gbps,pack_over_d2d,check\n";
    for (const PackRow &row : rows) {
      const PackBlock &b = row.block;
      csv << '"' << prop.name << "\"," << b.rows << ',' << b.rowBytes << ','
          << b.strideBytes << ',' << b.elemBytes << ',' << packAccessBytes(b)
          << ',' << b.bytes() << ',' << row.packUs << ',' << row.unpackUs << ','
          << row.copy2dUs << ',' << row.d2dUs << ',' << gbps(b, row.packUs)
          << ',' << gbps(b, row.unpackUs) << ',' << gbps(b, row.copy2dUs) << ','
          << gbps(b, row.d2dUs) << ',' << row.d2dUs / row.packUs << ",\""
          << row.check << "\"\n";
    }
  });
}
