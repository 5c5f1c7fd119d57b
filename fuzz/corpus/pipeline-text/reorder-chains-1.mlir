func.func @chain_op(%a1: tensor<30x35xf32>, %a2: tensor<35x15xf32>, %a3: tensor<15x5xf32>,
                    %a4: tensor<5x10xf32>, %a5: tensor<10x20xf32>, %a6: tensor<20x25xf32>) -> tensor<30x25xf32> {
  %p = overlap.chain_matmul %a1, %a2, %a3, %a4, %a5, %a6
      : tensor<30x35xf32>, tensor<35x15xf32>, tensor<15x5xf32>, tensor<5x10xf32>, tensor<10x20xf32>, tensor<20x25xf32>
      -> tensor<30x25xf32>
  return %p : tensor<30x25xf32>
}
