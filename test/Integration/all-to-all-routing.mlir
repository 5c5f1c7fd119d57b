// The all-to-alls route every token to the right expert and back, checked
// without the unsplit reference: rank j's expert e (global expert
// g = j E + e) scales its tokens by 1 + g (an up-projection of (1 + g) I,
// a down-projection of I), so after dispatch, both projections and
// combine every token of global expert g comes back as (1 + g) x. The
// program returns y - (1 + g) x, which must be exactly zero for every
// plan: it is compared with Inputs/all-to-all-zeros.mlir, a program of
// the same signature that returns zeros.
//
// RUN: overlap-compile %S/Inputs/all-to-all-zeros.mlir --strategy none --emit=so -o %t.zeros.so
// RUN: overlap-compile %s --strategy none --emit=so -o %t.none.so
// RUN: overlap-exec %t.none.so --ref %t.zeros.so --ranks 4 | FileCheck %s
// RUN: overlap-compile %s --strategy uniform:2 --emit=so -o %t.u2.so
// RUN: overlap-exec %t.u2.so --ref %t.zeros.so --ranks 4 --seed 3 | FileCheck %s
// RUN: overlap-compile %s --strategy uniform:4 --emit=so -o %t.u4.so
// RUN: overlap-exec %t.u4.so --ref %t.zeros.so --ranks 4 --seed 5 | FileCheck %s
// The check can fail: the same program scaling by 2 + g instead differs
// from zeros.
// RUN: sed -e 's/%one = arith.constant 1.0 : f32/%one = arith.constant 2.0 : f32/' %s > %t.wrong.mlir
// RUN: overlap-compile %t.wrong.mlir --strategy uniform:2 --emit=so -o %t.wrong.so
// RUN: not overlap-exec %t.wrong.so --ref %t.zeros.so --ranks 4 | FileCheck %s --check-prefix=WRONG

// CHECK: result0 {{.*}} bit-identical
// CHECK: OK
// WRONG: result0 {{.*}} max abs err {{[1-9]}}
// WRONG: MISMATCH

shard.grid @ep(shape = 4)

#id3 = affine_map<(e, i, j) -> (e, i, j)>

func.func @routing(%x: tensor<8x64x16xf32>) -> tensor<8x64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %rank = shard.process_linear_index on @ep : index
  %experts = arith.constant 2 : index
  %first = arith.muli %rank, %experts : index
  // w1[e] = (1 + rank E + e) I, w2[e] = I.
  %ew = tensor.empty() : tensor<2x16x16xf32>
  %w1 = linalg.generic {indexing_maps = [#id3], iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%ew : tensor<2x16x16xf32>) {
    ^bb0(%out: f32):
      %e = linalg.index 0 : index
      %i = linalg.index 1 : index
      %j = linalg.index 2 : index
      %g = arith.addi %first, %e : index
      %gi = arith.index_cast %g : index to i32
      %gf = arith.sitofp %gi : i32 to f32
      %s = arith.addf %gf, %one : f32
      %diag = arith.cmpi eq, %i, %j : index
      %v = arith.select %diag, %s, %zero : f32
      linalg.yield %v : f32
  } -> tensor<2x16x16xf32>
  %w2 = linalg.generic {indexing_maps = [#id3], iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%ew : tensor<2x16x16xf32>) {
    ^bb0(%out: f32):
      %i = linalg.index 1 : index
      %j = linalg.index 2 : index
      %diag = arith.cmpi eq, %i, %j : index
      %v = arith.select %diag, %one, %zero : f32
      linalg.yield %v : f32
  } -> tensor<2x16x16xf32>
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<8x64x16xf32> -> tensor<2x256x16xf32>
  %e1 = tensor.empty() : tensor<2x256x16xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x256x16xf32>) -> tensor<2x256x16xf32>
  %h = linalg.batch_matmul ins(%t, %w1 : tensor<2x256x16xf32>, tensor<2x16x16xf32>)
                           outs(%c1 : tensor<2x256x16xf32>) -> tensor<2x256x16xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x256x16xf32>) -> tensor<2x256x16xf32>
  %y = linalg.batch_matmul ins(%h, %w2 : tensor<2x256x16xf32>, tensor<2x16x16xf32>)
                           outs(%c2 : tensor<2x256x16xf32>) -> tensor<2x256x16xf32>
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x256x16xf32> -> tensor<8x64x16xf32>
  // z[g] - (1 + g) x[g]
  %ed = tensor.empty() : tensor<8x64x16xf32>
  %d = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%z, %x : tensor<8x64x16xf32>, tensor<8x64x16xf32>) outs(%ed : tensor<8x64x16xf32>) {
    ^bb0(%zv: f32, %xv: f32, %out: f32):
      %g = linalg.index 0 : index
      %gi = arith.index_cast %g : index to i32
      %gf = arith.sitofp %gi : i32 to f32
      %s = arith.addf %gf, %one : f32
      %sx = arith.mulf %s, %xv : f32
      %r = arith.subf %zv, %sx : f32
      linalg.yield %r : f32
  } -> tensor<8x64x16xf32>
  return %d : tensor<8x64x16xf32>
}
