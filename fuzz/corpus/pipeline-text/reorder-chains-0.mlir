func.func @linalg_chain(%a: tensor<10x100xf32>, %b: tensor<100x5xf32>,
                        %c: tensor<5x50xf32>) -> tensor<10x50xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<100x50xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<100x50xf32>) -> tensor<100x50xf32>
  %bc = linalg.matmul ins(%b, %c : tensor<100x5xf32>, tensor<5x50xf32>) outs(%z0 : tensor<100x50xf32>) -> tensor<100x50xf32>
  %e1 = tensor.empty() : tensor<10x50xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<10x50xf32>) -> tensor<10x50xf32>
  %abc = linalg.matmul ins(%a, %bc : tensor<10x100xf32>, tensor<100x50xf32>) outs(%z1 : tensor<10x50xf32>) -> tensor<10x50xf32>
  return %abc : tensor<10x50xf32>
}
