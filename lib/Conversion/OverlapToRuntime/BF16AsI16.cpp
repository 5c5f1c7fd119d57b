//===- BF16AsI16.cpp - Host bf16 values as i16 bit patterns -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap-bf16-as-i16 (Passes.td): after the host's lowering to the LLVM
// dialect, every bf16 that is only moved (loaded, stored, selected, a
// constant, a global, a phi) becomes the i16 of the same bits, so that no
// x86 backend promotes it to f32 and back through `__truncsfbf2`.
//
//===----------------------------------------------------------------------===//

#include "overlap/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPBF16ASI16
#include "overlap/Conversion/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;

namespace {

/// Whether `type` is or holds bf16 (a vector, an LLVM array, struct or
/// function type of it).
bool holdsBF16(Type type) {
  bool found = false;
  type.walk([&](Type t) {
    if (t.isBF16())
      found = true;
  });
  return found;
}

bool touchesBF16(Operation *op) {
  auto isBF16 = [](Value v) { return holdsBF16(v.getType()); };
  return llvm::any_of(op->getOperands(), isBF16) ||
         llvm::any_of(op->getResults(), isBF16);
}

/// The LLVM ops whose meaning does not depend on what the bits of a value
/// are: with i16 in place of bf16 they do the same.
bool movesBitsOnly(Operation *op) {
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::GEPOp, LLVM::SelectOp,
             LLVM::ConstantOp, LLVM::BitcastOp, LLVM::BrOp, LLVM::CondBrOp,
             LLVM::SwitchOp, LLVM::ReturnOp, LLVM::CallOp, LLVM::LLVMFuncOp,
             LLVM::GlobalOp, LLVM::AddressOfOp, LLVM::ZeroOp, LLVM::UndefOp,
             LLVM::PoisonOp, LLVM::AllocaOp, LLVM::InsertElementOp,
             LLVM::ExtractElementOp, LLVM::ShuffleVectorOp,
             LLVM::InsertValueOp, LLVM::ExtractValueOp, LLVM::FreezeOp>(op);
}

struct OverlapBF16AsI16Pass
    : public overlap::impl::OverlapBF16AsI16Base<OverlapBF16AsI16Pass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Type i16 = IntegerType::get(ctx, 16);

    // Ops with bf16 semantics (none is expected on the host by now) keep
    // bf16 at their operands and results, behind a pair of bitcasts: the
    // inner one of each pair is left as it is.
    SmallVector<Operation *> others;
    module.walk([&](Operation *op) {
      if (isa<gpu::GPUModuleOp>(op))
        return WalkResult::skip();
      if (op != module && !movesBitsOnly(op) && touchesBF16(op))
        others.push_back(op);
      return WalkResult::advance();
    });
    llvm::DenseSet<Operation *> keep(others.begin(), others.end());
    auto asBits = [&](Type type) -> Type {
      if (type.isBF16())
        return i16;
      if (auto vec = dyn_cast<VectorType>(type))
        if (vec.getElementType().isBF16())
          return vec.clone(i16);
      return nullptr;
    };
    for (Operation *op : others) {
      OpBuilder b(op);
      for (OpOperand &operand : op->getOpOperands()) {
        Type type = operand.get().getType();
        if (!holdsBF16(type))
          continue;
        Type bits = asBits(type);
        if (!bits) {
          op->emitOpError("has a bf16 operand of type ")
              << type << " that the host cannot carry as i16 bits";
          return signalPassFailure();
        }
        Value toBits = LLVM::BitcastOp::create(b, op->getLoc(), bits,
                                               operand.get());
        auto back = LLVM::BitcastOp::create(b, op->getLoc(), type, toBits);
        keep.insert(back);
        operand.set(back);
      }
      b.setInsertionPointAfter(op);
      for (OpResult result : op->getResults()) {
        Type type = result.getType();
        if (!holdsBF16(type))
          continue;
        Type bits = asBits(type);
        if (!bits) {
          op->emitOpError("has a bf16 result of type ")
              << type << " that the host cannot carry as i16 bits";
          return signalPassFailure();
        }
        auto toBits = LLVM::BitcastOp::create(b, op->getLoc(), bits, result);
        keep.insert(toBits);
        Value back = LLVM::BitcastOp::create(b, op->getLoc(), type, toBits);
        result.replaceAllUsesExcept(back, toBits);
      }
    }

    AttrTypeReplacer replacer;
    replacer.addReplacement([&](Type type) -> std::optional<Type> {
      if (type.isBF16())
        return i16;
      return std::nullopt;
    });
    replacer.addReplacement([&](FloatAttr attr) -> std::optional<Attribute> {
      if (!attr.getType().isBF16())
        return std::nullopt;
      return IntegerAttr::get(i16, attr.getValue().bitcastToAPInt());
    });
    replacer.addReplacement(
        [&](DenseElementsAttr attr) -> std::optional<Attribute> {
          if (!attr.getElementType().isBF16())
            return std::nullopt;
          return attr.bitcast(i16);
        });
    module.walk([&](Operation *op) {
      if (isa<gpu::GPUModuleOp>(op))
        return WalkResult::skip();
      if (op != module && !keep.contains(op))
        replacer.replaceElementsIn(op, /*replaceAttrs=*/true,
                                   /*replaceLocs=*/false,
                                   /*replaceTypes=*/true);
      return WalkResult::advance();
    });

    // What were bf16 <-> i16 bitcasts are now i16 to i16.
    SmallVector<LLVM::BitcastOp> same;
    module.walk([&](LLVM::BitcastOp cast) {
      if (cast.getArg().getType() == cast.getType())
        same.push_back(cast);
    });
    for (LLVM::BitcastOp cast : same) {
      cast.replaceAllUsesWith(cast.getArg());
      cast.erase();
    }
  }
};
} // namespace
