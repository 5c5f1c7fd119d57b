//===- overlap-opt.cpp - Overlap optimizer driver ------------*- C++ -*-===//
//
// The opt-style driver: our dialect and passes, plus the upstream dialects,
// passes and lowerings that programs around them use. Upstream groups are
// registered explicitly (not registerAllPasses) so `--help` lists what is
// relevant to Overlap users.
//
//===----------------------------------------------------------------------===//

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "overlap/Conversion/Passes.h"
#include "overlap/Dialect/Overlap/IR/OverlapDialect.h"
#include "Registration.h"
#include "overlap/Dialect/Overlap/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::overlap::OverlapDialect, mlir::affine::AffineDialect,
                  mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect,
                  mlir::NVVM::NVVMDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::shard::ShardDialect,
                  mlir::tensor::TensorDialect, mlir::vector::VectorDialect>();
  // Interface models (sharding, bufferization, to-LLVM, inlining) that the
  // upstream passes below need on those dialects.
  mlir::overlap::tools::registerInterfaceModels(registry);

  mlir::overlap::registerOverlapPasses();
  mlir::overlap::registerOverlapPipelines();
  mlir::overlap::registerOverlapConversionPasses();

  // Generic transforms (canonicalize, cse, inline, ...).
  mlir::registerTransformsPasses();
  // Sharding: sharding-propagation, shard-partition.
  mlir::shard::registerShardPasses();
  // Tensor and linalg level.
  mlir::registerLinalgPasses();
  mlir::tensor::registerTensorPasses();
  mlir::arith::registerArithPasses();
  mlir::func::registerFuncPasses();
  mlir::registerSCFPasses();
  // Bufferization and memref.
  mlir::bufferization::registerBufferizationPasses();
  mlir::memref::registerMemRefPasses();
  // Lowerings: *-to-llvm, scf-to-cf, gpu-to-nvvm, ...
  mlir::registerConversionPasses();
  mlir::registerGPUPasses();
  mlir::gpu::registerGPUToNVVMPipeline();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Overlap optimizer: compute/communication overlap for "
                  "tensor-parallel matmuls\n",
      registry));
}
