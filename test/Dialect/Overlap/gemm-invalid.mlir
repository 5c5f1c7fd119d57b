// RUN: overlap-opt %s -split-input-file -verify-diagnostics

func.func @k_mismatch(%a: tensor<8x16xf32>, %b: tensor<12x4xf32>, %c: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @below {{k of a and b disagree: 16 and 12 ('tensor<8x16xf32>', 'tensor<12x4xf32>' into 'tensor<8x4xf32>')}}
  %r = overlap.gemm %a, %b into %c : tensor<8x16xf32>, tensor<12x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

func.func @transposed_b_columns(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %c: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @below {{k of a and b disagree: 16 and 4 ('tensor<8x16xf32>', 'tensor<16x4xf32>' into 'tensor<8x4xf32>', b transposed)}}
  %r = overlap.gemm %a, %b into %c {transpose_b} : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

func.func @c_type(%a: tensor<8x16xf16>, %b: tensor<16x4xf16>, %c: tensor<8x4xbf16>) -> tensor<8x4xbf16> {
  // expected-error @below {{needs init of f32 or a's element type 'f16', not 'bf16'}}
  %r = overlap.gemm %a, %b into %c : tensor<8x16xf16>, tensor<16x4xf16>, tensor<8x4xbf16> -> tensor<8x4xbf16>
  return %r : tensor<8x4xbf16>
}

// -----

func.func @mixed(%a: memref<8x16xf32>, %b: tensor<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @below {{needs a, b and init all tensors or all memrefs}}
  overlap.gemm %a, %b into %c : memref<8x16xf32>, tensor<16x4xf32>, memref<8x4xf32>
  return
}

// -----

func.func @batch(%a: memref<3x8x16xf32>, %b: memref<2x16x4xf32>, %c: memref<3x8x4xf32>) {
  // expected-error @below {{the batch of b and init disagree: 2 and 3}}
  overlap.gemm %a, %b into %c {accumulate} : memref<3x8x16xf32>, memref<2x16x4xf32>, memref<3x8x4xf32>
  return
}
