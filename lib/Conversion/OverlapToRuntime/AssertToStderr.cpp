//===- AssertToStderr.cpp - Failed run-time checks say why ------*- C++ -*-===//
//
// overlap-assert-to-stderr (Passes.td): cf.assert as a branch to a block
// that calls the runtime's overlap_check_failed(message, length): inside a
// guarded entry call (the loader's, overlap_context_call_guarded) it fails
// the rank's context and returns to the guard, so an embedding (overlap.run
// from Python, overlapRunInputs) gets an error instead of a SIGABRT; called
// elsewhere it writes the message to stderr (write(2, ...)) and aborts.
// Upstream's cf-to-llvm lowering prints it with puts: to stdout, buffered
// when stdout is a pipe or a file, and lost at the abort that follows.
//
//===----------------------------------------------------------------------===//

#include "overlap/Conversion/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPASSERTTOSTDERR
#include "overlap/Conversion/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;

namespace {

struct OverlapAssertToStderrPass
    : public mlir::overlap::impl::OverlapAssertToStderrBase<
          OverlapAssertToStderrPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> asserts;
    module.walk([&](cf::AssertOp op) {
      if (!op->getParentOfType<gpu::GPUModuleOp>())
        asserts.push_back(op);
    });
    if (asserts.empty())
      return;
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    Type ptr = LLVM::LLVMPointerType::get(module.getContext());
    Type i64 = b.getI64Type();
    auto failedCheck =
        LLVM::lookupOrCreateFn(b, module, "overlap_check_failed", {ptr, i64},
                               LLVM::LLVMVoidType::get(&getContext()));
    if (failed(failedCheck)) {
      module.emitError() << "overlap-assert-to-stderr: the module declares "
                            "'overlap_check_failed' with another signature";
      return signalPassFailure();
    }
    // One global per distinct message. Last first: a split moves the ops
    // after the assert into a new block, so in this order each op is moved
    // once (in program order a block of n asserts moves O(n^2) ops).
    llvm::StringMap<std::string> globals; // message -> its global's name
    for (cf::AssertOp op : llvm::reverse(asserts)) {
      Location loc = op.getLoc();
      std::string text =
          ("overlap: run-time check failed: " + op.getMsg() + "\n").str();
      Block *before = op->getBlock();
      Block *after = before->splitBlock(op->getIterator());
      Block *fail = b.createBlock(after);
      b.setInsertionPointToEnd(before);
      cf::CondBranchOp::create(b, loc, op.getArg(), after, fail);
      b.setInsertionPointToEnd(fail);
      Value msg;
      auto [it, fresh] = globals.try_emplace(
          text, "overlap_assert_msg_" + std::to_string(globals.size()));
      if (fresh)
        msg = LLVM::createGlobalString(loc, b, it->second, text,
                                       LLVM::Linkage::Internal);
      else
        msg = LLVM::AddressOfOp::create(b, loc, ptr, it->second);
      Value len = LLVM::ConstantOp::create(b, loc, i64, text.size());
      LLVM::CallOp::create(b, loc, *failedCheck, ValueRange{msg, len});
      LLVM::UnreachableOp::create(b, loc);
      op->erase();
    }
  }
};

} // namespace
