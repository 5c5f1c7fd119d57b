//===- Plan.cpp - Attach Planner decisions to fused ops -------*- C++ -*-===//
//
// overlap-plan: for every fused op, ask the Planner how to split it along M
// and record the answer as `#overlap.plan`, with a remark that says what was
// predicted. The Planner sees numbers only, never IR.
//
//===----------------------------------------------------------------------===//

#include "PlannerBridge.h"
#include "TensorBuilders.h"
#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"
#include "overlap/Planner/Json.h"
#include "overlap/Planner/TilePlanner.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPPLAN
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

std::string formatTiles(ArrayRef<int64_t> tiles) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(tiles, os);
  os << "]";
  return text;
}

struct OverlapPlanPass
    : public mlir::overlap::impl::OverlapPlanBase<OverlapPlanPass> {
  using OverlapPlanBase::OverlapPlanBase;

  void runOnOperation() override {
    if (ranks < 0) {
      getOperation().emitError()
          << "overlap-plan: option ranks is " << static_cast<int64_t>(ranks)
          << "; expected 0 (each op's group size from its grid) or a group "
             "size >= 1";
      return signalPassFailure();
    }
    // A misspelt strategy is an error whether or not anything is planned.
    if (llvm::Error e = planner::checkStrategy(strategy)) {
      getOperation().emitError()
          << "overlap-plan: " << llvm::toString(std::move(e));
      return signalPassFailure();
    }
    FailureOr<planner::Profile> loaded =
        loadPassProfile(getOperation(), "overlap-plan", profile);
    if (failed(loaded))
      return signalPassFailure();

    SymbolTableCollection symbols;
    WalkResult result = getOperation().walk([&](Operation *op) {
      if (!isFusedMatmul(op))
        return WalkResult::advance();
      if (failed(planOne(op, *loaded, symbols)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  /// The copies overlap-decompose adds to each tile smaller than M (see
  /// MatmulProblem::computeCopyBytesPerRow): read plus written bytes per
  /// row of M.
  static void priceTileCopies(Operation *op, planner::MatmulProblem &problem) {
    auto bytes = [](Value v) {
      return static_cast<double>(
          mlir::getElementTypeOrSelf(v.getType()).getIntOrFloatBitWidth() / 8);
    };
    Value a = op->getOperand(0), c = op->getOperand(2);
    double k = static_cast<double>(problem.k),
           n = static_cast<double>(problem.n);
    // A C that is not a fill is copied into each tile's packed rows.
    bool copiesC = !fillThroughViews(c) &&
                   isa<MatmulReduceScatterOp, MatmulAllToAllOp>(op);
    if (copiesC)
      problem.computeCopyBytesPerRow += 2 * n * bytes(c);
    if (isa<AllToAllMatmulOp>(op))
      problem.computeCopyBytesPerRow += 2 * k * bytes(a);
    if (isa<MatmulAllToAllOp>(op))
      problem.commCopyBytesPerRow += 2 * n * bytes(op->getResult(0));
    // [b, s, k] rows, computed b-major in place: tiles take whole groups of
    // b rows; an all-gather packs each tile's local rows (1/G of them, on
    // compute), a reduce-scatter unpacks what it receives (1/G, on comm).
    if (std::optional<StridedRows> sr = stridedRowsOf(op)) {
      problem.rowGroup = sr->b;
      double g = static_cast<double>(std::max<int64_t>(problem.ranks, 1));
      if (isa<AllGatherMatmulOp>(op))
        problem.computeCopyBytesPerRow += 2 * k * bytes(a) / g;
      else
        problem.commCopyBytesPerRow += 2 * n * bytes(op->getResult(0)) / g;
    }
  }

  /// Why the profile cannot price `problem` (no curve for its GEMM, none
  /// to scale from and no roofline; no curve for its collective), or empty.
  /// Such an op is kept whole, not refused: a profile never fails a
  /// compile (a malformed problem still does, in planTiles).
  static std::string unpriced(const planner::Profile &prof,
                              const planner::MatmulProblem &problem) {
    llvm::Expected<planner::CostModel> model =
        planner::CostModel::create(prof, problem);
    if (model)
      return "";
    std::string why;
    llvm::handleAllErrors(model.takeError(), [&](const llvm::ErrorInfoBase &e) {
      if (e.convertToErrorCode() == std::errc::not_supported)
        why = e.message();
    });
    return why;
  }

  LogicalResult planOne(Operation *op, const planner::Profile &prof,
                        SymbolTableCollection &symbols) {
    auto a = cast<RankedTensorType>(op->getOperand(0).getType());
    auto b = cast<RankedTensorType>(op->getOperand(1).getType());
    planner::MatmulProblem problem;
    problem.collective = *plannerCollective(op);
    problem.m = fusedRows(op);
    problem.k = a.getDimSize(a.getRank() - 1);
    problem.n = b.getDimSize(b.getRank() - 1);
    problem.side = isa<AllToAllMatmulOp>(op) ? planner::AllToAllSide::Dispatch
                                             : planner::AllToAllSide::Combine;
    problem.experts = getExpertsPerRank(op);
    std::optional<planner::DType> dtype = plannerDType(a.getElementType());
    if (!dtype)
      return op->emitOpError() << "cannot be planned: element type "
                               << a.getElementType() << " has no profile";
    problem.dtype = *dtype;
    // What the collective moves: the factors for an exchanged input, the
    // result (C's type, or the type it is rounded to) otherwise.
    Type moved = planner::exchangesInput(problem)
                     ? a.getElementType()
                     : mlir::getElementTypeOrSelf(op->getResult(0).getType());
    if (std::optional<planner::DType> comm = plannerDType(moved);
        comm && *comm != *dtype)
      problem.commDtype = *comm;
    if (std::string dynamic = dynamicShapeOf(op); !dynamic.empty()) {
      remarkMissed(op, "not-planned", "overlap-plan",
                   "not planned: " + dynamic + "; plans need static shapes");
      return success();
    }

    int64_t group = ranks > 0 ? int64_t(ranks) : groupSizeOf(op, symbols);
    if (ShapedType::isDynamic(group)) {
      remarkMissed(op, "not-planned", "overlap-plan",
                   "not planned: the group size of " +
                       remarkText(op->getAttr("grid")) +
                       " is not static; pass ranks=N to plan anyway");
      return success();
    }
    problem.ranks = group;
    priceTileCopies(op, problem);
    if (std::string why = unpriced(prof, problem); !why.empty()) {
      remarkMissed(op, "not-planned", "overlap-plan",
                   "not planned, kept whole: " + why);
      return success();
    }

    llvm::Expected<planner::Plan> plan =
        planner::planTiles(prof, problem, strategy);
    if (!plan)
      return op->emitOpError()
             << "overlap-plan failed: " << llvm::toString(plan.takeError());

    // waves prices one GEMM kernel that signals groups of its output tiles
    // (FlashOverlap's runtime); the decomposition emits one GEMM call per
    // tile, so the program is priced as it will run.
    std::optional<double> oneKernelUs;
    if (plan->singleGemmKernel) {
      oneKernelUs = plan->predictedUs;
      llvm::Expected<planner::Plan> emitted =
          planner::evaluateTiles(prof, problem, plan->tiles, plan->strategy);
      if (!emitted)
        return op->emitOpError() << "overlap-plan failed: "
                                 << llvm::toString(emitted.takeError());
      *plan = std::move(*emitted);
    }

    // Interleaved reduce-scatter and all-gather tiles take a share of every
    // rank's block; rank-major tiles are chunks of whole blocks.
    bool rankMajor = plan->layout == planner::TileOrder::RankMajor;
    bool perRank =
        problem.collective != planner::Collective::AllReduce && !rankMajor;
    int64_t blocks = group * problem.experts;
    for (int64_t rows : plan->tiles)
      if (perRank && rows % blocks != 0)
        return op->emitOpError()
               << "overlap-plan: strategy '" << strategy << "' chose tiles "
               << formatTiles(plan->tiles) << " that the "
               << (problem.experts > 1 ? "(rank, expert) blocks "
                                       : "group size ")
               << blocks
               << " do not divide; each tile must take the same rows "
                  "from every rank";

    Bound bound =
        plan->bound == planner::Bound::Comm ? Bound::Comm : Bound::Compute;
    op->setAttr(OverlapDialect::getPlanAttrName(),
                PlanAttr::get(op->getContext(), plan->tiles, plan->strategy,
                              bound, plan->predictedUs, plan->serialUs,
                              planner::toString(plan->layout), plan->groups));

    if (remark::detail::InFlightRemark r =
            remarkAnalysis(op, kPlanRemarkName, "overlap-plan"))
      if (failed(describePlan(op, prof, problem, *plan, oneKernelUs, r)))
        return failure();
    return success();
  }

  /// The plan remark: its text for people, its metrics (tiles, strategy,
  /// bound, predicted_us, serial_us, op) written as the Planner's JSON
  /// document writes them, and that document itself (planner::planToJSON)
  /// as the attribute of the remark's text, for the compiler's plan
  /// collection (compiler::PlanCollector) to hand on as it is.
  LogicalResult describePlan(Operation *op, const planner::Profile &prof,
                             const planner::MatmulProblem &problem,
                             const planner::Plan &plan,
                             std::optional<double> oneKernelUs,
                             remark::detail::InFlightRemark &remark) {
    llvm::Expected<planner::CostModel> model =
        planner::CostModel::create(prof, problem);
    if (!model)
      return op->emitOpError()
             << "overlap-plan failed: " << llvm::toString(model.takeError());
    llvm::json::Value document =
        planner::planToJSON(plan, problem, prof, *model);

    std::string why =
        llvm::formatv("tiles {0} ({1}, {2}-bound): ", formatTiles(plan.tiles),
                      plan.strategy, planner::toString(plan.bound))
            .str();
    if (plan.tiles.size() == 1) {
      why += llvm::formatv("one tile, no overlap wins; predicted {0:F1} us "
                           "(serial {1:F1} us)",
                           plan.predictedUs, plan.serialUs)
                 .str();
    } else {
      double gain =
          plan.serialUs > 0
              ? 100.0 * (plan.serialUs - plan.predictedUs) / plan.serialUs
              : 0.0;
      why += llvm::formatv("predicted {0:F1} us vs serial {1:F1} us, {2:F1}% "
                           "{3}",
                           plan.predictedUs, plan.serialUs, std::abs(gain),
                           gain >= 0 ? "faster" : "slower")
                 .str();
    }
    if (!plan.note.empty())
      why += " [" + plan.note + "]";
    if (oneKernelUs)
      why += llvm::formatv(" (priced as the per-tile GEMMs the compiler "
                           "emits; waves' one-kernel model predicts {0:F1} us)",
                           *oneKernelUs)
                 .str();
    remark::detail::Remark::Arg text(why);
    text.attr =
        StringAttr::get(op->getContext(), llvm::formatv("{0}", document).str());
    remark << text;
    for (llvm::StringRef key :
         {"tiles", "strategy", "bound", "predicted_us", "serial_us",
          "gemm_source"}) {
      const llvm::json::Value *value = document.getAsObject()->get(key);
      if (!value)
        continue;
      // Text as it is, fractions to the digits they have (the document's
      // times are rounded to the nanosecond), the rest as JSON.
      std::string shown;
      if (std::optional<llvm::StringRef> string = value->getAsString())
        shown = string->str();
      else if (value->kind() == llvm::json::Value::Number &&
               !value->getAsInteger())
        shown =
            llvm::formatv("{0}", llvm::format("%.15g", *value->getAsNumber()))
                .str();
      else
        shown = llvm::formatv("{0}", *value).str();
      remark << remark::detail::Remark::Arg(key, shown);
    }
    remark << remark::detail::Remark::Arg("op", op->getName().getStringRef());
    return success();
  }
};

} // namespace
