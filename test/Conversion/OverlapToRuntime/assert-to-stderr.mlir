// RUN: overlap-opt %s --overlap-assert-to-stderr | FileCheck %s

// A failed check calls the runtime's overlap_check_failed with its message
// (which fails the rank inside a guarded call, else writes it to stderr and
// aborts); two checks with one message share its global.
// CHECK-DAG: llvm.func @overlap_check_failed(!llvm.ptr, i64)
// CHECK-DAG: llvm.mlir.global internal constant @overlap_assert_msg_0("overlap: run-time check failed: size not divisible\0A")
// CHECK-NOT: llvm.mlir.global internal constant @overlap_assert_msg_1
// CHECK-LABEL: func.func @f
// CHECK: cf.cond_br %{{.*}}, ^[[OK:.*]], ^[[FAIL:.*]]
// CHECK: ^[[FAIL]]:
// CHECK: %[[M:.*]] = llvm.mlir.addressof @overlap_assert_msg_0
// CHECK: %[[N:.*]] = llvm.mlir.constant(51 : i64)
// CHECK: llvm.call @overlap_check_failed(%[[M]], %[[N]])
// CHECK: llvm.unreachable
// CHECK-NOT: cf.assert
func.func @f(%a: i1, %b: i1) {
  cf.assert %a, "size not divisible"
  cf.assert %b, "size not divisible"
  return
}
