// RUN: overlap-opt %s --convert-overlap-to-runtime -split-input-file | FileCheck %s

// A fill whose element bytes are all equal, on a contiguous buffer, is one
// overlap_memset of the buffer's bytes: 0.0 (byte 0), an i32 -1 (255), a
// boolean true (i1 takes one byte: 1); dynamic sizes are multiplied out at
// run time. A fill of 1.0 (bytes 00 00 80 3f) or into a strided view stays
// a linalg.fill (a loop nest later).
// CHECK-LABEL: func.func @fills
// CHECK: call @overlap_memset(%{{.*}}, %c0_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}}, %c256_i64{{[_0-9]*}})
// CHECK: call @overlap_memset(%{{.*}}, %c0_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c255_i32{{[_0-9]*}}, %c32_i64{{[_0-9]*}})
// CHECK: call @overlap_memset(%{{.*}}, %c0_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c1_i32{{[_0-9]*}}, %c5_i64{{[_0-9]*}})
// CHECK: %[[D:.*]] = memref.dim
// CHECK: %[[N:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK: %[[E:.*]] = arith.muli %{{.*}}, %[[N]] : i64
// CHECK: %[[B:.*]] = arith.muli %{{.*}}, %c2_i64{{[_0-9]*}} : i64
// CHECK: call @overlap_memset(%{{.*}}, %c0_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}}, %[[B]])
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<8x8xf32>)
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<4x4xf32, strided<[8, 1]>>)
func.func @fills(%a: memref<8x8xf32>, %b: memref<8xi32>, %c: memref<5xi1>,
                 %d: memref<?x3xbf16>, %e: memref<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %minus = arith.constant -1 : i32
  %true = arith.constant true
  %bz = arith.constant 0.0 : bf16
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%a : memref<8x8xf32>)
  linalg.fill ins(%minus : i32) outs(%b : memref<8xi32>)
  linalg.fill ins(%true : i1) outs(%c : memref<5xi1>)
  linalg.fill ins(%bz : bf16) outs(%d : memref<?x3xbf16>)
  linalg.fill ins(%one : f32) outs(%e : memref<8x8xf32>)
  %v = memref.subview %a[0, 0] [4, 4] [1, 1] : memref<8x8xf32> to memref<4x4xf32, strided<[8, 1]>>
  linalg.fill ins(%zero : f32) outs(%v : memref<4x4xf32, strided<[8, 1]>>)
  return
}
