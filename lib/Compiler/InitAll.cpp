//===- InitAll.cpp - Dialects and passes of Overlap's pipelines -*- C++ -*-===//
//
// InitAllDialects.h and InitAllPasses.h: the dialects and interface models
// Overlap's input and pipelines use, the LLVM IR translations to leave MLIR,
// and the passes. Upstream passes are registered by group (not upstream's
// registerAllPasses) because only these groups appear in the pipelines.
//
//===----------------------------------------------------------------------===//

#include "overlap/InitAllDialects.h"
#include "overlap/InitAllPasses.h"
#include "overlap/Compiler/Stages.h"

#include "overlap/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/Extensions/ShardingExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/MemRefMemorySlot.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "overlap/Dialect/Overlap/IR/OverlapDialect.h"
#include "overlap/Dialect/Overlap/Transforms/BufferizableOpInterfaceImpl.h"
#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include <mutex>

using namespace mlir;

void mlir::overlap::registerInterfaceModels(DialectRegistry &registry) {
  // To-LLVM and inliner interfaces, sharding extensions of func/tensor.
  registerAllExtensions(registry);
  // The external models that upstream's registerAllDialects would add for
  // the dialects above (bufferization and deallocation above all).
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  arith::registerBufferViewFlowOpInterfaceExternalModels(registry);
  arith::registerShardingInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  cf::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  func::registerShardingInterfaceExternalModels(registry);
  linalg::registerAllDialectInterfaceImplementations(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  memref::registerBufferViewFlowOpInterfaceExternalModels(registry);
  memref::registerMemorySlotExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  tensor::registerShardingInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  tensor::registerTilingInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  // TOSA (upstream's partitioning examples): sharding-propagation and
  // shard-partition see through it; the tensor stage lowers it to linalg.
  tosa::registerShardingInterfaceExternalModels(registry);
  overlap::registerBufferizableOpInterfaceExternalModels(registry);
  // #nvvm.target: how gpu-module-to-binary compiles kernels (target=cuda).
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
}

void mlir::overlap::registerAllDialects(DialectRegistry &registry) {
  registry
      .insert<overlap::OverlapDialect, affine::AffineDialect,
              arith::ArithDialect, bufferization::BufferizationDialect,
              cf::ControlFlowDialect, func::FuncDialect, gpu::GPUDialect,
              index::IndexDialect, LLVM::LLVMDialect, NVVM::NVVMDialect, linalg::LinalgDialect, math::MathDialect,
              memref::MemRefDialect, scf::SCFDialect, shard::ShardDialect,
              tensor::TensorDialect, tosa::TosaDialect,
              vector::VectorDialect>();
  registerInterfaceModels(registry);
  // Leaving MLIR: the LLVM dialect (and the builtin module) to LLVM IR.
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // target=cuda: gpu.binary and its launches (mgpu* calls), NVVM in kernels.
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

void mlir::overlap::registerOverlapPassesAndPipelines() {
  static std::once_flag once;
  std::call_once(once, [] {
    overlap::registerOverlapPasses();
    overlap::registerOverlapPipelines();
    overlap::registerOverlapConversionPasses();
    compiler::registerCompilerPipelines();
  });
}

void mlir::overlap::registerAllPasses() {
  registerOverlapPassesAndPipelines();
  static std::once_flag once;
  std::call_once(once, [] {
    // cse, canonicalize, symbol-dce, inline.
    registerTransformsPasses();
    // The passes that make Overlap's input: sharding-propagation,
    // shard-partition.
    shard::registerShardPasses();
    // one-shot-bufferize and the deallocation passes.
    bufferization::registerBufferizationPasses();
    // convert-linalg-to-loops and the other linalg, tensor, arith, func and
    // scf passes users put around Overlap's.
    registerLinalgPasses();
    tensor::registerTensorPasses();
    arith::registerArithPasses();
    func::registerFuncPasses();
    registerSCFPasses();
    // expand-strided-metadata.
    memref::registerMemRefPasses();
    // math-extend-to-supported-types (bf16 math in f32 on the host).
    math::registerMathPasses();
    // lower-affine, convert-*-to-llvm, reconcile-unrealized-casts,
    // convert-gpu-to-nvvm, gpu-to-llvm.
    registerConversionPasses();
    // gpu-kernel-outlining, nvvm-attach-target, gpu-module-to-binary.
    registerGPUPasses();
    gpu::registerGPUToNVVMPipeline();
  });
}
