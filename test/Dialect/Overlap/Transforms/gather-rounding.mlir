// RUN: overlap-opt %s --overlap-pipeline="profile=h100-nvlink-datasheet strategy=uniform:2" | FileCheck %s
// RUN: overlap-run --ranks 4 --strategy uniform:2 %s | FileCheck %s --check-prefix=EXEC

// An all-gather + matmul of bf16 factors summed in f32 from zero, then
// rounded to bf16 (JAX's bf16 dot with f32 accumulation): the tiles write
// the rounded rows themselves, each GEMM rounding in its epilogue into its
// slice of a bf16 result; no f32 result and no rounding pass are left.
// CHECK-LABEL: func.func @gather_then_round
// CHECK-NOT: linalg.fill
// CHECK: %[[E:.*]] = tensor.empty() : tensor<256x32xbf16>
// CHECK: overlap.tiles %{{.*}} : tensor<4x64x32xbf16>
// CHECK: overlap.all_gather
// CHECK: overlap.gemm {{.*}} : tensor<4x32x64xbf16>, tensor<64x32xbf16>, tensor<4x32x32xbf16> -> tensor<4x32x32xbf16>
// CHECK: overlap.all_gather
// CHECK: overlap.gemm {{.*}} -> tensor<4x32x32xbf16>
// CHECK-NOT: linalg.generic
// CHECK: return %{{.*}} : tensor<256x32xbf16>
// EXEC-NOT: MISMATCH
// EXEC: bit-identical: yes
shard.grid @tp(shape = 4)
func.func @gather_then_round(%x: tensor<64x64xbf16>, %w: tensor<64x32xbf16>) -> tensor<256x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xbf16> -> tensor<256x64xbf16>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%g, %w : tensor<256x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %eh = tensor.empty() : tensor<256x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<256x32xf32>) outs(%eh : tensor<256x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<256x32xbf16>
  return %h : tensor<256x32xbf16>
}
