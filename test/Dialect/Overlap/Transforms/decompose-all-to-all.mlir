// RUN: overlap-opt %s --overlap-decompose --remarks-filter=overlap -split-input-file -verify-diagnostics | FileCheck %s

// overlap-decompose, expert parallelism. G ranks, E experts per rank, Cap
// tokens per (rank, expert) block; a plan tile of r rows takes
// q = r / (G E) tokens of every block. Dispatch: every tile's tokens are
// sliced and packed (linalg.copy) before the tiles, so the compute stream
// packs them all before its first GEMM and exchange t + 1 overlaps the
// GEMMs of tile t; per tile one overlap.all_to_all, then each of the E
// experts runs one strided-batched matmul over the G ranks' q tokens, in
// place in its rows of C. Combine: per tile each
// expert's batched matmul fills its blocks of a packed send buffer, and one
// overlap.all_to_all delivers the tile's rows of the result.

shard.grid @ep(shape = 4)

// One expert per rank (E = 1), 256 tokens = 4 blocks of 64; tiles of 128
// rows take 32 tokens of every block. C is viewed as 1 x G x Cap x N.
// CHECK-LABEL: func.func @dispatch_one
// CHECK-SAME: (%[[A:.*]]: tensor<256x32xf32>, %[[B:.*]]: tensor<32x48xf32>, %[[C:.*]]: tensor<256x48xf32>)
// CHECK: %[[A3:.*]] = tensor.expand_shape %[[A]] {{\[}}[0, 1], [2]] output_shape [4, 64, 32]
// CHECK-NEXT: %[[C4:.*]] = tensor.expand_shape %[[C]] {{\[}}[0, 1, 2], [3]] output_shape [1, 4, 64, 48]
// CHECK-NEXT: %[[S0:.*]] = tensor.extract_slice %[[A3]][0, 0, 0] [4, 32, 32] [1, 1, 1]
// CHECK-NEXT: %[[E0:.*]] = tensor.empty() : tensor<4x32x32xf32>
// CHECK-NEXT: %[[P0:.*]] = linalg.copy ins(%[[S0]] : tensor<4x32x32xf32>) outs(%[[E0]] : tensor<4x32x32xf32>)
// CHECK-NEXT: %[[S1:.*]] = tensor.extract_slice %[[A3]][0, 32, 0] [4, 32, 32] [1, 1, 1]
// CHECK-NEXT: tensor.empty() : tensor<4x32x32xf32>
// CHECK-NEXT: %[[P1:.*]] = linalg.copy ins(%[[S1]] : tensor<4x32x32xf32>)
// CHECK-NEXT: %[[R:.*]] = overlap.tiles %[[C4]] : tensor<1x4x64x48xf32> (%[[T0:.*]] = [0, 0, 0, 0] [1, 4, 32, 48], %[[T1:.*]] = [0, 0, 32, 0] [1, 4, 32, 48]) {
// CHECK-NEXT: %[[X0:.*]] = overlap.all_to_all %[[P0]] on @ep grid_axes = [0] : tensor<4x32x32xf32> -> tensor<4x32x32xf32>
// CHECK-NEXT: %[[X04:.*]] = tensor.expand_shape %[[X0]] {{\[}}[0, 1], [2], [3]] output_shape [4, 1, 32, 32]
// CHECK-NEXT: %[[A0:.*]] = tensor.extract_slice %[[X04]][0, 0, 0, 0] [4, 1, 32, 32] [1, 1, 1, 1] : tensor<4x1x32x32xf32> to tensor<4x32x32xf32>
// CHECK-NEXT: %[[C0:.*]] = tensor.extract_slice %[[T0]][0, 0, 0, 0] [1, 4, 32, 48] [1, 1, 1, 1] : tensor<1x4x32x48xf32> to tensor<4x32x48xf32>
// CHECK-NEXT: %[[M0:.*]] = linalg.batch_matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[A0]], %[[B]] : tensor<4x32x32xf32>, tensor<32x48xf32>) outs(%[[C0]] : tensor<4x32x48xf32>)
// CHECK-NEXT: %[[I0:.*]] = tensor.insert_slice %[[M0]] into %[[T0]][0, 0, 0, 0] [1, 4, 32, 48] [1, 1, 1, 1]
// CHECK-NEXT: overlap.all_to_all %[[P1]]
// CHECK: %[[M1:.*]] = linalg.batch_matmul {{.*}} outs(%{{.*}} : tensor<4x32x48xf32>)
// CHECK-NEXT: %[[I1:.*]] = tensor.insert_slice %[[M1]] into %[[T1]]
// CHECK-NEXT: overlap.yield %[[I0]], %[[I1]] : tensor<1x4x32x48xf32>, tensor<1x4x32x48xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[OUT:.*]] = tensor.collapse_shape %[[R]] {{\[}}[0, 1, 2], [3]] : tensor<1x4x64x48xf32> into tensor<256x48xf32>
// CHECK-NEXT: return %[[OUT]]
// CHECK-NOT: overlap.all_to_all_matmul
func.func @dispatch_one(%a: tensor<256x32xf32>, %b: tensor<32x48xf32>,
                        %c: tensor<256x48xf32>) -> tensor<256x48xf32> {
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 128], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<256x32xf32>, tensor<32x48xf32>, tensor<256x48xf32> -> tensor<256x48xf32>
  return %r : tensor<256x48xf32>
}

// -----

shard.grid @ep(shape = 4)

// One expert per rank, combine with a fill accumulator: each tile's packed
// buffer is filled (no copy of C, and the original fill is gone), computed
// by one batched matmul and exchanged into the tile's rows of the G x Cap
// x N result.
// CHECK-LABEL: func.func @combine_one
// CHECK-SAME: (%[[A:.*]]: tensor<256x48xf32>, %[[B:.*]]: tensor<48x32xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.0
// CHECK-NOT: tensor.empty() : tensor<256x32xf32>
// CHECK: %[[A4:.*]] = tensor.expand_shape %[[A]] {{\[}}[0, 1, 2], [3]] output_shape [1, 4, 64, 48]
// CHECK-NEXT: %[[OUT:.*]] = tensor.empty() : tensor<4x64x32xf32>
// CHECK-NEXT: %[[R:.*]] = overlap.tiles %[[OUT]] : tensor<4x64x32xf32> (%{{.*}} = [0, 0, 0] [4, 32, 32], %{{.*}} = [0, 32, 0] [4, 32, 32]) {
// CHECK-NEXT: %[[A0:.*]] = tensor.extract_slice %[[A4]][0, 0, 0, 0] [1, 4, 32, 48] [1, 1, 1, 1] : tensor<1x4x64x48xf32> to tensor<4x32x48xf32>
// CHECK-NEXT: %[[E0:.*]] = tensor.empty() : tensor<4x32x32xf32>
// CHECK-NEXT: %[[F0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E0]] : tensor<4x32x32xf32>)
// CHECK-NEXT: %[[M0:.*]] = linalg.batch_matmul {{.*}} ins(%[[A0]], %[[B]] : tensor<4x32x48xf32>, tensor<48x32xf32>) outs(%[[F0]] : tensor<4x32x32xf32>)
// CHECK-NEXT: %[[X0:.*]] = overlap.all_to_all %[[M0]] on @ep grid_axes = [0] : tensor<4x32x32xf32> -> tensor<4x32x32xf32>
// CHECK-NEXT: tensor.extract_slice %[[A4]][0, 0, 32, 0] [1, 4, 32, 48]
// CHECK: %[[X1:.*]] = overlap.all_to_all
// CHECK-NEXT: overlap.yield %[[X0]], %[[X1]] : tensor<4x32x32xf32>, tensor<4x32x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[Y:.*]] = tensor.collapse_shape %[[R]] {{\[}}[0, 1], [2]] : tensor<4x64x32xf32> into tensor<256x32xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: linalg.copy
func.func @combine_one(%a: tensor<256x48xf32>, %b: tensor<48x32xf32>) -> tensor<256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = overlap.matmul_all_to_all %a, %b, %c on @ep grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 128], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<256x48xf32>, tensor<48x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// -----

shard.grid @ep(shape = 4)

// Two experts per rank: A is (G E) x Cap x K = 8 x 32 x 16, C is
// E x (G Cap) x N = 2 x 128 x 24, M = 256 rows in 8 blocks; tiles of 64 and
// 192 rows take 8 and 24 tokens of every block. What arrives is G x E
// blocks; expert x takes block (j, x) from every rank j and its weights
// B[x], and writes its rows of C: two batched matmuls per tile.
// CHECK-LABEL: func.func @dispatch_experts
// CHECK-SAME: (%[[A:.*]]: tensor<8x32x16xbf16>, %[[B:.*]]: tensor<2x16x24xbf16>, %[[C:.*]]: tensor<2x128x24xf32>)
// CHECK: %[[C4:.*]] = tensor.expand_shape %[[C]] {{\[}}[0], [1, 2], [3]] output_shape [2, 4, 32, 24]
// CHECK-NEXT: %[[S0:.*]] = tensor.extract_slice %[[A]][0, 0, 0] [8, 8, 16] [1, 1, 1] : tensor<8x32x16xbf16> to tensor<8x8x16xbf16>
// CHECK-NEXT: tensor.empty() : tensor<8x8x16xbf16>
// CHECK-NEXT: %[[P0:.*]] = linalg.copy ins(%[[S0]] : tensor<8x8x16xbf16>)
// CHECK-NEXT: %[[S1:.*]] = tensor.extract_slice %[[A]][0, 8, 0] [8, 24, 16] [1, 1, 1]
// CHECK-NEXT: tensor.empty() : tensor<8x24x16xbf16>
// CHECK-NEXT: %[[P1:.*]] = linalg.copy ins(%[[S1]] : tensor<8x24x16xbf16>)
// CHECK-NEXT: %[[R:.*]] = overlap.tiles %[[C4]] : tensor<2x4x32x24xf32> (%[[T0:.*]] = [0, 0, 0, 0] [2, 4, 8, 24], %[[T1:.*]] = [0, 0, 8, 0] [2, 4, 24, 24]) {
// CHECK-NEXT: %[[X0:.*]] = overlap.all_to_all %[[P0]] on @ep grid_axes = [0] : tensor<8x8x16xbf16> -> tensor<8x8x16xbf16>
// CHECK-NEXT: %[[X04:.*]] = tensor.expand_shape %[[X0]] {{\[}}[0, 1], [2], [3]] output_shape [4, 2, 8, 16]
// Expert 0.
// CHECK-NEXT: %[[A00:.*]] = tensor.extract_slice %[[X04]][0, 0, 0, 0] [4, 1, 8, 16] [1, 1, 1, 1] : tensor<4x2x8x16xbf16> to tensor<4x8x16xbf16>
// CHECK-NEXT: %[[B0:.*]] = tensor.extract_slice %[[B]][0, 0, 0] [1, 16, 24] [1, 1, 1] : tensor<2x16x24xbf16> to tensor<16x24xbf16>
// CHECK-NEXT: %[[C00:.*]] = tensor.extract_slice %[[T0]][0, 0, 0, 0] [1, 4, 8, 24] [1, 1, 1, 1] : tensor<2x4x8x24xf32> to tensor<4x8x24xf32>
// CHECK-NEXT: %[[M00:.*]] = linalg.batch_matmul {{.*}} ins(%[[A00]], %[[B0]] : tensor<4x8x16xbf16>, tensor<16x24xbf16>) outs(%[[C00]] : tensor<4x8x24xf32>)
// CHECK-NEXT: %[[I00:.*]] = tensor.insert_slice %[[M00]] into %[[T0]][0, 0, 0, 0] [1, 4, 8, 24]
// Expert 1.
// CHECK-NEXT: %[[A01:.*]] = tensor.extract_slice %[[X04]][0, 1, 0, 0] [4, 1, 8, 16]
// CHECK-NEXT: %[[B1:.*]] = tensor.extract_slice %[[B]][1, 0, 0] [1, 16, 24]
// CHECK-NEXT: %[[C01:.*]] = tensor.extract_slice %[[I00]][1, 0, 0, 0] [1, 4, 8, 24]
// CHECK-NEXT: %[[M01:.*]] = linalg.batch_matmul {{.*}} ins(%[[A01]], %[[B1]] : {{.*}}) outs(%[[C01]] : tensor<4x8x24xf32>)
// CHECK-NEXT: %[[I01:.*]] = tensor.insert_slice %[[M01]] into %[[I00]][1, 0, 0, 0] [1, 4, 8, 24]
// CHECK-NOT: linalg.batch_matmul
// Tile 1: 24 tokens of every block.
// CHECK-NOT: overlap.yield
// CHECK: overlap.all_to_all %[[P1]] {{.*}} : tensor<8x24x16xbf16> -> tensor<8x24x16xbf16>
// CHECK-COUNT-2: linalg.batch_matmul {{.*}} outs(%{{.*}} : tensor<4x24x24xf32>)
// CHECK-NOT: linalg.batch_matmul
// CHECK: %[[I11:.*]] = tensor.insert_slice %{{.*}}[1, 0, 0, 0] [1, 4, 24, 24]
// CHECK-NEXT: overlap.yield %[[I01]], %[[I11]] : tensor<2x4x8x24xf32>, tensor<2x4x24x24xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[OUT:.*]] = tensor.collapse_shape %[[R]] {{\[}}[0], [1, 2], [3]] : tensor<2x4x32x24xf32> into tensor<2x128x24xf32>
// CHECK-NEXT: return %[[OUT]]
func.func @dispatch_experts(%a: tensor<8x32x16xbf16>, %b: tensor<2x16x24xbf16>,
                            %c: tensor<2x128x24xf32>) -> tensor<2x128x24xf32> {
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [64, 192], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<8x32x16xbf16>, tensor<2x16x24xbf16>, tensor<2x128x24xf32> -> tensor<2x128x24xf32>
  return %r : tensor<2x128x24xf32>
}

// -----

shard.grid @ep(shape = 4)

// Two experts per rank, combine, C not a fill: each expert's packed rows
// start as a copy of its rows of C (C viewed as E x G x Cap x N), written
// into its blocks of a G x E x q x N send buffer (where its GEMM then
// accumulates in place); block j of the send buffer goes back to rank j,
// and the exchange fills the tile's rows of the (G E) x Cap x N result.
// CHECK-LABEL: func.func @combine_experts
// CHECK-SAME: (%[[A:.*]]: tensor<2x128x24xf32>, %[[B:.*]]: tensor<2x24x16xf32>, %[[C:.*]]: tensor<2x128x16xf32>)
// CHECK: %[[A4:.*]] = tensor.expand_shape %[[A]] {{\[}}[0], [1, 2], [3]] output_shape [2, 4, 32, 24]
// CHECK-NEXT: %[[OUT:.*]] = tensor.empty() : tensor<8x32x16xf32>
// CHECK-NEXT: %[[R:.*]] = overlap.tiles %[[OUT]] : tensor<8x32x16xf32> (%{{.*}} = [0, 0, 0] [8, 8, 16], %{{.*}} = [0, 8, 0] [8, 24, 16]) {
// Expert 0 of tile 0.
// CHECK-NEXT: %[[A00:.*]] = tensor.extract_slice %[[A4]][0, 0, 0, 0] [1, 4, 8, 24] [1, 1, 1, 1] : tensor<2x4x32x24xf32> to tensor<4x8x24xf32>
// CHECK-NEXT: %[[B0:.*]] = tensor.extract_slice %[[B]][0, 0, 0] [1, 24, 16]
// CHECK-NEXT: %[[SEND:.*]] = tensor.empty() : tensor<4x2x8x16xf32>
// CHECK-NEXT: %[[E00:.*]] = tensor.extract_slice %[[SEND]][0, 0, 0, 0] [4, 1, 8, 16] [1, 1, 1, 1] : tensor<4x2x8x16xf32> to tensor<4x8x16xf32>
// CHECK-NEXT: %[[C4:.*]] = tensor.expand_shape %[[C]] {{\[}}[0], [1, 2], [3]] output_shape [2, 4, 32, 16]
// CHECK-NEXT: %[[CV00:.*]] = tensor.extract_slice %[[C4]][0, 0, 0, 0] [1, 4, 8, 16] [1, 1, 1, 1]
// CHECK-NEXT: %[[INIT00:.*]] = linalg.copy ins(%[[CV00]] : tensor<4x8x16xf32>) outs(%[[E00]] : tensor<4x8x16xf32>)
// CHECK-NEXT: %[[M00:.*]] = linalg.batch_matmul {{.*}} ins(%[[A00]], %[[B0]] : tensor<4x8x24xf32>, tensor<24x16xf32>) outs(%[[INIT00]] : tensor<4x8x16xf32>)
// CHECK-NEXT: %[[S0:.*]] = tensor.insert_slice %[[M00]] into %[[SEND]][0, 0, 0, 0] [4, 1, 8, 16]
// Expert 1 of tile 0: C is expanded once.
// CHECK-NEXT: tensor.extract_slice %[[A4]][1, 0, 0, 0] [1, 4, 8, 24]
// CHECK-NEXT: tensor.extract_slice %[[B]][1, 0, 0] [1, 24, 16]
// CHECK-NEXT: %[[E01:.*]] = tensor.extract_slice %[[S0]][0, 1, 0, 0] [4, 1, 8, 16]
// CHECK-NEXT: %[[CV01:.*]] = tensor.extract_slice %[[C4]][1, 0, 0, 0] [1, 4, 8, 16]
// CHECK-NEXT: linalg.copy ins(%[[CV01]] : tensor<4x8x16xf32>) outs(%[[E01]]
// CHECK-NEXT: %[[M01:.*]] = linalg.batch_matmul
// CHECK-NEXT: %[[S1:.*]] = tensor.insert_slice %[[M01]] into %[[S0]][0, 1, 0, 0] [4, 1, 8, 16]
// CHECK-NEXT: %[[FLAT:.*]] = tensor.collapse_shape %[[S1]] {{\[}}[0, 1], [2], [3]] : tensor<4x2x8x16xf32> into tensor<8x8x16xf32>
// CHECK-NEXT: %[[X0:.*]] = overlap.all_to_all %[[FLAT]] on @ep grid_axes = [0] : tensor<8x8x16xf32> -> tensor<8x8x16xf32>
// Tile 1: 24 tokens of every block, two experts.
// CHECK-NEXT: tensor.extract_slice %[[A4]][0, 0, 8, 0] [1, 4, 24, 24]
// CHECK-NOT: tensor.expand_shape %[[C]]
// CHECK-COUNT-2: linalg.batch_matmul {{.*}} outs(%{{.*}} : tensor<4x24x16xf32>)
// CHECK-NOT: linalg.batch_matmul
// CHECK: %[[X1:.*]] = overlap.all_to_all %{{.*}} : tensor<8x24x16xf32> -> tensor<8x24x16xf32>
// CHECK-NEXT: overlap.yield %[[X0]], %[[X1]] : tensor<8x8x16xf32>, tensor<8x24x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]] : tensor<8x32x16xf32>
func.func @combine_experts(%a: tensor<2x128x24xf32>, %b: tensor<2x24x16xf32>,
                           %c: tensor<2x128x16xf32>) -> tensor<8x32x16xf32> {
  %r = overlap.matmul_all_to_all %a, %b, %c on @ep grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [64, 192], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<2x128x24xf32>, tensor<2x24x16xf32>, tensor<2x128x16xf32> -> tensor<8x32x16xf32>
  return %r : tensor<8x32x16xf32>
}

// -----

shard.grid @ep(shape = 2)

// Three experts per rank on 2 ranks, one tile (strategy none): one
// exchange and three batched matmuls, one per expert.
// CHECK-LABEL: func.func @three_experts_one_tile
// CHECK: overlap.tiles %{{.*}} : tensor<3x2x16x8xf32> (%{{.*}} = [0, 0, 0, 0] [3, 2, 16, 8]) {
// CHECK-COUNT-1: overlap.all_to_all %{{.*}} : tensor<6x16x4xf32> -> tensor<6x16x4xf32>
// CHECK-COUNT-3: linalg.batch_matmul {{.*}} outs(%{{.*}} : tensor<2x16x8xf32>)
// CHECK-NOT: linalg.batch_matmul
// CHECK-NOT: overlap.all_to_all
// CHECK: overlap.yield
func.func @three_experts_one_tile(%a: tensor<6x16x4xf32>, %b: tensor<3x4x8xf32>,
                                  %c: tensor<3x32x8xf32>) -> tensor<3x32x8xf32> {
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [96], strategy = "none",
                                    bound = compute, predicted_us = 1.0, serial_us = 1.0>}
      : tensor<6x16x4xf32>, tensor<3x4x8xf32>, tensor<3x32x8xf32> -> tensor<3x32x8xf32>
  return %r : tensor<3x32x8xf32>
}

// -----

shard.grid @ep(shape = 4)

// Without a plan the op stays, and a remark says why.
// CHECK-LABEL: func.func @no_plan
// CHECK: overlap.matmul_all_to_all
// CHECK-NOT: overlap.tiles
func.func @no_plan(%a: tensor<2x64x48xf32>, %b: tensor<2x48x32xf32>,
                   %c: tensor<2x64x32xf32>) -> tensor<8x16x32xf32> {
  // expected-remark @+1 {{not decomposed: no 'overlap.plan' attribute (run overlap-plan first)}}
  %r = overlap.matmul_all_to_all %a, %b, %c on @ep grid_axes = [0]
      : tensor<2x64x48xf32>, tensor<2x48x32xf32>, tensor<2x64x32xf32> -> tensor<8x16x32xf32>
  return %r : tensor<8x16x32xf32>
}

// -----

shard.grid @dyn(shape = ?)

// The tiles address every rank's block, so the group size must be static.
// CHECK-LABEL: func.func @dynamic_group
// CHECK: overlap.all_to_all_matmul
// CHECK-NOT: overlap.tiles
func.func @dynamic_group(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>,
                         %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  // expected-remark @+1 {{not decomposed: the group size of @dyn is not static}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @dyn grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [64], strategy = "none",
                                    bound = comm, predicted_us = 1.0, serial_us = 1.0>}
      : tensor<64x32xf32>, tensor<32x48xf32>, tensor<64x48xf32> -> tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}
