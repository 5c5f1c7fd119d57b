// The passes' decisions are remarks of MLIR's remark framework: nothing is
// printed by default; --remarks-filter (and -passed/-missed/-analyse)
// selects them by category ("overlap"), --remark-format=yaml with
// --remarks-output-file serializes them. overlap-compile and overlap-run
// take the same three flags.
//
// RUN: overlap-opt %s --overlap-raise --overlap-plan="strategy=uniform:2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEFAULT --allow-empty
// RUN: overlap-opt %s --overlap-raise --overlap-plan="strategy=uniform:2" --remarks-filter=overlap -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALL
// RUN: overlap-opt %s --overlap-raise --overlap-plan="strategy=uniform:2" --remarks-filter-missed=overlap -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSED
// RUN: overlap-opt %s --overlap-raise --overlap-plan="strategy=uniform:2" --remarks-filter=overlap --remark-format=yaml --remarks-output-file=%t.yaml -o /dev/null
// RUN: FileCheck %s --check-prefix=YAML < %t.yaml
// RUN: overlap-compile %s --entry=mlp --strategy=uniform:2 --emit=mlir --stop-after-stage=tensor -o /dev/null --remarks-filter=overlap --remark-format=yaml --remarks-output-file=%t.compile.yaml
// RUN: FileCheck %s --check-prefix=YAML < %t.compile.yaml
// RUN: not overlap-compile %s --remarks-filter=overlap --remark-format=xml 2>&1 | FileCheck %s --check-prefix=BADFORMAT
// RUN: not overlap-compile %s --remarks-filter=overlap --remark-format=yaml 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not overlap-compile %s --remarks-filter="(" 2>&1 | FileCheck %s --check-prefix=BADREGEX
//
// A remark is also selected by the names it shows: the pass
// (--remarks-filter=overlap-plan, then shown as Category:overlap-plan) or
// the category as printed (overlap:overlap-plan), with every tool's flags.
// (Spelt overlap-(plan) here: lit would replace the bare word with the
// overlap-plan tool's path.)
// RUN: overlap-opt %s --overlap-raise --overlap-plan="strategy=uniform:2" --remarks-filter="overlap-(plan)" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASS
// RUN: overlap-opt %s --overlap-raise --overlap-plan="strategy=uniform:2" --remarks-filter="overlap:overlap-(plan)" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHOWN
// RUN: overlap-opt %s --overlap-raise --overlap-plan="strategy=uniform:2" --remarks-filter-missed=overlap-raise -o /dev/null 2>&1 | FileCheck %s --check-prefix=RAISE
// RUN: overlap-compile %s --entry=mlp --strategy=uniform:2 --emit=mlir --stop-after-stage=tensor -o /dev/null --remarks-filter="overlap-(plan)" 2>&1 | FileCheck %s --check-prefix=PASS
// RUN: overlap-compile %s --entry=mlp --strategy=uniform:2 --emit=mlir --stop-after-stage=tensor -o /dev/null --remarks-filter='overlap:overlap-(plan|raise)' 2>&1 | FileCheck %s --check-prefix=SHOWN2

// DEFAULT-NOT: remark

// ALL: remark: [Passed] raised | Category:overlap:overlap-raise | Function=mlp | Remark="raised to overlap.matmul_all_reduce"
// ALL: remark: [Missed] not-raised | Category:overlap:overlap-raise | Function=max | Reason="not raised to a fused overlap op: the reduction is 'max'
// ALL: remark: [Analysis] plan | Category:overlap:overlap-plan | Function=mlp | Remark="tiles [256, 256] (uniform:2, comm-bound)
// ALL-SAME: bound=comm, gemm_source="roofline ({{.*}})", op=overlap.matmul_all_reduce, predicted_us={{[0-9]+\.[0-9]+}}, serial_us={{[0-9]+\.[0-9]+}}, strategy=uniform:2, tiles="[256,256]"

// MISSED-NOT: [Passed]
// MISSED-NOT: [Analysis]
// MISSED: remark: [Missed] not-raised
// MISSED-NOT: [Passed]
// MISSED-NOT: [Analysis]

// YAML: --- !Passed
// YAML: Pass: {{ *}}'overlap:overlap-raise'
// YAML: Name: {{ *}}raised
// YAML: Function: {{ *}}mlp
// YAML: --- !Analysis
// YAML: Pass: {{ *}}'overlap:overlap-plan'
// YAML: Name: {{ *}}plan
// YAML: - tiles: {{ *}}'[256,256]'
// YAML: - predicted_us:

// PASS-NOT: overlap-raise
// PASS: remark: [Analysis] plan | Category:overlap-plan | Function=mlp | Remark="tiles [256, 256] (uniform:2, comm-bound)
// PASS-NOT: overlap-raise
// SHOWN-NOT: overlap-raise
// SHOWN: remark: [Analysis] plan | Category:overlap:overlap-plan | Function=mlp | Remark="tiles [256, 256]
// SHOWN-NOT: overlap-raise
// RAISE-NOT: [Passed]
// RAISE-NOT: plan
// RAISE: remark: [Missed] not-raised | Category:overlap-raise | Function=max
// RAISE-NOT: plan
// SHOWN2: remark: [Passed] raised | Category:overlap:overlap-raise | Function=mlp
// SHOWN2: remark: [Analysis] plan | Category:overlap:overlap-plan | Function=mlp

// BADFORMAT: overlap-compile: error: --remark-format: 'xml' is not one of emit, yaml, bitstream
// NOFILE: overlap-compile: error: --remark-format=yaml: needs --remarks-output-file
// BADREGEX: overlap-compile: error: --remarks-filter: '(' is not a regex

shard.grid @tp(shape = 4)
func.func @mlp(%arg0: tensor<512x64xf32>, %arg1: tensor<64x64xf32>, %arg2: tensor<512x64xf32>) -> tensor<512x64xf32> {
  %0 = linalg.matmul ins(%arg0, %arg1 : tensor<512x64xf32>, tensor<64x64xf32>) outs(%arg2 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %1 = shard.all_reduce %0 on @tp grid_axes = [0] : tensor<512x64xf32> -> tensor<512x64xf32>
  return %1 : tensor<512x64xf32>
}

func.func @max(%arg0: tensor<512x64xf32>, %arg1: tensor<64x64xf32>, %arg2: tensor<512x64xf32>) -> tensor<512x64xf32> {
  %0 = linalg.matmul ins(%arg0, %arg1 : tensor<512x64xf32>, tensor<64x64xf32>) outs(%arg2 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %1 = shard.all_reduce %0 on @tp grid_axes = [0] reduction = max : tensor<512x64xf32> -> tensor<512x64xf32>
  return %1 : tensor<512x64xf32>
}
