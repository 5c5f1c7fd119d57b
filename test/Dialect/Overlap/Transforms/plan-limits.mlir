// RUN: overlap-opt %s --overlap-plan="profile=mc2-example strategy=mc2" -split-input-file -verify-diagnostics
// RUN: overlap-opt %s --overlap-pipeline="profile=mc2-example" -split-input-file -verify-diagnostics

// Sizes past the Planner's limits (docs/planner.md, "Limits") are refused
// on the op: M = 2^40 rows used to end overlap-opt in "LLVM ERROR: out of
// memory" (mc2 allocated its tiles).
shard.grid @tp(shape = 8)

func.func @rows_past_the_limit(%a: tensor<1099511627776x3072xf16>,
                               %b: tensor<3072x8192xf16>,
                               %c: tensor<1099511627776x8192xf16>)
    -> tensor<1099511627776x8192xf16> {
  // expected-error @+1 {{overlap-plan failed: --m: expected rows M in [1, 2147483648], got 1099511627776}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<1099511627776x3072xf16>, tensor<3072x8192xf16>,
        tensor<1099511627776x8192xf16> -> tensor<1099511627776x8192xf16>
  return %r : tensor<1099511627776x8192xf16>
}

// -----

shard.grid @tp(shape = 8)

func.func @columns_past_the_limit(%a: tensor<4096x3072xf16>,
                                  %b: tensor<3072x4294967296xf16>,
                                  %c: tensor<4096x4294967296xf16>)
    -> tensor<4096x4294967296xf16> {
  // expected-error @+1 {{overlap-plan failed: --n: expected columns N in [1, 2147483648], got 4294967296}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<4096x3072xf16>, tensor<3072x4294967296xf16>,
        tensor<4096x4294967296xf16> -> tensor<4096x4294967296xf16>
  return %r : tensor<4096x4294967296xf16>
}
