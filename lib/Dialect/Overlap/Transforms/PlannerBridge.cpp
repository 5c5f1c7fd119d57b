//===- PlannerBridge.cpp - What passes share to call the Planner -*- C++
//-*-===//

#include "PlannerBridge.h"
#include "TensorBuilders.h"

#include "overlap/Planner/Defaults.h"

using namespace mlir;
using namespace mlir::overlap;

FailureOr<planner::Profile>
mlir::overlap::loadPassProfile(Operation *anchor, StringRef passName,
                               StringRef nameOrPath) {
  std::string dir = planner::shippedProfilesDir();
  std::string path = planner::resolveProfilePath(nameOrPath, dir);
  if (path.empty())
    return anchor->emitError() << passName << ": profile: "
                               << planner::unknownProfileMessage(nameOrPath,
                                                                 dir);
  llvm::Expected<planner::Profile> loaded = planner::loadProfile(path);
  if (!loaded)
    return anchor->emitError()
           << passName << ": " << llvm::toString(loaded.takeError());
  return std::move(*loaded);
}

std::optional<planner::DType> mlir::overlap::plannerDType(Type type) {
  if (type.isF16())
    return planner::DType::F16;
  if (type.isBF16())
    return planner::DType::BF16;
  if (type.isF32())
    return planner::DType::F32;
  return std::nullopt;
}

std::optional<planner::Collective>
mlir::overlap::plannerCollective(Operation *op) {
  if (isa<MatmulAllReduceOp>(op))
    return planner::Collective::AllReduce;
  if (isa<MatmulReduceScatterOp>(op))
    return planner::Collective::ReduceScatter;
  if (isa<AllGatherMatmulOp>(op))
    return planner::Collective::AllGather;
  if (isa<AllToAllMatmulOp, MatmulAllToAllOp>(op))
    return planner::Collective::AllToAll;
  return std::nullopt;
}

int64_t mlir::overlap::fusedRows(Operation *op) {
  if (auto dispatch = dyn_cast<AllToAllMatmulOp>(op))
    return dispatch.getPlannedRows();
  if (auto combine = dyn_cast<MatmulAllToAllOp>(op))
    return combine.getPlannedRows();
  Value rows =
      isa<AllGatherMatmulOp>(op) ? op->getResult(0) : op->getOperand(0);
  return cast<ShapedType>(rows.getType()).getDimSize(0);
}

std::string mlir::overlap::dynamicShapeOf(Operation *op) {
  static constexpr const char *names[] = {"A", "B", "C"};
  auto describe = [](StringRef name, Value value) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << name << " is '" << value.getType() << "'";
    return text;
  };
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (i < std::size(names) &&
        !cast<ShapedType>(operand.getType()).hasStaticShape())
      return describe(names[i], operand);
  for (Value result : op->getResults())
    if (!cast<ShapedType>(result.getType()).hasStaticShape())
      return describe("the result", result);
  return "";
}

FailureOr<planner::TileLayout>
mlir::overlap::tileLayoutOf(Operation *op, PlanAttr plan, int64_t group) {
  std::optional<planner::Collective> collective = plannerCollective(op);
  if (!collective)
    return op->emitOpError() << "has no tile layout: not a fused op";
  // An all-to-all tile takes an equal share of every (rank, expert) block.
  int64_t slots = group * getExpertsPerRank(op);
  llvm::Expected<planner::TileLayout> layout = planner::TileLayout::create(
      *collective, fusedRows(op), slots, plan.getTiles());
  if (!layout)
    return op->emitOpError() << "plan tiles do not fit the op: "
                             << llvm::toString(layout.takeError());
  return std::move(*layout);
}

FailureOr<planner::RankMajorLayout>
mlir::overlap::rankMajorLayoutOf(Operation *op, PlanAttr plan, int64_t group) {
  std::optional<planner::Collective> collective = plannerCollective(op);
  ArrayRef<int64_t> tiles = plan.getTiles();
  if (!collective || group < 1 || tiles.size() % group != 0)
    return op->emitOpError()
           << "rank-major plan tiles [" << tiles
           << "] do not fit the op: expected the chunks of each of the "
           << group << " ranks' blocks";
  llvm::Expected<planner::RankMajorLayout> layout =
      planner::RankMajorLayout::create(*collective, fusedRows(op), group,
                                       tiles.take_front(tiles.size() / group));
  if (!layout)
    return op->emitOpError() << "rank-major plan tiles do not fit the op: "
                             << llvm::toString(layout.takeError());
  if (layout->tileRows() != std::vector<int64_t>(tiles.begin(), tiles.end()))
    return op->emitOpError()
           << "rank-major plan tiles [" << tiles
           << "] do not cut every rank's block the same way";
  return std::move(*layout);
}

/// `v` as `collapse_shape(linalg.transpose(x, [1, 0, 2]), [[0, 1], [2]])`:
/// x, or null.
static Value untransposedRows(Value v) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getReassociationIndices() !=
                       SmallVector<ReassociationIndices>{{0, 1}, {2}})
    return {};
  auto transpose = collapse.getSrc().getDefiningOp<linalg::TransposeOp>();
  if (!transpose || !transpose.hasPureTensorSemantics() ||
      transpose.getPermutation() != ArrayRef<int64_t>{1, 0, 2})
    return {};
  auto type = cast<RankedTensorType>(transpose.getInput().getType());
  return type.hasStaticShape() ? transpose.getInput() : Value();
}

std::optional<mlir::overlap::StridedRows>
mlir::overlap::stridedRowsOf(Operation *op) {
  if (!isa<MatmulReduceScatterOp, AllGatherMatmulOp>(op))
    return std::nullopt;
  mlir::overlap::StridedRows rows;
  rows.x = untransposedRows(op->getOperand(0));
  if (!rows.x)
    return std::nullopt;
  rows.b = cast<RankedTensorType>(rows.x.getType()).getDimSize(0);
  if (rows.b <= 1)
    return std::nullopt;
  Value c = op->getOperand(2);
  if (!fillThroughViews(c)) {
    rows.y = untransposedRows(c);
    if (!rows.y ||
        cast<RankedTensorType>(rows.y.getType()).getDimSize(0) != rows.b)
      return std::nullopt;
  }
  Value result = op->getResult(0);
  if (!result.hasOneUse())
    return std::nullopt;
  rows.expand = dyn_cast<tensor::ExpandShapeOp>(*result.getUsers().begin());
  if (!rows.expand ||
      rows.expand.getReassociationIndices() !=
          SmallVector<ReassociationIndices>{{0, 1}, {2}} ||
      rows.expand.getResultType().getDimSize(1) != rows.b ||
      !rows.expand.getResult().hasOneUse())
    return std::nullopt;
  rows.back = dyn_cast<linalg::TransposeOp>(
      *rows.expand.getResult().getUsers().begin());
  if (!rows.back || !rows.back.hasPureTensorSemantics() ||
      rows.back.getInput() != rows.expand.getResult() ||
      rows.back.getPermutation() != ArrayRef<int64_t>{1, 0, 2})
    return std::nullopt;
  return rows;
}
