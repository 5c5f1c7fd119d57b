//===- Gemm.cpp - Row-major strided-batched GEMM on cuBLASLt ----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// cuBLASLt is column-major. A row-major m x n matrix with leading dimension
// ld is the column-major n x m matrix with the same ld, so
//   C (m x n) += A (m x k) . B (k x n)        (row-major)
// is
//   C^T (n x m) += B^T (n x k) . A^T (k x m)  (column-major)
// i.e. one cuBLASLt matmul with the operands swapped and no transposes.
// A transposed operand (OVERLAP_GEMM_TRANSPOSE_A / _B: a weight stored
// [out, in]) is read as it lies through cuBLASLt's TRANSB / TRANSA, never
// copied. alpha = beta = 1 and D = C accumulate in place; with
// OVERLAP_GEMM_OVERWRITE beta = 0 (C is not read). An f16/bf16 C with f32
// compute is the f32 sum rounded once in the epilogue. Products accumulate in
// f32 (CUBLAS_COMPUTE_32F; TF32 only when the options allow it).
//
// Per shape (types, batch, strides, leading dimensions, pointer alignment)
// the context keeps a plan: the matmul descriptor and the three layouts
// (unless the descriptor cache is off) and the algorithm, the heuristic's
// first or, with autotune k > 1, the fastest of its top k timed once. Tile
// GEMMs (tile >= 0: a tile of a decomposed op, which may run while
// communication is in flight) carry CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET =
// SMs - comm_sms, so a persistent kernel leaves the communication's SMs
// free; a GEMM that runs alone (tile -1: serial, a baseline, outside an
// overlapped region) gets every SM. The target is part of the plan's key.
// The handle and a workspace per stream live in the context.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace overlap;
using namespace overlap::cuda;
using runtime::Site;

namespace {

cudaDataType_t dataType(overlap_dtype dtype) {
  switch (dtype) {
  case OVERLAP_F16:
    return CUDA_R_16F;
  case OVERLAP_BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

/// Destroys a preference at scope exit.
struct Preference {
  cublasLtMatmulPreference_t pref = nullptr;
  ~Preference() {
    if (pref)
      cublasLtMatmulPreferenceDestroy(pref);
  }
};

/// Sets attribute `attr` of the cuBLASLt object `handle` to `value` through
/// `set` (cublasLtMatmulDescSetAttribute, ...MatrixLayout..., ...Preference...)
/// as one checked call named `api`.
template <typename Set, typename Handle, typename Attr, typename T>
overlap_status setAttribute(CudaContext &ctx, const Site &site, const char *api,
                            Set set, Handle handle, Attr attr, const T &value) {
  return ctx.check(site, api, set(handle, attr, &value, sizeof(T)));
}

/// Whether the GEMM runs as one call per batch entry (see gemm()).
bool loopsOverBatch(const runtime::GemmArgs &g, bool loopBroadcast) {
  return g.batch > 1 && loopBroadcast && (g.strideA == 0 || g.strideB == 0);
}

} // namespace

GemmDescriptors::~GemmDescriptors() {
  if (c)
    cublasLtMatrixLayoutDestroy(c);
  if (b)
    cublasLtMatrixLayoutDestroy(b);
  if (a)
    cublasLtMatrixLayoutDestroy(a);
  if (op)
    cublasLtMatmulDescDestroy(op);
}

void *CudaContext::workspace(int stream, size_t &bytes) {
  bytes = 0;
  if (!options.workspaceBytes)
    return nullptr;
  if (!workspaces_[stream]) {
    void *ws = nullptr;
    if (check(Site::tile("overlap_gemm", stream, -1),
              "cudaMalloc (cuBLASLt workspace)",
              cudaMalloc(&ws, options.workspaceBytes)))
      return nullptr;
    workspaces_[stream] = ws;
  }
  bytes = options.workspaceBytes;
  return workspaces_[stream];
}

overlap_status CudaContext::makeDescriptors(const Site &site,
                                            const runtime::GemmArgs &g,
                                            int32_t batch, int smTarget,
                                            GemmDescriptors &d) {
  const cudaDataType_t abType = dataType(g.abType), cType = dataType(g.cType);
  const cublasComputeType_t compute =
      g.abType == OVERLAP_F32 && options.allowTf32
          ? CUBLAS_COMPUTE_32F_FAST_TF32
          : CUBLAS_COMPUTE_32F;
  if (overlap_status s =
          check(site, "cublasLtMatmulDescCreate",
                cublasLtMatmulDescCreate(&d.op, compute, CUDA_R_32F)))
    return s;
  if (smTarget > 0)
    if (overlap_status s = setAttribute(
            *this, site, "cublasLtMatmulDescSetAttribute (SM_COUNT_TARGET)",
            cublasLtMatmulDescSetAttribute, d.op,
            CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, int32_t(smTarget)))
      return s;
  // Column-major views: "A" = B^T (n x k), "B" = A^T (k x m), C^T (n x m).
  // A transposed B is stored n x k row-major: column-major k x n, which
  // TRANSA turns into the n x k "A"; a transposed A likewise with TRANSB.
  for (auto [attr, transposed] :
       {std::pair{CUBLASLT_MATMUL_DESC_TRANSA, g.transB},
        std::pair{CUBLASLT_MATMUL_DESC_TRANSB, g.transA}}) {
    if (!transposed)
      continue;
    if (overlap_status s = setAttribute(
            *this, site, "cublasLtMatmulDescSetAttribute (TRANSA/TRANSB)",
            cublasLtMatmulDescSetAttribute, d.op, attr, CUBLAS_OP_T))
      return s;
  }
  struct View {
    cublasLtMatrixLayout_t *layout;
    cudaDataType_t type;
    int64_t rows, cols, ld, stride;
  } views[] = {{&d.a, abType, g.transB ? g.k : g.n, g.transB ? g.n : g.k, g.ldb,
                g.strideB},
               {&d.b, abType, g.transA ? g.m : g.k, g.transA ? g.k : g.m, g.lda,
                g.strideA},
               {&d.c, cType, g.n, g.m, g.ldc, g.strideC}};
  for (const View &v : views) {
    if (overlap_status s =
            check(site, "cublasLtMatrixLayoutCreate",
                  cublasLtMatrixLayoutCreate(v.layout, v.type, uint64_t(v.rows),
                                             uint64_t(v.cols), v.ld)))
      return s;
    if (batch > 1) {
      // A batch stride of 0 broadcasts A or B; cuBLASLt takes it (the
      // attribute's default is 0). The loop-broadcast option falls back
      // to one call per batch should a library version disagree.
      if (overlap_status s =
              setAttribute(*this, site, "cublasLtMatrixLayoutSetAttribute",
                           cublasLtMatrixLayoutSetAttribute, *v.layout,
                           CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch))
        return s;
      if (overlap_status s = setAttribute(
              *this, site, "cublasLtMatrixLayoutSetAttribute",
              cublasLtMatrixLayoutSetAttribute, *v.layout,
              CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t(v.stride)))
        return s;
    }
  }
  return OVERLAP_SUCCESS;
}

overlap_status CudaContext::chooseAlgorithm(const Site &site,
                                            const runtime::GemmArgs &g,
                                            int32_t batch,
                                            const GemmDescriptors &d, void *ws,
                                            size_t wsBytes, GemmPlan &plan) {
  Preference p;
  if (overlap_status s = check(site, "cublasLtMatmulPreferenceCreate",
                               cublasLtMatmulPreferenceCreate(&p.pref)))
    return s;
  uint64_t maxWs = wsBytes;
  const uint32_t alignA = pointerAlignment(g.a), alignB = pointerAlignment(g.b),
                 alignC = pointerAlignment(g.c);
  uint32_t alignments[] = {alignB, alignA, alignC, alignC}; // swapped A/B
  cublasLtMatmulPreferenceAttributes_t names[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  if (overlap_status s =
          setAttribute(*this, site, "cublasLtMatmulPreferenceSetAttribute",
                       cublasLtMatmulPreferenceSetAttribute, p.pref,
                       CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, maxWs))
    return s;
  for (int i = 0; i < 4; ++i)
    if (overlap_status s =
            setAttribute(*this, site, "cublasLtMatmulPreferenceSetAttribute",
                         cublasLtMatmulPreferenceSetAttribute, p.pref, names[i],
                         alignments[i]))
      return s;
  const int wanted = options.gemmAutotune;
  std::vector<cublasLtMatmulHeuristicResult_t> results(
      static_cast<size_t>(wanted));
  int returned = 0;
  if (overlap_status s = check(
          site, "cublasLtMatmulAlgoGetHeuristic",
          cublasLtMatmulAlgoGetHeuristic(lt_, d.op, d.a, d.b, d.c, d.c, p.pref,
                                         wanted, results.data(), &returned)))
    return s;
  std::vector<cublasLtMatmulHeuristicResult_t> usable;
  for (int i = 0; i < returned; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS)
      usable.push_back(results[i]);
  if (usable.empty())
    return failCall(site, "cublasLtMatmulAlgoGetHeuristic",
                    "no algorithm for m " + std::to_string(g.m) + ", n " +
                        std::to_string(g.n) + ", k " + std::to_string(g.k) +
                        ", batch " + std::to_string(batch),
                    OVERLAP_ERROR_UNSUPPORTED);
  plan.algo = usable[0].algo;
  plan.note = "heuristic #1";
  if (usable.size() == 1)
    return OVERLAP_SUCCESS;

  // Time each candidate on a private stream, with private operands of the
  // GEMM's shape, strides and alignments (A, B and C read, D a scratch, a
  // workspace of its own). Not on the GEMM's stream: the caller's buffers
  // may not hold their data yet (that stream may wait for another), and
  // waiting for it would hold the host, and so every stream's enqueue,
  // behind its whole queue. Stream-ordered allocations and frees never
  // synchronize the device, as cudaFree does. One warm-up and three timed
  // runs each, once per shape; the host waits for these runs alone, which
  // share the GPU with whatever runs at the time.
  cudaStream_t s = nullptr;
  std::vector<void *> buffers;
  auto release = [&] {
    for (void *p : buffers)
      (void)cudaFreeAsync(p, s);
    (void)cudaStreamDestroy(s); // returns at once; freed once done
  };
  // A private copy of an operand: `elems` elements of `elt` bytes at the
  // caller's address modulo 16 (the alignment the plan was made for).
  auto operand = [&](const void *like, int64_t elems, size_t elt,
                     int fill) -> void * {
    const size_t offset = reinterpret_cast<uintptr_t>(like) % 16;
    const size_t bytes = size_t(elems) * elt + offset;
    void *p = nullptr;
    if (cudaMallocAsync(&p, bytes, s) != cudaSuccess)
      return nullptr;
    buffers.push_back(p);
    // Never zeros (they time faster than data): a finite non-zero pattern.
    if (fill >= 0 && cudaMemsetAsync(p, fill, bytes, s) != cudaSuccess)
      return nullptr;
    return static_cast<char *>(p) + offset;
  };
  auto extent = [&](int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    return (batch > 1 ? (batch - 1) * stride : 0) + (rows - 1) * ld + cols;
  };
  const size_t abBytes = overlap_dtype_size(g.abType);
  const size_t cBytes = overlap_dtype_size(g.cType);
  void *a = nullptr, *b = nullptr, *c = nullptr, *scratch = nullptr;
  void *tuneWs = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess) {
    // Stored shapes: A k x m and B n x k when transposed.
    a = operand(
        g.a,
        extent(g.transA ? g.k : g.m, g.transA ? g.m : g.k, g.lda, g.strideA),
        abBytes, 0x3c);
    b = a ? operand(g.b,
                    extent(g.transB ? g.n : g.k, g.transB ? g.k : g.n, g.ldb,
                           g.strideB),
                    abBytes, 0x3c)
          : nullptr;
    c = b ? operand(g.c, extent(g.m, g.n, g.ldc, g.strideC), cBytes, 0x3c)
          : nullptr;
    scratch = c ? operand(g.c, extent(g.m, g.n, g.ldc, g.strideC), cBytes, -1)
                : nullptr;
    tuneWs = scratch && wsBytes ? operand(nullptr, int64_t(wsBytes), 1, -1)
                                : nullptr;
  }
  if (!scratch || (wsBytes && !tuneWs)) {
    // No memory or stream to time in: keep the heuristic's first.
    cudaError_t e = cudaGetLastError();
    plan.note +=
        " (autotune skipped: " +
        std::string(e == cudaSuccess ? "no stream" : cudaGetErrorName(e)) + ")";
    if (s)
      release();
    return OVERLAP_SUCCESS;
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const float one = 1.0f, zero = 0.0f;
  const float *beta = g.overwrite ? &zero : &one; // as the real call
  float best = -1;
  std::string times;
  for (size_t i = 0; i < usable.size(); ++i) {
    float ms = -1;
    bool ok = true;
    for (int rep = 0; rep < 4 && ok; ++rep) {
      if (rep == 1)
        cudaEventRecord(start, s);
      ok = cublasLtMatmul(lt_, d.op, &one, b, d.a, a, d.b, beta, c, d.c,
                          scratch, d.c, &usable[i].algo, tuneWs, wsBytes,
                          s) == CUBLAS_STATUS_SUCCESS;
    }
    if (ok && cudaEventRecord(stop, s) == cudaSuccess &&
        cudaEventSynchronize(stop) == cudaSuccess &&
        cudaEventElapsedTime(&ms, start, stop) == cudaSuccess)
      ms /= 3;
    else
      (void)cudaGetLastError(), ms = -1;
    char text[64];
    if (ms < 0)
      std::snprintf(text, sizeof(text), "%s#%zu failed", i ? ", " : "", i + 1);
    else
      std::snprintf(text, sizeof(text), "%s#%zu %.1f us", i ? ", " : "", i + 1,
                    ms * 1000.0);
    times += text;
    if (ms >= 0 && (best < 0 || ms < best)) {
      best = ms;
      plan.algo = usable[i].algo;
      plan.note = "autotuned #" + std::to_string(i + 1) + " of " +
                  std::to_string(usable.size());
    }
  }
  plan.note += " (" + times + ")";
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  // Freed in stream order, after the last timed run.
  release();
  return OVERLAP_SUCCESS;
}

overlap_status CudaContext::gemm(const Site &site, const runtime::GemmArgs &g) {
  const bool loop = loopsOverBatch(g, options.loopBroadcast);
  const int32_t batch = loop ? 1 : int32_t(g.batch);
  const size_t abBytes = overlap_dtype_size(g.abType);
  const size_t cBytes = overlap_dtype_size(g.cType);

  size_t wsBytes = 0;
  void *ws = workspace(site.stream, wsBytes);
  if (overlap_status s = status())
    return s;

  const int smTarget = gemmSmTargetFor(
      site.kind == Site::Kind::Tile ? site.index : -1, gemmSms_, size);
  GemmKey key = gemmKey(g, batch, smTarget);
  auto cached = gemms_.find(key);
  std::unique_ptr<GemmDescriptors> fresh;
  const GemmDescriptors *d = nullptr;
  if (cached != gemms_.end() && cached->second.descriptors) {
    d = cached->second.descriptors.get();
  } else {
    fresh = std::make_unique<GemmDescriptors>();
    if (overlap_status s = makeDescriptors(site, g, batch, smTarget, *fresh))
      return s;
    d = fresh.get();
  }
  if (cached == gemms_.end()) {
    GemmPlan plan;
    if (overlap_status s =
            chooseAlgorithm(site, g, batch, *d, ws, wsBytes, plan))
      return s;
    if (options.gemmCache)
      plan.descriptors = std::move(fresh);
    cached = gemms_.emplace(key, std::move(plan)).first;
  }
  const cublasLtMatmulAlgo_t &algo = cached->second.algo;

  const float one = 1.0f, zero = 0.0f;
  const float *beta = g.overwrite ? &zero : &one;
  const int64_t calls = loop ? g.batch : 1;
  for (int64_t i = 0; i < calls; ++i) {
    const char *a = static_cast<const char *>(g.a) + i * g.strideA * abBytes;
    const char *b = static_cast<const char *>(g.b) + i * g.strideB * abBytes;
    char *c = static_cast<char *>(g.c) + i * g.strideC * cBytes;
    if (overlap_status s = check(
            site, "cublasLtMatmul",
            cublasLtMatmul(lt_, d->op, &one, b, d->a, a, d->b, beta, c, d->c, c,
                           d->c, &algo, ws, wsBytes, stream(site.stream))))
      return s;
  }
  return OVERLAP_SUCCESS;
}

std::string CudaContext::gemmReport() const {
  std::string out;
  for (const auto &[key, plan] : gemms_) {
    char line[256];
    std::snprintf(
        line, sizeof(line),
        "batch %lld m %lld n %lld k %lld lda %lld ldb %lld ldc %lld, ",
        (long long)std::get<2>(key), (long long)std::get<3>(key),
        (long long)std::get<4>(key), (long long)std::get<5>(key),
        (long long)std::get<6>(key), (long long)std::get<7>(key),
        (long long)std::get<8>(key));
    const int smTarget = std::get<13>(key);
    out += line +
           (smTarget ? "sm target " + std::to_string(smTarget) : "every SM") +
           ": " + plan.note + "\n";
  }
  return out;
}
