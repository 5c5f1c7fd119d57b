shard.grid @tp(shape = 4)

func.func @upstream_row_parallel(%arg0: tensor<512x64xf32>, %arg1: tensor<64x64xf32>) -> tensor<512x64xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %3 = tensor.empty() : tensor<512x64xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %idx = shard.process_multi_index on @tp axes = [0] : index
  %5 = arith.cmpi eq, %idx, %c0 : index
  %6 = scf.if %5 -> (tensor<512x64xf32>) {
    scf.yield %4 : tensor<512x64xf32>
  } else {
    %8 = tensor.empty() : tensor<512x64xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<512x64xf32>) -> tensor<512x64xf32>
    scf.yield %9 : tensor<512x64xf32>
  }
  %7 = linalg.matmul ins(%arg0, %arg1 : tensor<512x64xf32>, tensor<64x64xf32>) outs(%6 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %all_reduce = shard.all_reduce %7 on @tp grid_axes = [0] : tensor<512x64xf32> -> tensor<512x64xf32>
  return %all_reduce : tensor<512x64xf32>
}
