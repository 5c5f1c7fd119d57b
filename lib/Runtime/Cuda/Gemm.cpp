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
// alpha = beta = 1 and D = C accumulate in place. Products accumulate in
// f32 (CUBLAS_COMPUTE_32F; TF32 only when the options allow it). The
// algorithm chosen by the heuristic is cached per shape, types, strides and
// pointer alignment; the handle and a workspace per stream live in the
// context.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

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

/// Destroys cuBLASLt descriptors at scope exit.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    if (pref)
      cublasLtMatmulPreferenceDestroy(pref);
    if (c)
      cublasLtMatrixLayoutDestroy(c);
    if (b)
      cublasLtMatrixLayoutDestroy(b);
    if (a)
      cublasLtMatrixLayoutDestroy(a);
    if (op)
      cublasLtMatmulDescDestroy(op);
  }
};

/// The largest power of two up to 16 that divides the address.
unsigned alignment(const void *p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  unsigned a = 16;
  while (a > 1 && v % a)
    a /= 2;
  return a;
}

} // namespace

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

overlap_status CudaContext::gemm(const Site &site, const runtime::GemmArgs &g) {
  const cudaDataType_t abType = dataType(g.abType), cType = dataType(g.cType);
  const cublasComputeType_t compute =
      g.abType == OVERLAP_F32 && options.allowTf32
          ? CUBLAS_COMPUTE_32F_FAST_TF32
          : CUBLAS_COMPUTE_32F;
  // A batch stride of 0 broadcasts A or B. cuBLASLt takes a stride of 0 in
  // its strided-batch layouts (the attribute's default is 0); the option
  // falls back to one call per batch should a library version disagree.
  const bool loop = g.batch > 1 && options.loopBroadcast &&
                    (g.strideA == 0 || g.strideB == 0);
  const int32_t batch = loop ? 1 : int32_t(g.batch);
  const size_t abBytes = overlap_dtype_size(g.abType);
  const size_t cBytes = overlap_dtype_size(g.cType);

  size_t wsBytes = 0;
  void *ws = workspace(site.stream, wsBytes);
  if (overlap_status s = status())
    return s;

  Descriptors d;
  if (overlap_status s =
          check(site, "cublasLtMatmulDescCreate",
                cublasLtMatmulDescCreate(&d.op, compute, CUDA_R_32F)))
    return s;
  // Column-major views: "A" = B^T (n x k), "B" = A^T (k x m), C^T (n x m).
  struct View {
    cublasLtMatrixLayout_t *layout;
    cudaDataType_t type;
    int64_t rows, cols, ld, stride;
  } views[] = {{&d.a, abType, g.n, g.k, g.ldb, g.strideB},
               {&d.b, abType, g.k, g.m, g.lda, g.strideA},
               {&d.c, cType, g.n, g.m, g.ldc, g.strideC}};
  for (const View &v : views) {
    if (overlap_status s =
            check(site, "cublasLtMatrixLayoutCreate",
                  cublasLtMatrixLayoutCreate(v.layout, v.type, uint64_t(v.rows),
                                             uint64_t(v.cols), v.ld)))
      return s;
    if (batch > 1) {
      int64_t stride = v.stride;
      if (overlap_status s =
              check(site, "cublasLtMatrixLayoutSetAttribute",
                    cublasLtMatrixLayoutSetAttribute(
                        *v.layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                        sizeof(batch))))
        return s;
      if (overlap_status s =
              check(site, "cublasLtMatrixLayoutSetAttribute",
                    cublasLtMatrixLayoutSetAttribute(
                        *v.layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                        &stride, sizeof(stride))))
        return s;
    }
  }

  const unsigned alignA = alignment(g.a), alignB = alignment(g.b),
                 alignC = alignment(g.c);
  GemmKey key{int(g.abType),
              int(g.cType),
              int64_t(batch),
              g.m,
              g.n,
              g.k,
              g.lda,
              g.ldb,
              g.ldc,
              g.strideA,
              g.strideB,
              g.strideC,
              (alignA << 10) | (alignB << 5) | alignC};
  auto cached = algos_.find(key);
  if (cached == algos_.end()) {
    if (overlap_status s = check(site, "cublasLtMatmulPreferenceCreate",
                                 cublasLtMatmulPreferenceCreate(&d.pref)))
      return s;
    uint64_t maxWs = wsBytes;
    uint32_t alignments[] = {alignB, alignA, alignC, alignC}; // swapped A/B
    cublasLtMatmulPreferenceAttributes_t names[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    if (overlap_status s =
            check(site, "cublasLtMatmulPreferenceSetAttribute",
                  cublasLtMatmulPreferenceSetAttribute(
                      d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWs,
                      sizeof(maxWs))))
      return s;
    for (int i = 0; i < 4; ++i)
      if (overlap_status s =
              check(site, "cublasLtMatmulPreferenceSetAttribute",
                    cublasLtMatmulPreferenceSetAttribute(
                        d.pref, names[i], &alignments[i], sizeof(uint32_t))))
        return s;
    cublasLtMatmulHeuristicResult_t result = {};
    int returned = 0;
    if (overlap_status s = check(
            site, "cublasLtMatmulAlgoGetHeuristic",
            cublasLtMatmulAlgoGetHeuristic(lt_, d.op, d.a, d.b, d.c, d.c,
                                           d.pref, 1, &result, &returned)))
      return s;
    if (returned < 1 || result.state != CUBLAS_STATUS_SUCCESS)
      return failCall(site, "cublasLtMatmulAlgoGetHeuristic",
                      "no algorithm for m " + std::to_string(g.m) + ", n " +
                          std::to_string(g.n) + ", k " + std::to_string(g.k) +
                          ", batch " + std::to_string(batch),
                      OVERLAP_ERROR_UNSUPPORTED);
    cached = algos_.emplace(key, result.algo).first;
  }
  const cublasLtMatmulAlgo_t &algo = cached->second;

  const float one = 1.0f;
  const int64_t calls = loop ? g.batch : 1;
  for (int64_t i = 0; i < calls; ++i) {
    const char *a = static_cast<const char *>(g.a) + i * g.strideA * abBytes;
    const char *b = static_cast<const char *>(g.b) + i * g.strideB * abBytes;
    char *c = static_cast<char *>(g.c) + i * g.strideC * cBytes;
    if (overlap_status s = check(site, "cublasLtMatmul",
                                 cublasLtMatmul(lt_, d.op, &one, b, d.a, a, d.b,
                                                &one, c, d.c, c, d.c, &algo, ws,
                                                wsBytes, stream(site.stream))))
      return s;
  }
  return OVERLAP_SUCCESS;
}
