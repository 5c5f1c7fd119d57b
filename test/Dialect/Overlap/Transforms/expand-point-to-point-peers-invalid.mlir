// RUN: overlap-opt %s --split-input-file --overlap-expand-collectives --overlap-check-collectives --verify-diagnostics -o /dev/null

// A peer entry that is a constant operand outside its axis is refused at
// compile time (upstream's verifier checks only the entries written in
// the attribute); row-major it would be another rank ([0, 2] on 2x2 is
// rank 2).

shard.grid @g(shape = 2x2)

func.func @constant_destination(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  // expected-error @+1 {{'shard.send' op is not lowered by Overlap: its destination [?, ?] has entry 1 = 2 outside grid axis 1 of @g (extent 2): it would address another rank}}
  %a = shard.send %x on @g grid_axes = [0, 1] destination = [%c0, %c2]
    : (tensor<2xf32>, index, index) -> tensor<2xf32>
  return %a : tensor<2xf32>
}

// -----

shard.grid @g(shape = 3x2)

func.func @negative_source(%x: tensor<2xf32>) -> tensor<2xf32> {
  %m = arith.constant -1 : index
  %a = shard.send %x on @g grid_axes = [0, 1] destination = [1, 1]
    : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error @+1 {{'shard.recv' op is not lowered by Overlap: its source [?, 0] has entry 0 = -1 outside grid axis 0 of @g (extent 3): it would address another rank}}
  %b = shard.recv %a on @g grid_axes = [0, 1] source = [%m, 0]
    : (tensor<2xf32>, index) -> tensor<2xf32>
  return %b : tensor<2xf32>
}
