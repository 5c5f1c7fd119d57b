// RUN: overlap-opt %s --overlap-fold-into-gemms -split-input-file | FileCheck %s
// RUN: overlap-opt %s --overlap-fold-into-gemms --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A PyTorch-layout weight, a zero accumulator and a bf16 rounding: one
// overlap.gemm that reads the weight as it lies, overwrites, and rounds in
// its epilogue into the rounding's own destination.
// CHECK-LABEL: func.func @torch_linear
// CHECK-SAME: (%[[X:.*]]: tensor<128x64xbf16>, %[[W:.*]]: tensor<32x64xbf16>)
// CHECK-NOT: linalg.
// CHECK: %[[E:.*]] = tensor.empty() : tensor<128x32xbf16>
// CHECK-NEXT: %[[R:.*]] = overlap.gemm %[[X]], %[[W]] into %[[E]] {transpose_b} : tensor<128x64xbf16>, tensor<32x64xbf16>, tensor<128x32xbf16> -> tensor<128x32xbf16>
// CHECK-NEXT: return %[[R]]
// REMARK-DAG: Remark="a transposed operand is read in place (the GEMM's transpose flag): no transposed copy"
// REMARK-DAG: Remark="a zero accumulator is not filled: the GEMM overwrites (beta = 0)"
// REMARK-DAG: Remark="the f32 sum is rounded in the GEMM's epilogue: no f32 buffer and no rounding pass"
func.func @torch_linear(%x: tensor<128x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<128x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<64x32xbf16>
  %wt = linalg.transpose ins(%w : tensor<32x64xbf16>) outs(%e0 : tensor<64x32xbf16>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<128x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128x32xf32>) -> tensor<128x32xf32>
  %p = linalg.matmul ins(%x, %wt : tensor<128x64xbf16>, tensor<64x32xbf16>) outs(%z : tensor<128x32xf32>) -> tensor<128x32xf32>
  %e2 = tensor.empty() : tensor<128x32xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<128x32xf32>) outs(%e2 : tensor<128x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<128x32xbf16>
  return %r : tensor<128x32xbf16>
}

// -----

// Gate and up merged by concatenating their transposed weights along N
// (what overlap-raise writes): one GEMM per weight into its columns, each
// weight read as it lies; the batch (the gathered blocks) broadcasts B.
// CHECK-LABEL: func.func @merged_gate_up
// CHECK-SAME: (%[[A:.*]]: tensor<4x16x64xbf16>, %[[G:.*]]: tensor<24x64xbf16>, %[[U:.*]]: tensor<40x64xbf16>)
// CHECK-NOT: linalg.transpose
// CHECK-NOT: tensor.insert_slice {{.*}} into %{{.*}} : tensor<{{.*}}> into tensor<64x64xbf16>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x16x64xf32>
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[E]][0, 0, 0] [4, 16, 24] [1, 1, 1]
// CHECK: %[[P0:.*]] = overlap.gemm %[[A]], %[[G]] into %[[S0]] {transpose_b} : tensor<4x16x64xbf16>, tensor<24x64xbf16>, tensor<4x16x24xf32>
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[P0]] into %[[E]][0, 0, 0] [4, 16, 24] [1, 1, 1]
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[I0]][0, 0, 24] [4, 16, 40] [1, 1, 1]
// CHECK: %[[P1:.*]] = overlap.gemm %[[A]], %[[U]] into %[[S1]] {transpose_b}
// CHECK: %[[I1:.*]] = tensor.insert_slice %[[P1]] into %[[I0]][0, 0, 24] [4, 16, 40] [1, 1, 1]
// CHECK: return %[[I1]]
// REMARK-DAG: Remark="B is 2 pieces concatenated along N: one GEMM per piece into its columns, no concatenated copy"
func.func @merged_gate_up(%a: tensor<4x16x64xbf16>, %g: tensor<24x64xbf16>, %u: tensor<40x64xbf16>) -> tensor<4x16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %eg = tensor.empty() : tensor<64x24xbf16>
  %gt = linalg.transpose ins(%g : tensor<24x64xbf16>) outs(%eg : tensor<64x24xbf16>) permutation = [1, 0]
  %eu = tensor.empty() : tensor<64x40xbf16>
  %ut = linalg.transpose ins(%u : tensor<40x64xbf16>) outs(%eu : tensor<64x40xbf16>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<64x64xbf16>
  %b0 = tensor.insert_slice %gt into %eb[0, 0] [64, 24] [1, 1] : tensor<64x24xbf16> into tensor<64x64xbf16>
  %b = tensor.insert_slice %ut into %b0[0, 24] [64, 40] [1, 1] : tensor<64x40xbf16> into tensor<64x64xbf16>
  %ec = tensor.empty() : tensor<4x16x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%ec : tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a, %b : tensor<4x16x64xbf16>, tensor<64x64xbf16>) outs(%c : tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
  return %p : tensor<4x16x64xf32>
}

// -----

// A zero accumulator seen through a reshape and a slice (a tile of a
// collapsed fill) becomes a fresh empty tensor; the rounding is folded
// through the reshape the reduce-scatter decomposition writes.
// CHECK-LABEL: func.func @tile_of_collapsed_fill
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x8x16xf16>
// CHECK: %[[P:.*]] = overlap.gemm %{{.*}}, %{{.*}} into %[[E]] : tensor<2x8x32xf16>, tensor<32x16xf16>, tensor<2x8x16xf16>
// CHECK: tensor.collapse_shape %[[P]] {{\[}}[0, 1], [2]] : tensor<2x8x16xf16> into tensor<16x16xf16>
func.func @tile_of_collapsed_fill(%a: tensor<2x8x32xf16>, %b: tensor<32x16xf16>) -> tensor<16x16xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %c = tensor.extract_slice %f[0, 0, 0] [2, 8, 16] [1, 1, 1] : tensor<4x8x16xf32> to tensor<2x8x16xf32>
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a, %b : tensor<2x8x32xf16>, tensor<32x16xf16>) outs(%c : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %j = tensor.collapse_shape %p [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
  %eh = tensor.empty() : tensor<16x16xf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%j : tensor<16x16xf32>) outs(%eh : tensor<16x16xf16>) {
    ^bb0(%in: f32, %out: f16):
      %t = arith.truncf %in : f32 to f16
      linalg.yield %t : f16
  } -> tensor<16x16xf16>
  return %h : tensor<16x16xf16>
}

// -----

// What must stay: a fill of -0.0 (+0.0 + p is not -0.0 + p for p = -0.0),
// a non-zero accumulator, a rounding with a rounding mode of its own, a
// concatenation that leaves a gap, and a plain matmul with nothing to fold.
// CHECK-LABEL: func.func @kept
// CHECK: %[[N:.*]] = linalg.fill
// CHECK: overlap.gemm {{.*}} into %[[N]] {accumulate, transpose_b}
// CHECK: %[[ONE:.*]] = linalg.fill
// CHECK: %[[P:.*]] = overlap.gemm {{.*}} into %[[ONE]] {accumulate, transpose_b} : {{.*}} -> tensor<8x4xf32>
// CHECK: overlap.gemm {{.*}} : tensor<8x16xbf16>, tensor<4x16xbf16>, tensor<8x4xf32>
// CHECK: linalg.generic
// CHECK: arith.truncf %{{.*}} to_nearest_away
// CHECK: tensor.insert_slice
// CHECK: linalg.matmul
// CHECK-NOT: overlap.gemm
func.func @kept(%x: tensor<8x16xbf16>, %w: tensor<4x16xbf16>, %b: tensor<16x4xbf16>, %p4: tensor<16x2xbf16>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %nz = arith.constant -0.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %et = tensor.empty() : tensor<16x4xbf16>
  %wt = linalg.transpose ins(%w : tensor<4x16xbf16>) outs(%et : tensor<16x4xbf16>) permutation = [1, 0]
  %cn = linalg.fill ins(%nz : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r0 = linalg.matmul ins(%x, %wt : tensor<8x16xbf16>, tensor<16x4xbf16>) outs(%cn : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c1 = linalg.fill ins(%one : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r1 = linalg.matmul ins(%x, %wt : tensor<8x16xbf16>, tensor<16x4xbf16>) outs(%c1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r2 = linalg.matmul ins(%x, %wt : tensor<8x16xbf16>, tensor<16x4xbf16>) outs(%c0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %eh = tensor.empty() : tensor<8x4xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%r2 : tensor<8x4xf32>) outs(%eh : tensor<8x4xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in to_nearest_away : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<8x4xbf16>
  %eg = tensor.empty() : tensor<16x4xbf16>
  %gap = tensor.insert_slice %p4 into %eg[0, 0] [16, 2] [1, 1] : tensor<16x2xbf16> into tensor<16x4xbf16>
  %r3 = linalg.matmul ins(%x, %gap : tensor<8x16xbf16>, tensor<16x4xbf16>) outs(%c1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r4 = linalg.matmul ins(%x, %b : tensor<8x16xbf16>, tensor<16x4xbf16>) outs(%c1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r0, %r1, %r2, %h, %r3, %r4 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A transposed A (batched: the last two dimensions swapped) is read as it
// lies too; the f32 result feeds two users, so it is not rounded in the
// GEMM.
// CHECK-LABEL: func.func @transposed_a_two_users
// CHECK-SAME: (%[[A:.*]]: tensor<2x16x8xf16>
// CHECK: %[[P:.*]] = overlap.gemm %[[A]], %{{.*}} into %{{.*}} {transpose_a} : tensor<2x16x8xf16>, tensor<16x4xf16>, tensor<2x8x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[P]]
// CHECK: return %[[P]],
func.func @transposed_a_two_users(%a: tensor<2x16x8xf16>, %b: tensor<16x4xf16>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf16>) {
  %zero = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<2x8x16xf16>
  %at = linalg.transpose ins(%a : tensor<2x16x8xf16>) outs(%ea : tensor<2x8x16xf16>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<2x8x4xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%at, %b : tensor<2x8x16xf16>, tensor<16x4xf16>) outs(%c : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %eh = tensor.empty() : tensor<2x8x4xf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : tensor<2x8x4xf32>) outs(%eh : tensor<2x8x4xf16>) {
    ^bb0(%in: f32, %out: f16):
      %t = arith.truncf %in : f32 to f16
      linalg.yield %t : f16
  } -> tensor<2x8x4xf16>
  return %p, %h : tensor<2x8x4xf32>, tensor<2x8x4xf16>
}
