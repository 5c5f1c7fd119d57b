// Zeros of unfused-collectives.mlir's signatures: its expected outputs.
shard.grid @tp(shape = 4)
shard.grid @g2(shape = 2x2)
func.func @gather_seq(%arg: tensor<2x8x4xf32>) -> tensor<2x32x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x32x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x32x4xf32>) -> tensor<2x32x4xf32>
  return %z : tensor<2x32x4xf32>
}
func.func @scatter_seq(%arg: tensor<2x8x4xf32>) -> tensor<2x2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %z : tensor<2x2x4xf32>
}
func.func @reduce_max(%arg: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %z : tensor<2x8x4xf32>
}
func.func @reduce_avg(%arg: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %z : tensor<2x8x4xf32>
}
func.func @exchange_seq(%arg: tensor<2x8x4xf32>) -> tensor<8x2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x2x4xf32>) -> tensor<8x2x4xf32>
  return %z : tensor<8x2x4xf32>
}
func.func @exchange_hidden(%arg: tensor<2x8x4xf32>) -> tensor<2x32x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x32x1xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x32x1xf32>) -> tensor<2x32x1xf32>
  return %z : tensor<2x32x1xf32>
}
func.func @slice_hidden(%arg: tensor<2x8x4xf32>) -> tensor<2x8x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x1xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  return %z : tensor<2x8x1xf32>
}
func.func @gather_bf16(%arg: tensor<2x8x4xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %z : tensor<2x8x16xf32>
}
func.func @reduce_bf16_f32(%arg: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %z : tensor<2x8x4xf32>
}
func.func @gather_2d(%arg: tensor<2x8x4xf32>) -> tensor<4x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8x4xf32>) -> tensor<4x8x4xf32>
  return %z : tensor<4x8x4xf32>
}
