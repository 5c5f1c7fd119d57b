//===- ChainPlanner.h - Matrix-chain order and fusion ----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// For a chain A1 A2 ... An with dimensions P0..Pn (Ai is P(i-1) x P(i)):
// the OP_Count order (fewest scalar multiplications, Cormen's DP), then for
// every internal node of that tree the TEE-ACM² choice between no fusion,
// left fusion ((A B) C in one kernel) and right fusion (A (B C)), by the
// modelled number of global-memory element transfers with a fast memory of
// Mf elements. The formulas are listed in docs/planner.md.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_CHAINPLANNER_H
#define OVERLAP_PLANNER_CHAINPLANNER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace overlap {
namespace planner {

enum class Fusion { None, Left, Right };
llvm::StringRef toString(Fusion fusion);

/// One internal node (i, j) of the OP_Count tree, 1-based matrix indices,
/// split between A_k and A_(k+1).
struct ChainNode {
  int64_t i = 0;
  int64_t j = 0;
  int64_t k = 0;
  int64_t noFuse = 0;
  std::optional<int64_t> leftFuse;
  std::optional<int64_t> rightFuse;
  Fusion decision = Fusion::None;
  /// Tile (x, y) of the chosen option.
  int64_t tileX = 0;
  int64_t tileY = 0;
  /// min of the applicable options: the node's D as its parent sees it.
  int64_t finalTransfers = 0;
};

struct ChainPlan {
  /// "((A1 (A2 A3)) ((A4 A5) A6))"; a single matrix is "A1".
  std::string order;
  /// Scalar multiplications of that order (the OP_Count minimum).
  int64_t scalarMults = 0;
  /// Internal nodes in post-order; the root is last.
  std::vector<ChainNode> nodes;
  /// Modelled global transfers of the whole chain (the root's final).
  int64_t totalTransfers = 0;
};

/// `dims` = P0..Pn (n >= 1 matrices), all positive; `fastMemElems` >= 1.
/// Fails on bad input or when a count would overflow 64 bits.
llvm::Expected<ChainPlan> planChain(llvm::ArrayRef<int64_t> dims,
                                    double fastMemElems);

/// Scalar multiplications of the best parenthesization (OP_Count DP only).
llvm::Expected<int64_t> minScalarMults(llvm::ArrayRef<int64_t> dims);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_CHAINPLANNER_H
