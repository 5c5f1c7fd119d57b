// RUN: overlap-opt %s --overlap-inline-collectives --verify-diagnostics -o /dev/null

// Recursion cannot be inlined: an error on the call that names the callee.
shard.grid @g(shape = 4)

func.func private @loop(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %r = shard.all_reduce %x on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %c0 = arith.constant 0 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %o = scf.if %done -> tensor<4xf32> {
    scf.yield %r : tensor<4xf32>
  } else {
    %c1 = arith.constant 1 : index
    %m = arith.subi %n, %c1 : index
    // expected-error @+1 {{'func.call' op calls @loop, which holds shard ops, and it could not be inlined (a recursive call?): only an entry point gets the run-time context that collectives need}}
    %s = func.call @loop(%r, %m) : (tensor<4xf32>, index) -> tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  return %o : tensor<4xf32>
}

func.func @rec(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c3 = arith.constant 3 : index
  %r = func.call @loop(%x, %c3) : (tensor<4xf32>, index) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
