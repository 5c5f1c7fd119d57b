// A program that reads one element of a result on the host: a load on
// the host with target=host; with target=cuda (the buffer is device
// memory) the element is staged through a host slot.
shard.grid @tp(shape = 2)

func.func @corner(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  %i = arith.constant 0 : index
  %v = tensor.extract %r[%i, %i] : tensor<256x32xf32>
  return %v : f32
}
