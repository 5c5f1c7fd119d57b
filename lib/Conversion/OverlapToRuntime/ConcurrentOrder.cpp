//===- ConcurrentOrder.cpp - What can run beside a collective -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "ConcurrentOrder.h"

#include "llvm/ADT/BitVector.h"

#include <map>
#include <optional>

using namespace mlir;
using namespace mlir::overlap;

DenseSet<Operation *>
mlir::overlap::opsBesideNoCollective(ConcurrentOp concurrent) {
  struct Node {
    Operation *op;
    size_t stream;
    bool collective;
  };
  SmallVector<Node> nodes;
  SmallVector<SmallVector<size_t>> next;
  std::map<std::pair<void *, int64_t>, SmallVector<size_t>> signals, waits;
  size_t streams = 0;
  for (auto stream : concurrent.getBody().getOps<StreamOp>()) {
    std::optional<size_t> last;
    for (Operation &op : stream.getBody().front()) {
      size_t id = nodes.size();
      bool collective = op.walk([](Operation *inner) {
                            return isTileCollective(inner)
                                       ? WalkResult::interrupt()
                                       : WalkResult::advance();
                          }).wasInterrupted();
      nodes.push_back({&op, streams, collective});
      next.emplace_back();
      if (last)
        next[*last].push_back(id);
      last = id;
      if (auto signal = dyn_cast<SignalOp>(op))
        signals[{signal.getSignals().getAsOpaquePointer(),
                 static_cast<int64_t>(signal.getIndex())}]
            .push_back(id);
      else if (auto wait = dyn_cast<WaitOp>(op))
        waits[{wait.getSignals().getAsOpaquePointer(),
               static_cast<int64_t>(wait.getIndex())}]
            .push_back(id);
    }
    ++streams;
  }
  for (auto &[key, from] : signals)
    if (auto it = waits.find(key); it != waits.end())
      for (size_t s : from)
        for (size_t w : it->second)
          next[s].push_back(w);
  SmallVector<SmallVector<size_t>> prev(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t j : next[i])
      prev[j].push_back(i);
  auto reach = [&](size_t from, const SmallVector<SmallVector<size_t>> &edges,
                   llvm::BitVector &seen) {
    SmallVector<size_t> work{from};
    seen.set(from);
    while (!work.empty()) {
      size_t n = work.pop_back_val();
      for (size_t m : edges[n])
        if (!seen.test(m)) {
          seen.set(m);
          work.push_back(m);
        }
    }
  };
  llvm::BitVector beside(nodes.size());
  for (size_t c = 0; c < nodes.size(); ++c) {
    if (!nodes[c].collective)
      continue;
    llvm::BitVector ordered(nodes.size());
    reach(c, next, ordered);
    reach(c, prev, ordered);
    for (size_t n = 0; n < nodes.size(); ++n)
      if (!ordered.test(n) && nodes[n].stream != nodes[c].stream)
        beside.set(n);
  }
  DenseSet<Operation *> alone;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!beside.test(n))
      nodes[n].op->walk([&](Operation *inner) { alone.insert(inner); });
  return alone;
}
