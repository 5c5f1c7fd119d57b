// RUN: overlap-opt %s --overlap-plan="profile=h100-nvlink-datasheet strategy=uniform:4" --remarks-filter=overlap -verify-diagnostics -o /dev/null

// A reduce-scatter tile takes tiles[i] / G rows of every rank's block, so
// with 3 ranks the Planner aligns tile boundaries to lcm(128, 3) = 384 rows
// (the last tile takes the remainder, which 3 divides too).
shard.grid @tp3(shape = 3)

func.func @three_ranks(%a: tensor<3000x256xf16>, %b: tensor<256x256xf16>,
                       %c: tensor<3000x256xf16>) -> tensor<1000x256xf16> {
  // expected-remark @+1 {{tiles [768, 768, 768, 696] (uniform:4, comm-bound)}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp3 grid_axes = [0]
      : tensor<3000x256xf16>, tensor<256x256xf16>, tensor<3000x256xf16>
      -> tensor<1000x256xf16>
  return %r : tensor<1000x256xf16>
}
