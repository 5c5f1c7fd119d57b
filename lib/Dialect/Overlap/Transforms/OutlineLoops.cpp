//===- OutlineLoops.cpp - Loop kernels as shared functions ------*- C++ -*-===//
//
// Two passes that keep compile time linear in the layers of a model:
// overlap-outline-loops: every linalg op on buffers that is left for
// convert-linalg-to-loops (fills, copies, elementwise generics of every
// layer) becomes a call of a private, never-inlined function that holds
// the op alone; ops that are the same but for their operands share one.
// A model of N identical layers then has N calls and one loop nest per
// kind of op, and every function LLVM optimizes stays the size of one op:
// compile time and code grow linearly in the layers (LLVM's InstCombine
// and SLP vectorizer are superlinear in the size of one function).
//
// overlap-share-gpu-kernels: with target=cuda the same ops become one
// gpu.module per launch; modules that are the same but for their name are
// kept once and the launches of the others call it (ptxas then compiles
// one kernel per kind of op, not one per layer).
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPOUTLINELOOPS
#define GEN_PASS_DEF_OVERLAPSHAREGPUKERNELS
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kPrefix = "__overlap_loops_";

/// A linalg op on buffers only (its operands memrefs or scalars).
bool isOnBuffers(linalg::LinalgOp op) {
  return op.hasPureBufferSemantics() &&
         llvm::all_of(op->getOperandTypes(), [](Type t) {
           return isa<MemRefType>(t) || t.isIntOrIndexOrFloat();
         });
}

struct OverlapOutlineLoopsPass
    : public mlir::overlap::impl::OverlapOutlineLoopsBase<
          OverlapOutlineLoopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) {
      auto func = op->getParentOfType<func::FuncOp>();
      if (func && !func.getSymName().starts_with(kPrefix) && isOnBuffers(op))
        ops.push_back(op);
    });
    // The function text (with a fixed name) -> the function made for it.
    llvm::StringMap<func::FuncOp> made;
    OpBuilder b(&getContext());
    b.setInsertionPointToEnd(module.getBody());
    for (linalg::LinalgOp op : ops) {
      // The buffers it works on and the values it reads (scalar operands,
      // values from above); constants are cloned in, so that ops that
      // differ in nothing else share a function.
      // Scalar operands that are constants too (a fill's zero: LLVM then
      // sees a memset).
      SetVector<Value> captured;
      for (Value v : op->getOperands())
        if (!isa<MemRefType>(v.getType()))
          captured.insert(v);
      getUsedValuesDefinedAbove(op->getRegions(), captured);
      SmallVector<Value> args;
      for (Value v : op->getOperands())
        if (isa<MemRefType>(v.getType()))
          args.push_back(v);
      SmallVector<Operation *> constants;
      for (Value v : captured) {
        Operation *def = v.getDefiningOp();
        if (def && def->hasTrait<OpTrait::ConstantLike>())
          constants.push_back(def);
        else
          args.push_back(v);
      }
      SmallVector<Type> types;
      for (Value v : args)
        types.push_back(v.getType());
      auto func = func::FuncOp::create(b, op.getLoc(), kPrefix,
                                       b.getFunctionType(types, {}));
      func.setPrivate();
      func->setAttr("no_inline", b.getUnitAttr());
      Block *entry = func.addEntryBlock();
      OpBuilder inner = OpBuilder::atBlockBegin(entry);
      IRMapping map;
      for (auto [v, arg] : llvm::zip_equal(args, entry->getArguments()))
        map.map(v, arg);
      for (Operation *c : constants)
        inner.clone(*c, map);
      inner.clone(*op, map);
      func::ReturnOp::create(inner, op.getLoc());

      std::string text;
      llvm::raw_string_ostream os(text);
      func->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
      auto [it, fresh] = made.try_emplace(text, func);
      if (fresh) {
        func.setSymName((kPrefix + llvm::Twine(made.size() - 1)).str());
      } else {
        func->erase();
        func = it->second;
      }
      OpBuilder at(op);
      func::CallOp::create(at, op.getLoc(), func, args);
      op->erase();
    }
  }
};

struct OverlapShareGpuKernelsPass
    : public mlir::overlap::impl::OverlapShareGpuKernelsBase<
          OverlapShareGpuKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The module text under one fixed name -> the first module with it.
    llvm::StringMap<StringAttr> first;
    DenseMap<StringAttr, StringAttr> sameAs;
    SmallVector<gpu::GPUModuleOp> duplicates;
    auto fixed = StringAttr::get(&getContext(), "__overlap_kernel");
    for (auto kernels : module.getOps<gpu::GPUModuleOp>()) {
      StringAttr name = kernels.getSymNameAttr();
      kernels.setSymNameAttr(fixed);
      std::string text;
      llvm::raw_string_ostream os(text);
      kernels->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
      kernels.setSymNameAttr(name);
      auto [it, fresh] = first.try_emplace(text, name);
      if (!fresh) {
        sameAs[name] = it->second;
        duplicates.push_back(kernels);
      }
    }
    if (duplicates.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto it = sameAs.find(kernel.getRootReference());
      if (it != sameAs.end())
        launch.setKernelAttr(
            SymbolRefAttr::get(it->second, kernel.getNestedReferences()));
    });
    for (gpu::GPUModuleOp kernels : duplicates)
      kernels->erase();
  }
};

} // namespace
