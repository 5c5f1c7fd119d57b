// RUN: overlap-opt %s --overlap-reorder-chains="move-collectives=true" --remarks-filter=overlap -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=MOVE
// RUN: overlap-opt %s --overlap-reorder-chains -split-input-file 2>/dev/null | FileCheck %s


shard.grid @tp(shape = 8)

// move-collectives: all_reduce(X) * W with W shrinking 8192 -> 1024 columns
// becomes one fused matmul_all_reduce over X * W. Off by default.
// CHECK-LABEL: func.func @move
// CHECK: shard.all_reduce
// CHECK: linalg.matmul
// MOVE-LABEL: func.func @move
// MOVE-NOT: shard.all_reduce
// MOVE: %[[R:.*]] = overlap.matmul_all_reduce %arg0, %arg1, %{{.*}} on @tp grid_axes = [0] : tensor<1024x8192xf16>, tensor<8192x1024xf16>, tensor<1024x1024xf16> -> tensor<1024x1024xf16>
// MOVE: return %[[R]]
func.func @move(%x: tensor<1024x8192xf16>, %w: tensor<8192x1024xf16>) -> tensor<1024x1024xf16> {
  %r = shard.all_reduce %x on @tp grid_axes = [0] : tensor<1024x8192xf16> -> tensor<1024x8192xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<1024x1024xf16>
  %z = linalg.fill ins(%zero : f16) outs(%e : tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  // expected-remark-re @+1 {{all-reduce moved after the product with the replicated right factor: 16777216 -> 2097152 bytes on the wire, predicted {{.*}} us}}
  %p = linalg.matmul ins(%r, %w : tensor<1024x8192xf16>, tensor<8192x1024xf16>) outs(%z : tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  return %p : tensor<1024x1024xf16>
}

// -----

shard.grid @tp(shape = 8)

// A product that widens the tensor is left alone, with a remark.
// MOVE-LABEL: func.func @widening
// MOVE: shard.all_reduce
func.func @widening(%x: tensor<1024x1024xf16>, %w: tensor<1024x8192xf16>) -> tensor<1024x8192xf16> {
  // expected-remark @+1 {{all-reduce not moved: the product with the right factor does not shrink the tensor (N = 1024 -> 8192 columns)}}
  %r = shard.all_reduce %x on @tp grid_axes = [0] : tensor<1024x1024xf16> -> tensor<1024x1024xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<1024x8192xf16>
  %z = linalg.fill ins(%zero : f16) outs(%e : tensor<1024x8192xf16>) -> tensor<1024x8192xf16>
  %p = linalg.matmul ins(%r, %w : tensor<1024x1024xf16>, tensor<1024x8192xf16>) outs(%z : tensor<1024x8192xf16>) -> tensor<1024x8192xf16>
  return %p : tensor<1024x8192xf16>
}

// -----

shard.grid @tp(shape = 8)

// The collective of a fused op moves too: the local product stays a plain
// matmul and the shrinking product becomes the fused op.
// MOVE-LABEL: func.func @fused
// MOVE: %[[T:.*]] = linalg.matmul ins(%arg0, %arg1 : tensor<1024x512xf16>, tensor<512x8192xf16>) outs(%arg2
// MOVE: overlap.matmul_all_reduce %[[T]], %arg3, %{{.*}} on @tp grid_axes = [0] : tensor<1024x8192xf16>, tensor<8192x1024xf16>, tensor<1024x1024xf16>
func.func @fused(%a: tensor<1024x512xf16>, %b: tensor<512x8192xf16>, %c: tensor<1024x8192xf16>, %w: tensor<8192x1024xf16>) -> tensor<1024x1024xf16> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x512xf16>, tensor<512x8192xf16>, tensor<1024x8192xf16> -> tensor<1024x8192xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<1024x1024xf16>
  %z = linalg.fill ins(%zero : f16) outs(%e : tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  // expected-remark-re @+1 {{all-reduce moved after the product with the replicated right factor: 16777216 -> 2097152 bytes on the wire, predicted {{.*}} us}}
  %p = linalg.matmul ins(%r, %w : tensor<1024x8192xf16>, tensor<8192x1024xf16>) outs(%z : tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  return %p : tensor<1024x1024xf16>
}
