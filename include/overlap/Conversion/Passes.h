//===- Passes.h - Overlap conversion passes -----------------*- C++ -*-===//

#ifndef OVERLAP_CONVERSION_PASSES_H
#define OVERLAP_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace overlap {

#define GEN_PASS_DECL
#include "overlap/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "overlap/Conversion/Passes.h.inc"

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_CONVERSION_PASSES_H
