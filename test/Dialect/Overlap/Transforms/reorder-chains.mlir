// RUN: overlap-opt %s --overlap-reorder-chains --remarks-filter=overlap -split-input-file -verify-diagnostics | FileCheck %s
// RUN: not overlap-opt %s --overlap-reorder-chains="fast-memory=0.5" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=SMALL
// SMALL: error: overlap-reorder-chains: option fast-memory is 0.5; expected a finite number of elements >= 1
// RUN: not overlap-opt %s --overlap-reorder-chains="fast-memory=inf" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=INF
// INF: error: overlap-reorder-chains: option fast-memory is inf; expected a finite number of elements >= 1

// Cormen's example chain 10x100, 100x5, 5x50 written as a (b c): 75000
// multiplications; (a b) c needs 7500.
// CHECK-LABEL: func.func @linalg_chain
// CHECK-SAME: (%[[A:.*]]: tensor<10x100xf32>, %[[B:.*]]: tensor<100x5xf32>, %[[C:.*]]: tensor<5x50xf32>)
// CHECK: %[[AB:.*]] = linalg.matmul {overlap.fusion = #overlap.fusion<none, tile = [{{[0-9]+}}, {{[0-9]+}}], transfers = {{[0-9]+}}>} ins(%[[A]], %[[B]] : tensor<10x100xf32>, tensor<100x5xf32>)
// CHECK: %[[ABC:.*]] = linalg.matmul {overlap.fusion = #overlap.fusion<{{none|left}}, {{.*}}>} ins(%[[AB]], %[[C]] : tensor<10x5xf32>, tensor<5x50xf32>)
// CHECK-NOT: linalg.matmul
// CHECK: return %[[ABC]]
func.func @linalg_chain(%a: tensor<10x100xf32>, %b: tensor<100x5xf32>,
                        %c: tensor<5x50xf32>) -> tensor<10x50xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<100x50xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<100x50xf32>) -> tensor<100x50xf32>
  %bc = linalg.matmul ins(%b, %c : tensor<100x5xf32>, tensor<5x50xf32>) outs(%z0 : tensor<100x50xf32>) -> tensor<100x50xf32>
  %e1 = tensor.empty() : tensor<10x50xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<10x50xf32>) -> tensor<10x50xf32>
  // expected-remark @+1 {{chain of 3 matrices reordered to ((A1 A2) A3): 75000 scalar multiplications before, 7500 after}}
  %abc = linalg.matmul ins(%a, %bc : tensor<10x100xf32>, tensor<100x50xf32>) outs(%z1 : tensor<10x50xf32>) -> tensor<10x50xf32>
  return %abc : tensor<10x50xf32>
}

// -----

// overlap.chain_matmul (Cormen 15.2: 30x35 35x15 15x5 5x10 10x20 20x25) is
// lowered in the optimal order ((A1 (A2 A3)) ((A4 A5) A6)): 15125.
// CHECK-LABEL: func.func @chain_op
// CHECK-NOT: overlap.chain_matmul
// CHECK: %[[M23:.*]] = linalg.matmul {{.*}} ins(%arg1, %arg2 :
// CHECK: %[[M123:.*]] = linalg.matmul {{.*}} ins(%arg0, %[[M23]] :
// CHECK: %[[M45:.*]] = linalg.matmul {{.*}} ins(%arg3, %arg4 :
// CHECK: %[[M456:.*]] = linalg.matmul {{.*}} ins(%[[M45]], %arg5 :
// CHECK: %[[ALL:.*]] = linalg.matmul {{.*}} ins(%[[M123]], %[[M456]] : tensor<30x5xf32>, tensor<5x25xf32>)
// CHECK: return %[[ALL]]
func.func @chain_op(%a1: tensor<30x35xf32>, %a2: tensor<35x15xf32>, %a3: tensor<15x5xf32>,
                    %a4: tensor<5x10xf32>, %a5: tensor<10x20xf32>, %a6: tensor<20x25xf32>) -> tensor<30x25xf32> {
  // expected-remark @below {{chain of 6 matrices reordered to ((A1 (A2 A3)) ((A4 A5) A6)): 40500 scalar multiplications before, 15125 after}}
  %p = overlap.chain_matmul %a1, %a2, %a3, %a4, %a5, %a6
      : tensor<30x35xf32>, tensor<35x15xf32>, tensor<15x5xf32>, tensor<5x10xf32>, tensor<10x20xf32>, tensor<20x25xf32>
      -> tensor<30x25xf32>
  return %p : tensor<30x25xf32>
}

// -----

// A non-zero accumulator is not a pure chain (C + A*B does not
// reassociate): left alone, silently.
// CHECK-LABEL: func.func @nonzero_init
// CHECK: %[[BC:.*]] = linalg.matmul ins(%arg1, %arg2
// CHECK: linalg.matmul ins(%arg0, %[[BC]]
func.func @nonzero_init(%a: tensor<10x100xf32>, %b: tensor<100x5xf32>,
                        %c: tensor<5x50xf32>, %acc: tensor<100x50xf32>) -> tensor<10x50xf32> {
  %zero = arith.constant 0.0 : f32
  %bc = linalg.matmul ins(%b, %c : tensor<100x5xf32>, tensor<5x50xf32>) outs(%acc : tensor<100x50xf32>) -> tensor<100x50xf32>
  %e1 = tensor.empty() : tensor<10x50xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<10x50xf32>) -> tensor<10x50xf32>
  %abc = linalg.matmul ins(%a, %bc : tensor<10x100xf32>, tensor<100x50xf32>) outs(%z1 : tensor<10x50xf32>) -> tensor<10x50xf32>
  return %abc : tensor<10x50xf32>
}
