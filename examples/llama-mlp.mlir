// A Llama-70B-class feed-forward block on 8 tensor-parallel ranks, written
// the way a frontend writes the per-device program (a JAX shard_map body,
// or torch with Megatron's sequence parallelism): activations
// [seq, batch, hidden] in bf16, sharded along the sequence; PyTorch-layout
// weights [out, in]; gate and up projections of one gathered input as
// separate contractions; SiLU(gate) * up; the down projection summed in
// f32, rounded to bf16 and reduce-scattered back along the sequence.
//
// Shapes: 4096 tokens x batch 2 = 8192 rows, hidden 8192, FFN 28672 split
// 8 ways (3584 per rank). overlap-raise normalizes every contraction to a
// 2-D matmul, merges gate and up (one gather feeds both), fuses the
// gather and the reduce-scatter with their matmuls (the bf16 rounding runs
// per tile before the reduce-scatter), and the Planner splits both.
// scripts/demo.sh plans it at this size and runs it scaled down.
shard.grid @tp(shape = 8)

#bsh = affine_map<(s, b, n, k) -> (s, b, k)>
#w = affine_map<(s, b, n, k) -> (n, k)>
#out = affine_map<(s, b, n, k) -> (s, b, n)>
#id3 = affine_map<(s, b, n) -> (s, b, n)>

func.func @llama_mlp(%x: tensor<512x2x8192xbf16>, %w_gate: tensor<3584x8192xbf16>,
                     %w_up: tensor<3584x8192xbf16>, %w_down: tensor<8192x3584xbf16>)
    -> tensor<512x2x8192xbf16> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  // Sequence-parallel input gathered along the sequence.
  %xs = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0
      : tensor<512x2x8192xbf16> -> tensor<4096x2x8192xbf16>
  %e = tensor.empty() : tensor<4096x2x3584xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<4096x2x3584xf32>) -> tensor<4096x2x3584xf32>
  %gate = linalg.generic {indexing_maps = [#bsh, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xs, %w_gate : tensor<4096x2x8192xbf16>, tensor<3584x8192xbf16>) outs(%c : tensor<4096x2x3584xf32>) {
    ^bb0(%a: bf16, %b: bf16, %acc: f32):
      %a32 = arith.extf %a : bf16 to f32
      %b32 = arith.extf %b : bf16 to f32
      %m = arith.mulf %a32, %b32 : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<4096x2x3584xf32>
  %up = linalg.generic {indexing_maps = [#bsh, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xs, %w_up : tensor<4096x2x8192xbf16>, tensor<3584x8192xbf16>) outs(%c : tensor<4096x2x3584xf32>) {
    ^bb0(%a: bf16, %b: bf16, %acc: f32):
      %a32 = arith.extf %a : bf16 to f32
      %b32 = arith.extf %b : bf16 to f32
      %m = arith.mulf %a32, %b32 : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<4096x2x3584xf32>
  // SiLU(gate) * up, rounded to bf16.
  %eh = tensor.empty() : tensor<4096x2x3584xbf16>
  %h = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%gate, %up : tensor<4096x2x3584xf32>, tensor<4096x2x3584xf32>) outs(%eh : tensor<4096x2x3584xbf16>) {
    ^bb0(%g: f32, %u: f32, %o: bf16):
      %ng = arith.negf %g : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %one, %ex : f32
      %silu = arith.divf %g, %den : f32
      %p = arith.mulf %silu, %u : f32
      %r = arith.truncf %p : f32 to bf16
      linalg.yield %r : bf16
  } -> tensor<4096x2x3584xbf16>
  // Down projection, summed in f32, rounded to bf16, reduce-scattered.
  %ed = tensor.empty() : tensor<4096x2x8192xf32>
  %cd = linalg.fill ins(%zero : f32) outs(%ed : tensor<4096x2x8192xf32>) -> tensor<4096x2x8192xf32>
  %down = linalg.generic {indexing_maps = [#bsh, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%h, %w_down : tensor<4096x2x3584xbf16>, tensor<8192x3584xbf16>) outs(%cd : tensor<4096x2x8192xf32>) {
    ^bb0(%a: bf16, %b: bf16, %acc: f32):
      %a32 = arith.extf %a : bf16 to f32
      %b32 = arith.extf %b : bf16 to f32
      %m = arith.mulf %a32, %b32 : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<4096x2x8192xf32>
  %eb = tensor.empty() : tensor<4096x2x8192xbf16>
  %db = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%down : tensor<4096x2x8192xf32>) outs(%eb : tensor<4096x2x8192xbf16>) {
    ^bb0(%in: f32, %o: bf16):
      %r = arith.truncf %in : f32 to bf16
      linalg.yield %r : bf16
  } -> tensor<4096x2x8192xbf16>
  %y = shard.reduce_scatter %db on @tp grid_axes = [0] scatter_axis = 0
      : tensor<4096x2x8192xbf16> -> tensor<512x2x8192xbf16>
  return %y : tensor<512x2x8192xbf16>
}
