// The pipelines run on builtin.module: nested under func.func they are a
// parse error that says what to write, not an abort of the process
// (overlap-opt, and mlir-opt with the plugin in test/Plugin).
// RUN: not overlap-opt %s --pass-pipeline='builtin.module(func.func(overlap-pipeline))' 2>&1 | FileCheck %s --check-prefix=PIPE
// RUN: not overlap-opt %s --pass-pipeline='builtin.module(func.func(overlap-to-llvm))' 2>&1 | FileCheck %s --check-prefix=LLVM
// RUN: not overlap-opt %s --pass-pipeline='builtin.module(overlap-pipeline{strategy=uniform:2 bogus=1})' 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: overlap-opt %s --pass-pipeline='builtin.module(overlap-pipeline{strategy=uniform:2})' | FileCheck %s --check-prefix=OK

// PIPE: overlap-pipeline runs on 'builtin.module', not nested in 'func.func': write --pass-pipeline='builtin.module(overlap-pipeline)'
// PIPE-NOT: LLVM ERROR
// LLVM: overlap-to-llvm runs on 'builtin.module', not nested in 'func.func'
// LLVM-NOT: LLVM ERROR
// OPTION: bogus
// OPTION-NOT: LLVM ERROR
// OK: func.func @f

func.func @f() {
  return
}
