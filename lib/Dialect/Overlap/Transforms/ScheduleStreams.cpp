//===- ScheduleStreams.cpp - Two streams joined by signal/wait -*- C++ -*-===//
//
// overlap-schedule-streams: after bufferization, moves each run of tile work
// into an overlap.concurrent with a compute and a comm stream, and inserts
// exactly one signal/wait per cross-stream dependence.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPSCHEDULESTREAMS
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

enum Stream : unsigned { Compute = 0, Comm = 1 };

/// The memory an op touches: the root buffer and an inclusive element
/// interval of it (the whole root when the layout is not static).
struct Footprint {
  Value root;
  int64_t lo = 0, hi = std::numeric_limits<int64_t>::max();
  bool write = false;

  bool overlaps(const Footprint &other) const {
    return root == other.root && lo <= other.hi && other.lo <= hi;
  }
};

Value rootOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
      continue;
    }
    break;
  }
  return v;
}

Footprint footprintOf(Value memref, bool write) {
  Footprint fp{rootOf(memref)};
  fp.write = write;
  auto type = dyn_cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type || !type.hasStaticShape() ||
      failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return fp;
  int64_t extent = 0;
  for (auto [size, stride] : llvm::zip(type.getShape(), strides))
    extent += (size - 1) * stride;
  fp.lo = offset;
  fp.hi = offset + extent;
  return fp;
}

/// Tile work this pass schedules: returns the stream, or nothing for ops
/// that are not tile work.
std::optional<Stream> classify(Operation *op) {
  if (isTileCollective(op))
    return isa<BaseMemRefType>(op->getOperand(0).getType())
               ? std::optional<Stream>(Comm)
               : std::nullopt;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return linalgOp.hasPureBufferSemantics() ? std::optional<Stream>(Compute)
                                             : std::nullopt;
  if (auto gemm = dyn_cast<GemmOp>(op))
    return isa<BaseMemRefType>(gemm.getInit().getType())
               ? std::optional<Stream>(Compute)
               : std::nullopt;
  if (isa<memref::CopyOp>(op))
    return Compute; // Refined by the producer of its source.
  return std::nullopt;
}

/// Ops that can move in front of the concurrent region: views,
/// allocations and other ops without memory effects on existing memory.
bool isHoistable(Operation *op) {
  if (op->hasTrait<OpTrait::IsTerminator>())
    return false;
  if (isa<ViewLikeOpInterface, memref::AllocOp>(op))
    return op->getNumRegions() == 0;
  return isMemoryEffectFree(op) && op->getNumRegions() == 0;
}

/// What `op` reads and writes: its own memory effects, and those of the ops
/// in its regions on memory defined outside it (a linalg.generic whose body
/// loads from a captured buffer, a gather's `tensor.extract` once
/// bufferized, reads that buffer though it is no operand).
SmallVector<Footprint> footprintsOf(Operation *op) {
  SmallVector<Footprint> fps;
  auto definedInside = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      def = cast<BlockArgument>(v).getOwner()->getParentOp();
    return def != op && op->isAncestor(def);
  };
  auto add = [&](Operation *effecting) {
    auto iface = dyn_cast<MemoryEffectOpInterface>(effecting);
    if (!iface)
      return;
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &effect : effects) {
      Value v = effect.getValue();
      if (!v || !isa<BaseMemRefType>(v.getType()))
        continue;
      if (effecting != op && definedInside(v))
        continue;
      fps.push_back(
          footprintOf(v, isa<MemoryEffects::Write>(effect.getEffect())));
    }
  };
  add(op);
  op->walk([&](Operation *nested) {
    if (nested != op)
      add(nested);
  });
  return fps;
}

bool conflicts(ArrayRef<Footprint> a, ArrayRef<Footprint> b) {
  for (const Footprint &x : a)
    for (const Footprint &y : b)
      if ((x.write || y.write) && x.overlaps(y))
        return true;
  return false;
}

struct Task {
  Operation *op;
  Stream stream;
  SmallVector<Footprint> footprints;
  /// Position within its stream.
  unsigned position = 0;
  /// Flag raised after this op, if another stream waits for it.
  std::optional<int64_t> signalFlag;
  /// Flag to wait for before this op.
  std::optional<int64_t> waitFlag;
};

struct OverlapScheduleStreamsPass
    : public mlir::overlap::impl::OverlapScheduleStreamsBase<
          OverlapScheduleStreamsPass> {
  using OverlapScheduleStreamsBase::OverlapScheduleStreamsBase;

  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) {
      // Function bodies and the bodies of loops and branches (a JAX scan,
      // while or cond): each iteration's tiles overlap among themselves.
      Operation *parent = block->getParentOp();
      if (!parent->hasTrait<OpTrait::IsIsolatedFromAbove>() &&
          !isa<func::FuncOp, scf::ForOp, scf::WhileOp, scf::IfOp,
               scf::IndexSwitchOp, scf::ExecuteRegionOp>(parent))
        return;
      blocks.push_back(block);
    });
    for (Block *block : blocks)
      scheduleBlock(*block);
  }

  /// Splits the block into maximal runs of tile work and schedules each run
  /// that holds a collective.
  void scheduleBlock(Block &block) {
    SmallVector<SmallVector<Operation *>> runs(1);
    for (Operation &op : block) {
      if (classify(&op) || isHoistable(&op))
        runs.back().push_back(&op);
      else if (!runs.back().empty())
        runs.emplace_back();
    }
    for (ArrayRef<Operation *> run : runs)
      if (llvm::any_of(run, [](Operation *op) {
            return classify(op) == std::optional<Stream>(Comm);
          }))
        scheduleRun(run);
  }

  void scheduleRun(ArrayRef<Operation *> run) {
    SmallVector<Operation *> hoisted;
    SmallVector<Task> tasks;
    for (Operation *op : run) {
      if (std::optional<Stream> stream = classify(op))
        tasks.push_back({op, *stream, footprintsOf(op)});
      else
        hoisted.push_back(op);
    }
    // A hoisted op must not use what a task produces.
    for (Operation *op : hoisted)
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (llvm::any_of(tasks, [&](const Task &t) { return t.op == def; })) {
            remarkMissed(op, "not-scheduled", "overlap-schedule-streams",
                         "not scheduled on streams: this op uses a result "
                         "of tile work and cannot move in front of it");
            return;
          }

    // Copies follow the stream of the latest writer of what they read.
    for (unsigned i = 0; i < tasks.size(); ++i) {
      if (!isa<memref::CopyOp>(tasks[i].op))
        continue;
      SmallVector<Footprint> reads;
      for (const Footprint &fp : tasks[i].footprints)
        if (!fp.write)
          reads.push_back(fp);
      for (unsigned j = i; j-- > 0;) {
        bool writes =
            llvm::any_of(tasks[j].footprints, [&](const Footprint &w) {
              return w.write && llvm::any_of(reads, [&](const Footprint &r) {
                       return w.overlaps(r);
                     });
            });
        if (writes) {
          tasks[i].stream = tasks[j].stream;
          break;
        }
      }
    }

    // Dependences: for each task, the latest conflicting task of the other
    // stream, unless this stream already waits for it or a later one.
    unsigned counts[2] = {0, 0};
    for (Task &t : tasks)
      t.position = counts[t.stream]++;
    int64_t flags = 0;
    // waitedUpTo[s] = 1 + position in the other stream already waited for.
    unsigned waitedUpTo[2] = {0, 0};
    for (unsigned i = 0; i < tasks.size(); ++i) {
      Task &consumer = tasks[i];
      for (unsigned j = i; j-- > 0;) {
        Task &producer = tasks[j];
        if (producer.stream == consumer.stream ||
            !conflicts(producer.footprints, consumer.footprints))
          continue;
        if (producer.position + 1 <= waitedUpTo[consumer.stream])
          break;
        if (!producer.signalFlag)
          producer.signalFlag = flags++;
        consumer.waitFlag = producer.signalFlag;
        waitedUpTo[consumer.stream] = producer.position + 1;
        break;
      }
    }

    // Build: hoisted ops, signals, concurrent { compute, comm }.
    Operation *anchor = tasks.front().op;
    IRRewriter rewriter(anchor->getContext());
    for (Operation *op : hoisted)
      op->moveBefore(anchor);
    rewriter.setInsertionPoint(anchor);
    Location loc = anchor->getLoc();
    Value signals;
    auto signalsType =
        flags ? SignalsType::get(rewriter.getContext(), flags) : SignalsType();
    if (flags)
      signals = SignalsOp::create(rewriter, loc, signalsType);
    auto concurrent = ConcurrentOp::create(rewriter, loc);
    Block *body = rewriter.createBlock(&concurrent.getBody());
    Block *streamBlocks[2];
    const char *names[2] = {"compute", "comm"};
    for (unsigned s = 0; s < 2; ++s) {
      rewriter.setInsertionPointToEnd(body);
      auto stream =
          StreamOp::create(rewriter, loc, rewriter.getStringAttr(names[s]));
      streamBlocks[s] = rewriter.createBlock(&stream.getBody());
    }
    for (Task &t : tasks) {
      Block *dest = streamBlocks[t.stream];
      rewriter.setInsertionPointToEnd(dest);
      if (t.waitFlag && !testingDropWaits)
        WaitOp::create(rewriter, t.op->getLoc(), signals, *t.waitFlag);
      t.op->moveBefore(dest, dest->end());
      rewriter.setInsertionPointToEnd(dest);
      if (t.signalFlag)
        SignalOp::create(rewriter, t.op->getLoc(), signals, *t.signalFlag);
    }
  }
};

} // namespace
