// RUN: overlap-opt %s --overlap-lower-deallocations | FileCheck %s

// bufferization.dealloc becomes base-pointer comparisons on index values
// and guarded memref.dealloc ops: no memref<?xindex> bookkeeping buffer
// and no helper function (a device target has no host memory for them).

// CHECK-LABEL: func.func @two_retain_one
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>, %[[R:.*]]: memref<2xf32, strided<[1], offset: 1>>, %[[CA:.*]]: i1, %[[CB:.*]]: i1)
// CHECK-NOT: memref.alloc
// CHECK-NOT: call
// CHECK: %[[BA:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[A]]
// CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[BA]]
// CHECK: %[[BB:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[B]]
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[BB]]
// CHECK: %[[BR:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[R]]
// CHECK: %[[PR:.*]] = memref.extract_aligned_pointer_as_index %[[BR]]
// The retained view is owned when A or B shares its base and was owned.
// CHECK: %[[EA:.*]] = arith.cmpi eq, %[[PA]], %[[PR]] : index
// CHECK: %[[OA:.*]] = arith.andi %[[CA]], %[[EA]] : i1
// CHECK: %[[EB:.*]] = arith.cmpi eq, %[[PB]], %[[PR]] : index
// CHECK: %[[OB:.*]] = arith.andi %[[CB]], %[[EB]] : i1
// CHECK: %[[O2:.*]] = arith.ori %[[OA]], %[[OB]] : i1
// A is freed when owned and not the retained view's buffer.
// CHECK: %[[NA:.*]] = arith.cmpi ne, %[[PA]], %[[PR]] : index
// CHECK: %[[FA:.*]] = arith.andi %[[CA]], %[[NA]] : i1
// CHECK: scf.if %[[FA]] {
// CHECK-NEXT: memref.dealloc %[[BA]] : memref<f32>
// B also when A, owned, was not the same buffer (no double free).
// CHECK: %[[NB:.*]] = arith.cmpi ne, %[[PB]], %[[PR]] : index
// CHECK: %[[FB:.*]] = arith.andi %[[CB]], %[[NB]] : i1
// CHECK: %[[SAB:.*]] = arith.cmpi eq, %[[PA]], %[[PB]] : index
// CHECK: %[[BEFORE:.*]] = arith.andi %[[CA]], %[[SAB]] : i1
// CHECK: %[[NOTB:.*]] = arith.xori %[[BEFORE]], %true : i1
// CHECK: %[[FB2:.*]] = arith.andi %[[FB]], %[[NOTB]] : i1
// CHECK: scf.if %[[FB2]] {
// CHECK-NEXT: memref.dealloc %[[BB]] : memref<f32>
// CHECK: return %[[O2]] : i1
func.func @two_retain_one(%a: memref<4xf32>, %b: memref<4xf32>, %r: memref<2xf32, strided<[1], offset: 1>>, %ca: i1, %cb: i1) -> i1 {
  %o = bufferization.dealloc (%a, %b : memref<4xf32>, memref<4xf32>) if (%ca, %cb) retain (%r : memref<2xf32, strided<[1], offset: 1>>)
  return %o : i1
}

// Unranked memrefs are left for bufferization-lower-deallocations.
// CHECK-LABEL: func.func @unranked
// CHECK: bufferization.dealloc
func.func @unranked(%a: memref<*xf32>, %c: i1) {
  bufferization.dealloc (%a : memref<*xf32>) if (%c)
  return
}
