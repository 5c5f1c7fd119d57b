// The upstream-partitioned Megatron MLP (the @mlp of
// test/Dialect/Overlap/Transforms/pipeline.mlir: sharding-propagation and
// shard-partition output, with the scf.if that keeps C on rank 0): raised,
// planned, lowered and run on 4 host ranks against the reference.
//
// The scf.if makes the accumulator's layout dynamic after bufferization:
// the lowering checks unit/contiguous strides at run time, and lowers the
// shard.process_multi_index that picks rank 0 from the runtime's rank.
//
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --strategy uniform:2 %S/Inputs/upstream-mlp.mlir 2>&1 | FileCheck %s

// CHECK: Remark="tiles [256, 256] (uniform:2,
// CHECK: overlap-run: @mlp on 4 host ranks
// CHECK: bit-identical: yes
// CHECK-NEXT: OK
