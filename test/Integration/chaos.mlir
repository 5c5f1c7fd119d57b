// The check can fail: a program whose stream waits were dropped
// (overlap-schedule-streams{testing-drop-waits}, overlap compilation only)
// reads tiles before they are computed or gathered. Under the host
// backend's chaos mode (the work a signal follows is held back, so a
// consumer without its wait runs first) it must give a MISMATCH (exit 1)
// for at least 3 of 4 seeds, for every collective, and never an error
// (exit 2); docs/tools.md gives the measured rates (100 of 100 seeds for
// each collective). The same programs with their waits stay bit-identical
// under chaos.
//
// RUN: bash -c 'for s in 1 2 3 4; do overlap-run --ranks 4 --entry mar --strategy uniform:4 --testing-drop-waits --chaos $s %s; echo "exit $?"; done' | FileCheck %s --check-prefix=DROP --implicit-check-not="exit 2"
// RUN: bash -c 'for s in 1 2 3 4; do overlap-run --ranks 4 --entry mrs --strategy uniform:4 --testing-drop-waits --chaos $s %s; echo "exit $?"; done' | FileCheck %s --check-prefix=DROP --implicit-check-not="exit 2"
// RUN: bash -c 'for s in 1 2 3 4; do overlap-run --ranks 4 --entry agm --strategy uniform:4 --testing-drop-waits --chaos $s %s; echo "exit $?"; done' | FileCheck %s --check-prefix=DROP --implicit-check-not="exit 2"
// DROP-COUNT-3: {{^}}MISMATCH{{$}}
//
// RUN: overlap-run --ranks 4 --entry mar --strategy uniform:4 --chaos 1 %s | FileCheck %s --check-prefix=CHAOS-OK
// RUN: overlap-run --ranks 4 --entry mrs --strategy uniform:4 --chaos 2 %s | FileCheck %s --check-prefix=CHAOS-OK
// RUN: overlap-run --ranks 4 --entry agm --strategy uniform:4 --chaos 3 %s | FileCheck %s --check-prefix=CHAOS-OK
// CHAOS-OK: , chaos {{[0-9]+}}
// CHAOS-OK: bit-identical: yes
// CHAOS-OK-NEXT: OK

shard.grid @tp(shape = 4)

func.func @mar(%a: tensor<512x128xf32>, %b: tensor<128x128xf32>, %c: tensor<512x128xf32>) -> tensor<512x128xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<512x128xf32>, tensor<128x128xf32>, tensor<512x128xf32> -> tensor<512x128xf32>
  return %r : tensor<512x128xf32>
}

func.func @mrs(%a: tensor<512x128xf32>, %b: tensor<128x128xf32>, %c: tensor<512x128xf32>) -> tensor<128x128xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<512x128xf32>, tensor<128x128xf32>, tensor<512x128xf32> -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}

func.func @agm(%a: tensor<128x128xf32>, %b: tensor<128x128xf32>, %c: tensor<512x128xf32>) -> tensor<512x128xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      : tensor<128x128xf32>, tensor<128x128xf32>, tensor<512x128xf32> -> tensor<512x128xf32>
  return %r : tensor<512x128xf32>
}
