// RUN: overlap-opt %s --overlap-assert-to-stderr | FileCheck %s

// A failed check writes its message to stderr (fd 2) and aborts; two
// checks with one message share its global.
// CHECK-DAG: llvm.func @write(i32, !llvm.ptr, i64) -> i64
// CHECK-DAG: llvm.func @abort()
// CHECK-DAG: llvm.mlir.global internal constant @overlap_assert_msg_0("overlap: run-time check failed: size not divisible\0A")
// CHECK-NOT: llvm.mlir.global internal constant @overlap_assert_msg_1
// CHECK-LABEL: func.func @f
// CHECK: cf.cond_br %{{.*}}, ^[[OK:.*]], ^[[FAIL:.*]]
// CHECK: ^[[FAIL]]:
// CHECK: %[[M:.*]] = llvm.mlir.addressof @overlap_assert_msg_0
// CHECK: %[[FD:.*]] = llvm.mlir.constant(2 : i32)
// CHECK: llvm.call @write(%[[FD]], %{{.*}}, %{{.*}})
// CHECK: llvm.call @abort()
// CHECK: llvm.unreachable
// CHECK-NOT: cf.assert
func.func @f(%a: i1, %b: i1) {
  cf.assert %a, "size not divisible"
  cf.assert %b, "size not divisible"
  return
}
