// RUN: overlap-opt %s --overlap-check-allocations | FileCheck %s

// A size from the inputs: checked before the allocation (non-negative, the
// byte count under 2^62 without multiplying past it), and the block after
// it (not null unless it holds no element).
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[N:.*]]: index)
// CHECK: arith.cmpi sge, %[[N]], %{{.*}} : index
// CHECK: arith.divsi %{{.*}}, %{{.*}} : index
// CHECK: cf.assert %{{.*}}, "cannot allocate memref<4x?xf32> at {{.*}}check-allocations.mlir:16:8: a size from the inputs is negative or the buffer would be larger than 2^62 bytes"
// CHECK-NEXT: %[[M:.*]] = memref.alloc(%[[N]]) : memref<4x?xf32>
// CHECK-NEXT: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[M]]
// CHECK: arith.cmpi ne, %[[P]]
// CHECK: cf.assert %{{.*}}, "cannot allocate memref<4x?xf32> at {{.*}}check-allocations.mlir:16:8: out of memory"
func.func @dynamic(%n: index) -> memref<4x?xf32> {
  %m = memref.alloc(%n) : memref<4x?xf32>
  return %m : memref<4x?xf32>
}

// A static one: the null check only, with its byte count.
// CHECK-LABEL: func.func @static
// CHECK-NOT: arith.divsi
// CHECK: %[[M:.*]] = memref.alloc() : memref<8x2xi1>
// CHECK: memref.extract_aligned_pointer_as_index %[[M]]
// CHECK: cf.assert %{{.*}}, "cannot allocate memref<8x2xi1> at {{.*}}check-allocations.mlir:27:8 (16 bytes): out of memory"
func.func @static() -> memref<8x2xi1> {
  %m = memref.alloc() : memref<8x2xi1>
  return %m : memref<8x2xi1>
}

// Nothing to allocate, a stack slot, a kernel's: left alone.
// CHECK-LABEL: func.func @left
// CHECK-NOT: cf.assert
// CHECK: return
func.func @left() -> memref<0xf32> {
  %m = memref.alloc() : memref<0xf32>
  %a = memref.alloca() : memref<4xf32>
  return %m : memref<0xf32>
}
