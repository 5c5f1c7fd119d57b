// RUN: overlap-opt %s --overlap-expand-arith | FileCheck %s

// minimumf and maximumf stay (arith-to-llvm makes them llvm.intr.minimum
// and maximum, which order -0.0 below +0.0; upstream arith-expand's
// select(cmpf ult) gave minimumf(-0.0, +0.0) = +0.0); bf16 conversions and
// ceildivsi are expanded as arith-expand{include-bf16} does.
// CHECK-LABEL: func.func @f
// CHECK: arith.minimumf
// CHECK: arith.maximumf
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.ceildivsi
// CHECK: return
func.func @f(%x: f32, %y: f32, %a: i32, %b: i32) -> (f32, f32, bf16, f32, i32) {
  %min = arith.minimumf %x, %y : f32
  %max = arith.maximumf %x, %y : f32
  %t = arith.truncf %min : f32 to bf16
  %e = arith.extf %t : bf16 to f32
  %d = arith.ceildivsi %a, %b : i32
  return %min, %max, %t, %e, %d : f32, f32, bf16, f32, i32
}
