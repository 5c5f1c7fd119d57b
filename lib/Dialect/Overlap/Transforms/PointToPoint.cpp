//===- PointToPoint.cpp - shard.send / shard.recv as exchanges --*- C++ -*-===//
//
// Part of overlap-expand-collectives. In an SPMD program every rank of a
// group runs a shard.send and a shard.recv at the same point, each with
// its own peer (a dynamic destination or source computed from the
// process index, as a ring writes them). The runtime has collectives, not
// point-to-point calls: the k-th send of a function on a grid's axes
// stacks every group rank's input and destination (two all_gathers, the
// group size times the data: the price of needing no point-to-point call),
// and the k-th recv on those axes, of the same tensor type, takes its
// source's block from the stack, after checking at run time that the
// source sent to it. See PointToPoint.h.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/PointToPoint.h"
#include "overlap/Dialect/Overlap/IR/OverlapOps.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "Raise.h"
#include "TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Dominance.h"

#include <map>

using namespace mlir;
using namespace mlir::overlap;

namespace {

constexpr llvm::StringLiteral kPass = "overlap-expand-collectives";

/// What a send and a recv must share to pair: the grid, the axes and the
/// tensor type.
std::string pairKey(Operation *op) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getAttr("grid") << "|" << op->getAttr("grid_axes") << "|"
     << op->getOperand(0).getType();
  return key;
}

std::string where(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName() << " at " << op->getLoc();
  return text;
}

void check(OpBuilder &b, Location loc, Value ok, const std::string &msg) {
  cf::AssertOp::create(b, loc, ok, msg);
}

/// "destination" of a send, "source" of a recv.
const char *peerName(Operation *op) {
  return isa<shard::SendOp>(op) ? "destination" : "source";
}

/// `peer` as written: "[0, ?]" (a dynamic entry as ?).
std::string peerText(ArrayRef<int64_t> peer) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(peer, os, [&](int64_t c) {
    if (ShapedType::isDynamic(c))
      os << "?";
    else
      os << c;
  });
  os << "]";
  return text;
}

/// The peer's index in the group: row-major over the axes of its static
/// multi-index (dynamic entries from `dynamic`, in order). Each dynamic
/// entry is checked at run time against its axis' extent (row-major
/// alone would take [0, 2] on a 2x2 grid for rank 2); static ones were
/// checked at compile time (whyNotStacked).
Value peerInGroup(OpBuilder &b, Location loc, Operation *op,
                  shard::GridOp grid, ArrayRef<int16_t> axes,
                  ArrayRef<int64_t> peer, ValueRange dynamic) {
  SmallVector<Value> coords;
  for (auto [i, c] : llvm::enumerate(peer)) {
    if (!ShapedType::isDynamic(c)) {
      coords.push_back(arith::ConstantIndexOp::create(b, loc, c));
      continue;
    }
    Value coord = dynamic.front();
    dynamic = dynamic.drop_front();
    int64_t extent = grid.getShape()[axes[i]];
    Value inAxis = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, coord,
        arith::ConstantIndexOp::create(b, loc, extent));
    check(b, loc, inAxis,
          where(op) + ": its " + peerName(op) + " " + peerText(peer) +
              " has entry " + std::to_string(i) + " outside grid axis " +
              std::to_string(axes[i]) + " of @" + grid.getSymName().str() +
              " (extent " + std::to_string(extent) + ")");
    coords.push_back(coord);
  }
  return linearInGroup(b, loc, grid, axes, coords);
}

/// What the send leaves for its recv.
struct Sent {
  Value stack; // [group, ...input]
  Value dests; // [group, 1] i64: each group rank's destination
};

Sent expandSend(OpBuilder &b, shard::SendOp send, shard::GridOp grid) {
  Location loc = send.getLoc();
  ArrayRef<int16_t> axes = send.getGridAxes();
  int64_t group = getGroupSize(grid, axes);
  Sent sent;
  sent.stack = stackGroup(b, loc, send.getInput(), grid, axes, group);
  Value dest = peerInGroup(b, loc, send, grid, axes, send.getDestination(),
                           send.getDestinationDynamic());
  Value dest64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), dest);
  Value one = tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({1}, b.getI64Type()), ValueRange{dest64});
  sent.dests = stackGroup(b, loc, one, grid, axes, group);
  return sent;
}

Value expandRecv(OpBuilder &b, shard::RecvOp recv, shard::SendOp send,
                 const Sent &sent, shard::GridOp grid) {
  Location loc = recv.getLoc();
  ArrayRef<int16_t> axes = recv.getGridAxes();
  int64_t group = getGroupSize(grid, axes);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value me = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                        groupRankOf(b, loc, grid, axes));
  auto destOf = [&](Value k) -> Value {
    return tensor::ExtractOp::create(b, loc, sent.dests,
                                     ValueRange{k, index(0)});
  };
  Value source;
  if (std::optional<ArrayRef<int64_t>> peer = recv.getSource()) {
    source =
        peerInGroup(b, loc, recv, grid, axes, *peer, recv.getSourceDynamic());
    Value inGroup = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          source, index(group));
    check(b, loc, inGroup,
          where(recv) + ": its source is outside the group of " +
              std::to_string(group) + " ranks");
    Value sentHere = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           destOf(source), me);
    check(b, loc, sentHere,
          where(recv) + ": its source did not send to this rank at " +
              where(send));
  } else {
    // From any: the one group rank that sent here.
    Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
    auto loop = scf::ForOp::create(
        b, loc, index(0), index(group), index(1), ValueRange{zero, index(0)},
        [&](OpBuilder &nb, Location nloc, Value k, ValueRange acc) {
          Value here = arith::CmpIOp::create(
              nb, nloc, arith::CmpIPredicate::eq,
              tensor::ExtractOp::create(
                  nb, nloc, sent.dests,
                  ValueRange{k, arith::ConstantIndexOp::create(nb, nloc, 0)}),
              me);
          Value count = arith::AddIOp::create(
              nb, nloc, acc[0],
              arith::ExtUIOp::create(nb, nloc, nb.getI64Type(), here));
          Value at = arith::SelectOp::create(nb, nloc, here, k, acc[1]);
          scf::YieldOp::create(nb, nloc, ValueRange{count, at});
        });
    Value once = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, loop.getResult(0),
        arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1));
    check(b, loc, once,
          where(recv) +
              " (no source): exactly one rank of the group must "
              "send to this rank at " +
              where(send));
    source = loop.getResult(1);
  }
  return pickBlock(b, loc, sent.stack, source);
}

/// Why a send's destination or a recv's source is no rank of the group at
/// compile time: an entry, written or a constant operand, outside its
/// axis' extent (each axis on its own: row-major alone takes [0, 2] on a
/// 2x2 grid for rank 2). Upstream's verifier checks the written entries;
/// the operands are ours. Empty if none; the others are checked at run
/// time (peerInGroup).
std::string peerOutsideGrid(Operation *op, shard::GridOp grid) {
  std::optional<ArrayRef<int64_t>> peer;
  ArrayRef<int16_t> axes;
  ValueRange dynamic;
  if (auto send = dyn_cast<shard::SendOp>(op)) {
    peer = send.getDestination();
    axes = send.getGridAxes();
    dynamic = send.getDestinationDynamic();
  } else if (auto recv = dyn_cast<shard::RecvOp>(op)) {
    peer = recv.getSource();
    axes = recv.getGridAxes();
    dynamic = recv.getSourceDynamic();
  }
  if (!peer || peer->size() != axes.size())
    return "";
  for (auto [i, c] : llvm::enumerate(*peer)) {
    std::optional<int64_t> value = c;
    if (ShapedType::isDynamic(c)) {
      if (dynamic.empty())
        return "";
      value = getConstantIntValue(dynamic.front());
      dynamic = dynamic.drop_front();
    }
    int64_t extent = grid.getShape()[axes[i]];
    if (!value || ShapedType::isDynamic(extent) ||
        (*value >= 0 && *value < extent))
      continue;
    return std::string("its ") + peerName(op) + " " + peerText(*peer) +
           " has entry " + std::to_string(i) + " = " + std::to_string(*value) +
           " outside grid axis " + std::to_string(axes[i]) + " of @" +
           grid.getSymName().str() + " (extent " + std::to_string(extent) +
           "): it would address another rank";
  }
  return "";
}

/// Static shapes and grid, and element types the runtime's collectives
/// take: what the stacks need.
std::string whyNotStacked(Operation *op, SymbolTableCollection &symbols) {
  auto input = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!input || !result || !input.hasStaticShape() || !result.hasStaticShape())
    return "a shape is dynamic";
  auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(
      op, op->getAttrOfType<FlatSymbolRefAttr>("grid"));
  if (!grid || llvm::any_of(grid.getShape(), ShapedType::isDynamic))
    return "its grid is missing or has a dynamic shape";
  // i1: the stacks are all_gathers of booleans, which move bytes.
  if (!isRuntimeElementType(input.getElementType()) &&
      !input.getElementType().isSignlessInteger(1))
    return "its element type " + remarkText(input.getElementType()) +
           " is not one the runtime's collectives take";
  return peerOutsideGrid(op, grid);
}

} // namespace

std::string mlir::overlap::whyNotPaired(Operation *op,
                                        SymbolTableCollection &symbols) {
  std::string why = whyNotStacked(op, symbols);
  auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(
      op, op->getAttrOfType<FlatSymbolRefAttr>("grid"));
  if (std::string outside = grid ? peerOutsideGrid(op, grid) : "";
      !outside.empty() && outside == why)
    return outside;
  if (!why.empty())
    return "point-to-point '" + op->getName().getStringRef().str() +
           "' is written with all_gathers, which need what it lacks: " + why;
  if (isa<shard::RecvOp>(op))
    return "no shard.send before it in the function on the same grid axes "
           "and tensor type pairs with it (the k-th send pairs with the k-th "
           "recv): a recv that nothing is sent to would wait forever";
  return ""; // a send: written by overlap-expand-collectives
}

void mlir::overlap::expandPointToPoint(Operation *root,
                                       SymbolTableCollection &symbols) {
  root->walk([&](func::FuncOp func) {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<shard::SendOp, shard::RecvOp>(op) &&
          whyNotStacked(op, symbols).empty())
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    DominanceInfo dominance(func);
    std::map<std::string, SmallVector<shard::SendOp>> sends;
    std::map<std::string, size_t> received;
    SmallVector<std::pair<shard::RecvOp, shard::SendOp>> pairs;
    for (Operation *op : ops) {
      std::string key = pairKey(op);
      if (auto send = dyn_cast<shard::SendOp>(op)) {
        sends[key].push_back(send);
        continue;
      }
      size_t &k = received[key];
      SmallVector<shard::SendOp> &queue = sends[key];
      if (k < queue.size() && dominance.dominates(queue[k].getOperation(), op))
        pairs.push_back({cast<shard::RecvOp>(op), queue[k++]});
    }
    OpBuilder b(func.getContext());
    llvm::DenseMap<Operation *, Sent> stacked;
    for (auto [recv, send] : pairs) {
      auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(
          send, send.getGridAttr());
      auto it = stacked.find(send);
      if (it == stacked.end()) {
        b.setInsertionPoint(send);
        it = stacked.try_emplace(send, expandSend(b, send, grid)).first;
      }
      b.setInsertionPoint(recv);
      Value got = expandRecv(b, recv, send, it->second, grid);
      remarkPassed(recv, "paired", kPass,
                   "receives from " + where(send) +
                       " (its source's block of a stack of every rank's "
                       "input)");
      recv.getResult().replaceAllUsesWith(got);
      recv->erase();
    }
    // Every send: its result is its input (a buffered send; what a recv
    // takes is in the stack built above).
    for (Operation *op : ops) {
      auto send = dyn_cast<shard::SendOp>(op);
      if (!send)
        continue;
      if (!stacked.count(send))
        remarkMissed(send, "unreceived", kPass,
                     "no shard.recv after it takes what it sends: a "
                     "buffered send nobody reads; its result is its input");
      send.getResult().replaceAllUsesWith(send.getInput());
      send->erase();
    }
  });
}
