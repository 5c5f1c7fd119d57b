// An entry that takes a memref and writes it: its argument is an output
// (inout in the embedded signature).
shard.grid @g(shape = 2)
func.func @fill(%m: memref<4x8xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%m : memref<4x8xf32>)
  return
}
