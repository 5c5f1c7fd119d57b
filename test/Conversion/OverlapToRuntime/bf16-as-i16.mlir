// RUN: overlap-opt %s --overlap-bf16-as-i16 --split-input-file | FileCheck %s

// Constants (scalar and dense), globals, loads, stores, selects, GEPs and
// block arguments of bf16 become i16 of the same bits; no bf16 is left.
// CHECK: llvm.mlir.global private constant @k(dense<[-32768, 32640, 32704, 1]> : tensor<4xi16>) {{.*}} : !llvm.array<4 x i16>
// CHECK-LABEL: llvm.func @moves
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: i1, %{{.*}}: i16) -> i16
// CHECK: llvm.mlir.constant(-32768 : i16) : i16
// CHECK: llvm.getelementptr %{{.*}}[1] : (!llvm.ptr) -> !llvm.ptr, i16
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> i16
// CHECK: llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i16
// CHECK: llvm.store %{{.*}}, %{{.*}} : i16, !llvm.ptr
// CHECK: ^bb1(%{{.*}}: i16):
// CHECK-NOT: bf16
llvm.mlir.global private constant @k(dense<[-0.0, 0x7F80, 0x7FC0, 0x0001]> : tensor<4xbf16>) {addr_space = 0 : i32} : !llvm.array<4 x bf16>
llvm.func @moves(%p: !llvm.ptr, %c: i1, %y: bf16) -> bf16 {
  %z = llvm.mlir.constant(-0.0 : bf16) : bf16
  %q = llvm.getelementptr %p[1] : (!llvm.ptr) -> !llvm.ptr, bf16
  %x = llvm.load %q : !llvm.ptr -> bf16
  %s = llvm.select %c, %x, %z : i1, bf16
  llvm.store %s, %p : bf16, !llvm.ptr
  llvm.br ^bb1(%y : bf16)
^bb1(%r: bf16):
  llvm.return %r : bf16
}

// -----

// A bit cast between bf16 and i16 (what overlap-expand-arith's integer
// rounding ends with) is gone; an op with bf16 semantics keeps bf16 behind
// bit casts.
// CHECK-LABEL: llvm.func @casts
// CHECK-NEXT: llvm.store %arg0, %arg1 : i16, !llvm.ptr
// CHECK-LABEL: llvm.func @semantics
// CHECK: %[[A:.*]] = llvm.bitcast %arg0 : i16 to bf16
// CHECK: %[[F:.*]] = llvm.fneg %[[A]] : bf16
// CHECK: %[[B:.*]] = llvm.bitcast %[[F]] : bf16 to i16
// CHECK: llvm.return %[[B]] : i16
llvm.func @casts(%bits: i16, %p: !llvm.ptr) {
  %b = llvm.bitcast %bits : i16 to bf16
  llvm.store %b, %p : bf16, !llvm.ptr
  llvm.return
}
llvm.func @semantics(%x: bf16) -> bf16 {
  %n = llvm.fneg %x : bf16
  llvm.return %n : bf16
}
