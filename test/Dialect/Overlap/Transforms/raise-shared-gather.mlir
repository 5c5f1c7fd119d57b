// RUN: overlap-opt %s --overlap-raise -split-input-file | FileCheck %s
// RUN: overlap-opt %s --overlap-raise --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// One gathered activation feeding several contractions as users write them:
// the products are used (SiLU, a product of two, a scale of Q) between the
// matmuls, not returned. The matmuls merge in place of the first one (the
// weights side by side along N) and the gather is fused once.

shard.grid @tp(shape = 4)

#id = affine_map<(i, j) -> (i, j)>

// Sequence-parallel Llama FFN: gather -> gate, up -> silu(gate) * up ->
// down -> all-reduce. SiLU reads the gate's product before the up
// projection is computed.
// CHECK-LABEL: func.func @swiglu_all_reduce
// CHECK: %[[W0:.*]] = tensor.insert_slice %arg1 into %{{.*}}[0, 0] [32, 16] [1, 1] : tensor<32x16xf32> into tensor<32x32xf32>
// CHECK: %[[W1:.*]] = tensor.insert_slice %arg2 into %[[W0]][0, 16] [32, 16] [1, 1] : tensor<32x16xf32> into tensor<32x32xf32>
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %arg0, %[[W1]], %{{.*}} on @tp grid_axes = [0] : tensor<16x32xf32>, tensor<32x32xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
// CHECK: %[[G:.*]] = tensor.extract_slice %[[P]][0, 0] [64, 16] [1, 1]
// CHECK: %[[U:.*]] = tensor.extract_slice %[[P]][0, 16] [64, 16] [1, 1]
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<64x16xf32>)
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[U]] : tensor<64x16xf32>, tensor<64x16xf32>)
// CHECK: overlap.matmul_all_reduce %[[H]], %arg3, %{{.*}} on @tp
// CHECK-NOT: shard.all
// REMARK: Function=swiglu_all_reduce | Remark="merged 2 matmuls of one gathered operand into one
// REMARK: Function=swiglu_all_reduce | Remark="raised to overlap.matmul_all_reduce"
// REMARK: Function=swiglu_all_reduce | Remark="raised to overlap.all_gather_matmul"
func.func @swiglu_all_reduce(%x: tensor<16x32xf32>, %w1: tensor<32x16xf32>, %w2: tensor<32x16xf32>, %w3: tensor<16x32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<16x32xf32> -> tensor<64x32xf32>
  %e1 = tensor.empty() : tensor<64x16xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %gate = linalg.matmul ins(%g, %w1 : tensor<64x32xf32>, tensor<32x16xf32>) outs(%c1 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %es = tensor.empty() : tensor<64x16xf32>
  %silu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%gate : tensor<64x16xf32>) outs(%es : tensor<64x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %d = arith.addf %one, %ex : f32
    %r = arith.divf %a, %d : f32
    linalg.yield %r : f32
  } -> tensor<64x16xf32>
  %e2 = tensor.empty() : tensor<64x16xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %up = linalg.matmul ins(%g, %w2 : tensor<64x32xf32>, tensor<32x16xf32>) outs(%c2 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %eh = tensor.empty() : tensor<64x16xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%silu, %up : tensor<64x16xf32>, tensor<64x16xf32>) outs(%eh : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<64x16xf32>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %c3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %down = linalg.matmul ins(%h, %w3 : tensor<64x16xf32>, tensor<16x32xf32>) outs(%c3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r = shard.all_reduce %down on @tp grid_axes = [0] : tensor<64x32xf32> -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----

shard.grid @tp(shape = 4)

#id = affine_map<(i, j) -> (i, j)>

// The same FFN ending in a reduce-scatter (back to sequence parallel), in
// bf16 with f32 accumulators rounded after each product; the up weight is
// a PyTorch-layout [out, in] one, transposed after the gate's matmul: the
// transpose moves up with the merged matmul.
// CHECK-LABEL: func.func @swiglu_reduce_scatter
// CHECK: linalg.transpose ins(%arg2 : tensor<16x32xbf16>)
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %arg0, %{{.*}}, %{{.*}} on @tp grid_axes = [0] : tensor<16x32xbf16>, tensor<32x32xbf16>, tensor<64x32xf32> -> tensor<64x32xf32>
// CHECK-DAG: tensor.extract_slice %[[P]][0, 0] [64, 16] [1, 1]
// CHECK-DAG: tensor.extract_slice %[[P]][0, 16] [64, 16] [1, 1]
// CHECK: overlap.matmul_reduce_scatter %{{.*}}, %arg3, %{{.*}} on @tp grid_axes = [0] : tensor<64x16xbf16>, tensor<16x32xbf16>, tensor<64x32xf32> -> tensor<16x32xf32>
// CHECK-NOT: shard.all
func.func @swiglu_reduce_scatter(%x: tensor<16x32xbf16>, %w1: tensor<32x16xbf16>, %w2t: tensor<16x32xbf16>, %w3: tensor<16x32xbf16>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<16x32xbf16> -> tensor<64x32xbf16>
  %e1 = tensor.empty() : tensor<64x16xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %gate = linalg.matmul ins(%g, %w1 : tensor<64x32xbf16>, tensor<32x16xbf16>) outs(%c1 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %es = tensor.empty() : tensor<64x16xbf16>
  %silu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%gate : tensor<64x16xf32>) outs(%es : tensor<64x16xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %d = arith.addf %one, %ex : f32
    %r = arith.divf %a, %d : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x16xbf16>
  %et = tensor.empty() : tensor<32x16xbf16>
  %w2 = linalg.transpose ins(%w2t : tensor<16x32xbf16>) outs(%et : tensor<32x16xbf16>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<64x16xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %up = linalg.matmul ins(%g, %w2 : tensor<64x32xbf16>, tensor<32x16xbf16>) outs(%c2 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %eh = tensor.empty() : tensor<64x16xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%silu, %up : tensor<64x16xbf16>, tensor<64x16xf32>) outs(%eh : tensor<64x16xbf16>) {
  ^bb0(%a: bf16, %b: f32, %o: bf16):
    %u = arith.truncf %b : f32 to bf16
    %m = arith.mulf %a, %u : bf16
    linalg.yield %m : bf16
  } -> tensor<64x16xbf16>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %c3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %down = linalg.matmul ins(%h, %w3 : tensor<64x16xbf16>, tensor<16x32xbf16>) outs(%c3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r = shard.reduce_scatter %down on @tp grid_axes = [0] scatter_axis = 0 : tensor<64x32xf32> -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// -----

shard.grid @tp(shape = 4)

#id = affine_map<(i, j) -> (i, j)>

// Q, K and V of one gathered activation, Q scaled as soon as it is
// computed, the three feeding attention scores and their weighting.
// CHECK-LABEL: func.func @qkv_attention
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %arg0, %{{.*}}, %{{.*}} on @tp grid_axes = [0] : tensor<16x32xf32>, tensor<32x24xf32>, tensor<64x24xf32> -> tensor<64x24xf32>
// CHECK: %[[Q:.*]] = tensor.extract_slice %[[P]][0, 0] [64, 8] [1, 1]
// CHECK: %[[K:.*]] = tensor.extract_slice %[[P]][0, 8] [64, 8] [1, 1]
// CHECK: %[[V:.*]] = tensor.extract_slice %[[P]][0, 16] [64, 8] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[Q]] : tensor<64x8xf32>)
// CHECK: linalg.transpose ins(%[[K]] : tensor<64x8xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %[[V]] : tensor<64x64xf32>, tensor<64x8xf32>)
// CHECK-NOT: shard.all
// REMARK: Function=qkv_attention | Remark="merged 3 matmuls of one gathered operand into one
func.func @qkv_attention(%x: tensor<16x32xf32>, %wq: tensor<32x8xf32>, %wk: tensor<32x8xf32>, %wv: tensor<32x8xf32>) -> tensor<64x8xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.35355339 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<16x32xf32> -> tensor<64x32xf32>
  %e1 = tensor.empty() : tensor<64x8xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %q = linalg.matmul ins(%g, %wq : tensor<64x32xf32>, tensor<32x8xf32>) outs(%c1 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %eq = tensor.empty() : tensor<64x8xf32>
  %qs = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%q : tensor<64x8xf32>) outs(%eq : tensor<64x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  } -> tensor<64x8xf32>
  %e2 = tensor.empty() : tensor<64x8xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %k = linalg.matmul ins(%g, %wk : tensor<64x32xf32>, tensor<32x8xf32>) outs(%c2 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %ekt = tensor.empty() : tensor<8x64xf32>
  %kt = linalg.transpose ins(%k : tensor<64x8xf32>) outs(%ekt : tensor<8x64xf32>) permutation = [1, 0]
  %es = tensor.empty() : tensor<64x64xf32>
  %cs = linalg.fill ins(%zero : f32) outs(%es : tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = linalg.matmul ins(%qs, %kt : tensor<64x8xf32>, tensor<8x64xf32>) outs(%cs : tensor<64x64xf32>) -> tensor<64x64xf32>
  %e3 = tensor.empty() : tensor<64x8xf32>
  %c3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %v = linalg.matmul ins(%g, %wv : tensor<64x32xf32>, tensor<32x8xf32>) outs(%c3 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %e4 = tensor.empty() : tensor<64x8xf32>
  %c4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %o = linalg.matmul ins(%s, %v : tensor<64x64xf32>, tensor<64x8xf32>) outs(%c4 : tensor<64x8xf32>) -> tensor<64x8xf32>
  return %o : tensor<64x8xf32>
}

// -----

shard.grid @tp(shape = 4)

#id = affine_map<(i, j) -> (i, j)>

// The gathered activation also feeds a residual add. The fused op does not
// yield the rows it gathers, so the add keeps a plain all-gather of them,
// moved after the fused op (it then queues behind the tile gathers, beside
// the GEMMs).
// CHECK-LABEL: func.func @residual_user
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %arg0, %{{.*}}, %{{.*}} on @tp grid_axes = [0] : tensor<16x32xf32>, tensor<32x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
// CHECK: %[[G:.*]] = shard.all_gather %arg0 on @tp grid_axes = [0] gather_axis = 0
// CHECK: linalg.generic {{.*}} ins(%[[G]], %{{.*}} : tensor<64x32xf32>, tensor<64x32xf32>)
// CHECK-NOT: linalg.matmul ins(%[[G]]
// REMARK: Function=residual_user | Remark="merged 2 matmuls
// REMARK: Function=residual_user | Remark="raised to overlap.matmul_all_reduce"
// REMARK: Function=residual_user | Remark="raised to overlap.all_gather_matmul"
// REMARK: Function=residual_user | Remark="the gathered rows have 1 other use(s), which keep a plain all-gather of them, moved after the fused op
func.func @residual_user(%x: tensor<16x32xf32>, %w1: tensor<32x32xf32>, %w2: tensor<32x32xf32>, %w3: tensor<32x32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<16x32xf32> -> tensor<64x32xf32>
  %e1 = tensor.empty() : tensor<64x32xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %a = linalg.matmul ins(%g, %w1 : tensor<64x32xf32>, tensor<32x32xf32>) outs(%c1 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %b = linalg.matmul ins(%g, %w2 : tensor<64x32xf32>, tensor<32x32xf32>) outs(%c2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %eh = tensor.empty() : tensor<64x32xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<64x32xf32>, tensor<64x32xf32>) outs(%eh : tensor<64x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<64x32xf32>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %c3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %d = linalg.matmul ins(%h, %w3 : tensor<64x32xf32>, tensor<32x32xf32>) outs(%c3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r = shard.all_reduce %d on @tp grid_axes = [0] : tensor<64x32xf32> -> tensor<64x32xf32>
  %es = tensor.empty() : tensor<64x32xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%g, %r : tensor<64x32xf32>, tensor<64x32xf32>) outs(%es : tensor<64x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<64x32xf32>
  return %sum : tensor<64x32xf32>
}

// -----

shard.grid @tp(shape = 4)

// A user of the gathered rows before the matmul: the gather stays where it
// is, the matmul is fused all the same.
// CHECK-LABEL: func.func @user_before_matmul
// CHECK: %[[G:.*]] = shard.all_gather %arg0
// CHECK: tensor.extract_slice %[[G]]
// CHECK: overlap.all_gather_matmul %arg0, %arg1, %arg2 on @tp
// REMARK: Function=user_before_matmul | Remark="the gathered rows have 1 other use(s), which keep a plain all-gather of them (in place: a user comes before the fused op)"
func.func @user_before_matmul(%x: tensor<16x32xf32>, %w: tensor<32x16xf32>, %c: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<8x32xf32>) {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<16x32xf32> -> tensor<64x32xf32>
  %first = tensor.extract_slice %g[0, 0] [8, 32] [1, 1] : tensor<64x32xf32> to tensor<8x32xf32>
  %p = linalg.matmul ins(%g, %w : tensor<64x32xf32>, tensor<32x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %p, %first : tensor<64x16xf32>, tensor<8x32xf32>
}

// -----

shard.grid @tp(shape = 4)

// Two matmuls that do not merge (one accumulates into an argument, not a
// fill): fusing each would gather the rows twice, so neither is.
// CHECK-LABEL: func.func @unmergeable
// CHECK: shard.all_gather
// CHECK-NOT: overlap.all_gather_matmul
// REMARK-COUNT-2: Function=unmergeable | Reason="not raised to a fused overlap op: the gathered left operand also feeds 1 other matmul(s) that could not be merged with this one
func.func @unmergeable(%x: tensor<16x32xf32>, %w1: tensor<32x16xf32>, %w2: tensor<32x16xf32>, %c: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<16x32xf32> -> tensor<64x32xf32>
  %p1 = linalg.matmul ins(%g, %w1 : tensor<64x32xf32>, tensor<32x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  %e = tensor.empty() : tensor<64x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %p2 = linalg.matmul ins(%g, %w2 : tensor<64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %p1, %p2 : tensor<64x16xf32>, tensor<64x16xf32>
}

// -----

shard.grid @tp(shape = 4)

#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (k, n)>
#y = affine_map<(b, s, n, k) -> (b, s, n)>
#id = affine_map<(b, s, h) -> (b, s, h)>

// [b, s, h] with b = 2, gathered along s, gate and up as contractions of
// the gathered activation, which a residual add also reads. The transpose
// normalization writes for the strided rows gets a gather of its own (the
// add keeps the first, moved after the fused op) and the projections merge
// and fuse on it.
// CHECK-LABEL: func.func @bsh_residual
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<2x16x32xf32>)
// CHECK: %[[L:.*]] = tensor.collapse_shape %[[T]] {{\[\[}}0, 1], [2]] : tensor<16x2x32xf32> into tensor<32x32xf32>
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %[[L]], %{{.*}}, %{{.*}} on @tp grid_axes = [0] : tensor<32x32xf32>, tensor<32x32xf32>, tensor<128x32xf32> -> tensor<128x32xf32>
// CHECK-NEXT: %[[G:.*]] = shard.all_gather %arg0 on @tp grid_axes = [0] gather_axis = 1 : tensor<2x16x32xf32> -> tensor<2x64x32xf32>
// CHECK: linalg.generic {{.*}} ins(%[[G]], %arg3 : tensor<2x64x32xf32>, tensor<2x64x32xf32>)
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @bsh_residual(%x: tensor<2x16x32xf32>, %w1: tensor<32x16xf32>, %w2: tensor<32x16xf32>, %r: tensor<2x64x32xf32>) -> (tensor<2x64x16xf32>, tensor<2x64x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<2x16x32xf32> -> tensor<2x64x32xf32>
  %e1 = tensor.empty() : tensor<2x64x16xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  %gate = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%g, %w1 : tensor<2x64x32xf32>, tensor<32x16xf32>) outs(%c1 : tensor<2x64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  %e2 = tensor.empty() : tensor<2x64x16xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  %up = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%g, %w2 : tensor<2x64x32xf32>, tensor<32x16xf32>) outs(%c2 : tensor<2x64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  %eh = tensor.empty() : tensor<2x64x16xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%gate, %up : tensor<2x64x16xf32>, tensor<2x64x16xf32>) outs(%eh : tensor<2x64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x64x16xf32>
  %es = tensor.empty() : tensor<2x64x32xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g, %r : tensor<2x64x32xf32>, tensor<2x64x32xf32>) outs(%es : tensor<2x64x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x64x32xf32>
  return %h, %sum : tensor<2x64x16xf32>, tensor<2x64x32xf32>
}
