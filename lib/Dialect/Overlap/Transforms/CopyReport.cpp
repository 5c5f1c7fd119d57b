//===- CopyReport.cpp - Every copy a call makes, with its bytes --*- C++
//-*-===//
//
// overlap-copy-report (Passes.td): after bufferization, the ops of a
// function that only move or fill memory (copies, transposes, fills,
// broadcasts, elementwise conversions), each with the bytes it writes per
// call, and per function their sum priced at the profile's memory
// bandwidth. Remarks only: the IR is not changed.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"
#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "PlannerBridge.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPCOPYREPORT
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

constexpr llvm::StringLiteral kPass = "overlap-copy-report";

/// Bytes of a memref, or nullopt when its shape or element size is not
/// static.
std::optional<int64_t> bytesOf(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * ((bits + 7) / 8);
}

/// An elementwise generic that only copies or converts its one input.
bool isConversion(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isProjectedPermutation(); }))
    return false;
  Block *body = op.getBlock();
  Value yielded = body->getTerminator()->getOperand(0);
  if (yielded == body->getArgument(0))
    return body->getOperations().size() == 1;
  Operation *def = yielded.getDefiningOp();
  return body->getOperations().size() == 2 && def &&
         isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
             arith::FPToSIOp, arith::FPToUIOp, arith::ExtSIOp, arith::ExtUIOp,
             arith::TruncIOp, arith::BitcastOp>(def) &&
         def->getOperand(0) == body->getArgument(0);
}

/// What a copy-like op is: its kind, the memref it writes and the one it
/// reads (null for a fill).
struct CopyLike {
  StringRef kind;
  Value written, read;
};

std::optional<CopyLike> classify(Operation *op) {
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return CopyLike{"copy", copy.getTarget(), copy.getSource()};
  if (auto copy = dyn_cast<linalg::CopyOp>(op);
      copy && copy.hasPureBufferSemantics())
    return CopyLike{"copy", copy.getOutputs()[0], copy.getInputs()[0]};
  if (auto t = dyn_cast<linalg::TransposeOp>(op);
      t && t.hasPureBufferSemantics())
    return CopyLike{"transpose", t.getInit(), t.getInput()};
  if (auto b = dyn_cast<linalg::BroadcastOp>(op);
      b && b.hasPureBufferSemantics())
    return CopyLike{"broadcast", b.getInit(), b.getInput()};
  if (auto fill = dyn_cast<linalg::FillOp>(op);
      fill && fill.hasPureBufferSemantics())
    return CopyLike{"fill", fill.getOutputs()[0], Value()};
  if (auto clone = dyn_cast<bufferization::CloneOp>(op))
    return CopyLike{"clone", clone.getOutput(), clone.getInput()};
  if (auto generic = dyn_cast<linalg::GenericOp>(op);
      generic && isConversion(generic))
    return CopyLike{"conversion", generic.getDpsInits()[0],
                    generic.getDpsInputs()[0]};
  return std::nullopt;
}

/// How many times `op` runs per call: the product of the static trip
/// counts of the scf.for loops around it; nullopt inside any other loop.
std::optional<int64_t> runsPerCall(Operation *op, Operation *func) {
  int64_t runs = 1;
  for (Operation *p = op->getParentOp(); p && p != func; p = p->getParentOp()) {
    if (auto loop = dyn_cast<scf::ForOp>(p)) {
      std::optional<APInt> trips = loop.getStaticTripCount();
      if (!trips)
        return std::nullopt;
      runs *= trips->getSExtValue();
    } else if (isa<scf::WhileOp, scf::ParallelOp, scf::ForallOp>(p)) {
      return std::nullopt;
    }
  }
  return runs;
}

std::string mib(int64_t bytes) {
  return llvm::formatv("{0:F1} MiB", double(bytes) / (1024.0 * 1024.0)).str();
}

struct OverlapCopyReportPass
    : public mlir::overlap::impl::OverlapCopyReportBase<OverlapCopyReportPass> {
  using OverlapCopyReportBase::OverlapCopyReportBase;

  void runOnOperation() override {
    // Remarks only: every analysis stays valid.
    markAllAnalysesPreserved();
    // Nothing to say when no one listens (remarks are off by default).
    if (!getContext().getRemarkEngine())
      return;
    FailureOr<::overlap::planner::Profile> prof =
        loadPassProfile(getOperation(), "overlap-copy-report", profile);
    if (failed(prof))
      return signalPassFailure();
    std::optional<double> bandwidth = prof->device.memoryBandwidth;
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      int64_t written = 0, moved = 0, ops = 0, unsized = 0;
      func.walk([&](Operation *op) {
        std::optional<CopyLike> copy = classify(op);
        if (!copy)
          return;
        ++ops;
        auto stream = op->getParentOfType<StreamOp>();
        std::string where = stream
                                ? "on the " + stream.getName().str() + " stream"
                                : "outside the streams";
        std::optional<int64_t> out = bytesOf(copy->written);
        std::optional<int64_t> in =
            copy->read ? bytesOf(copy->read) : std::optional<int64_t>(0);
        std::optional<int64_t> runs = runsPerCall(op, func);
        if (!out || !in || !runs) {
          ++unsized;
          if (auto r = remarkAnalysis(op, "copy", kPass))
            r << (op->getName().getStringRef() + " (" + copy->kind + ") " +
                  where + ": its bytes per call are known only at run " +
                  "time (a dynamic size or a loop of unknown trips)")
                     .str();
          return;
        }
        written += *out * *runs;
        moved += (*out + *in) * *runs;
        if (auto r = remarkAnalysis(op, "copy", kPass))
          r << (op->getName().getStringRef() + " (" + copy->kind + ") writes " +
                std::to_string(*out * *runs) + " bytes (" + mib(*out * *runs) +
                ") per call " + where +
                (*runs > 1 ? " (" + std::to_string(*runs) + " runs)" : ""))
                   .str()
            << remark::metric("bytes", *out * *runs);
      });
      double us =
          bandwidth && *bandwidth > 0 ? double(moved) / *bandwidth * 1e6 : 0.0;
      if (auto r = remarkAnalysis(func, "copy-report", kPass)) {
        std::string text = llvm::formatv(
            "{0} copy-like ops outside GEMMs and collectives write {1} bytes "
            "({2}) per call and move {3} bytes: {4:F1} us at {5}",
            ops, written, mib(written), moved, us,
            bandwidth ? llvm::formatv("{0:F0} GB/s ({1})", *bandwidth / 1e9,
                                      prof->name)
                            .str()
                      : "no memory bandwidth in profile " + prof->name);
        if (unsized)
          text += llvm::formatv(", and {0} of run-time size", unsized).str();
        r << text << remark::metric("written_bytes", written)
          << remark::metric("moved_bytes", moved)
          << remark::metric("copy_us", us);
      }
    });
  }
};

} // namespace
