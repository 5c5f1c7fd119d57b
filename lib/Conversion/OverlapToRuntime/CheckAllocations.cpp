//===- CheckAllocations.cpp - Run-time checks of host allocations ---------===//
//
// overlap-check-allocations (Passes.td): a host memref.alloc whose sizes come
// from the inputs could ask malloc for more than there is (a null block the
// program then wrote through: SIGSEGV) or for a byte count that wraps around
// (a small block it wrote past). Each becomes a failed run-time check that
// names the buffer, through overlap-assert-to-stderr, which runs after.
//
//===----------------------------------------------------------------------===//

#include "overlap/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPCHECKALLOCATIONS
#include "overlap/Conversion/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;

namespace {

/// The largest byte count a checked allocation may ask for: far above any
/// memory, and room left for malloc's alignment padding without wrapping.
constexpr int64_t kMaxBytes = int64_t(1) << 62;

/// Bytes of one element in memory (i1: one, as LLVM stores it); 0 when
/// unknown (no size check then, only the null check).
int64_t elementBytes(Type type) {
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return (type.getIntOrFloatBitWidth() + 7) / 8;
  return 0;
}

struct OverlapCheckAllocationsPass
    : public mlir::overlap::impl::OverlapCheckAllocationsBase<
          OverlapCheckAllocationsPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    getOperation().walk([&](memref::AllocOp op) {
      if (!op->getParentOfType<gpu::GPUModuleOp>())
        allocs.push_back(op);
    });
    OpBuilder b(&getContext());
    for (memref::AllocOp op : allocs)
      check(b, op);
  }

  void check(OpBuilder &b, memref::AllocOp op) {
    Location loc = op.getLoc();
    MemRefType type = op.getType();
    if (type.hasStaticShape() && type.getNumElements() == 0)
      return;
    std::string what;
    {
      llvm::raw_string_ostream os(what);
      os << "cannot allocate " << type << " at ";
      // file:line:col where there is one (a JAX program's, a fused one's).
      if (auto at = loc->findInstanceOf<FileLineColLoc>())
        os << at.getFilename().getValue() << ":" << at.getLine() << ":"
           << at.getColumn();
      else
        os << loc;
      if (type.hasStaticShape()) {
        if (int64_t bytes = elementBytes(type.getElementType()))
          os << " (" << type.getNumElements() * bytes << " bytes)";
      }
    }
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    b.setInsertionPoint(op);
    // The element count, and before the allocation the sizes' check.
    Value count;
    if (!op.getDynamicSizes().empty()) {
      int64_t elem = elementBytes(type.getElementType());
      Value ok;
      Value bytes = index(elem ? elem : 1);
      count = index(1);
      auto both = [&](Value a, Value c) {
        return a ? arith::AndIOp::create(b, loc, a, c).getResult() : c;
      };
      unsigned next = 0;
      for (int64_t dim : type.getShape()) {
        Value size = ShapedType::isDynamic(dim)
                         ? op.getDynamicSizes()[next++]
                         : index(dim);
        if (ShapedType::isDynamic(dim))
          ok = both(ok, arith::CmpIOp::create(
                            b, loc, arith::CmpIPredicate::sge, size, index(0)));
        // bytes * size <= kMaxBytes, asked without multiplying: size == 0
        // or bytes <= kMaxBytes / size (size is non-negative where it
        // counts: a negative one fails the check above).
        Value zero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           size, index(0));
        Value safeSize = arith::SelectOp::create(b, loc, zero, index(1), size);
        Value limit =
            arith::DivSIOp::create(b, loc, index(kMaxBytes), safeSize);
        Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                           bytes, limit);
        ok = both(ok, arith::OrIOp::create(b, loc, zero, fits));
        // Kept within bounds while the check has not failed: 0 stays 0.
        bytes = arith::SelectOp::create(
            b, loc, fits, arith::MulIOp::create(b, loc, bytes, size),
            index(0));
        count = arith::MulIOp::create(b, loc, count, size);
      }
      cf::AssertOp::create(b, loc, ok,
                           what +
                               ": a size from the inputs is negative or the "
                               "buffer would be larger than 2^62 bytes");
    }
    // After it: a null block (malloc out of memory) is an error, not a
    // pointer the program writes through.
    b.setInsertionPointAfter(op);
    Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, op);
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, ptr,
                                     index(0));
    if (count)
      ok = arith::OrIOp::create(
          b, loc, ok,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, count,
                                index(0)));
    cf::AssertOp::create(b, loc, ok, what + ": out of memory");
  }
};

} // namespace
