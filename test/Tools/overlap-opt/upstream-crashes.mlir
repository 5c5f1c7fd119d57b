// Inputs that crash upstream's verifier or parser (mlir-opt dies of
// SIGFPE in shard::AllToAllOp::verifySymbolUses, of SIGSEGV in the parser)
// are errors in our tools, checked before upstream's code runs
// (compiler::checkGridExtents, checkNestingDepth). The parser side is in
// input-depth.test.
//
// The check runs before MlirOptMain (which cannot take a hook between
// its parser and its verifier), so its errors are not -verify-diagnostics'.
// RUN: not overlap-opt %s -split-input-file 2>&1 | FileCheck %s
// RUN: not overlap-opt %S/Inputs/zero-extent.mlir 2>&1 | FileCheck %s --check-prefix=WHOLE
// WHOLE: zero-extent.mlir:3:1: error: 'shard.grid' op @g has extent 0 on axis 1 (shape 2x0): every axis of a grid needs at least one process
// WHOLE-NEXT: shard.grid @g(shape = 2x0)

// CHECK: upstream-crashes.mlir:{{[0-9]+}} offset :{{[0-9]+}}:1: error: 'shard.grid' op @g has extent 0 on axis 1 (shape 2x0): every axis of a grid needs at least one process
shard.grid @g(shape = 2x0)

func.func @all_to_all(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = shard.all_to_all %x on @g grid_axes = [1] split_axis = 0 concat_axis = 1
    : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// CHECK: error: 'shard.grid' op @h has extent 0 on axis 0 (shape 0x?): every axis of a grid needs at least one process
shard.grid @h(shape = 0x?)

func.func @all_to_all_dynamic(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = shard.all_to_all %x on @h grid_axes = [0] split_axis = 1 concat_axis = 0
    : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
// CHECK-NOT: error
