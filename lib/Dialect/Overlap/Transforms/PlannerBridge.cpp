//===- PlannerBridge.cpp - What passes share to call the Planner -*- C++ -*-===//

#include "PlannerBridge.h"

#include "overlap/Planner/Defaults.h"

using namespace mlir;
namespace planner = ::overlap::planner;

FailureOr<planner::Profile>
mlir::overlap::loadPassProfile(Operation *anchor, StringRef passName,
                               StringRef nameOrPath) {
  std::string dir = planner::shippedProfilesDir();
  std::string path = planner::resolveProfilePath(nameOrPath, dir);
  if (path.empty())
    return anchor->emitError()
           << passName << ": profile '" << nameOrPath
           << "' is neither a file nor a name in " << dir;
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
