//===- Input.h - What the compile repairs in its input ----------*- C++ -*-===//
//
// Programs from upstream's partitioner carry things no compiled entry can
// have as they are: a `!shard.sharding` in a public signature, a
// tosa.matmul whose result type shard-partition left unsplit. repairInput
// fixes them in place, each with a warning that says what changed, before
// the entry is described and before the stages run (so a signature read
// from the repaired module is the compiled entry's).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_COMPILER_INPUT_H
#define OVERLAP_COMPILER_INPUT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <memory>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir {
namespace overlap {
namespace compiler {

/// - `!shard.sharding` results of public functions, and sharding arguments
///   nothing uses, are dropped from the signature (a sharding has no
///   run-time value); one the body uses, or a function the module also
///   calls, is an error with the function and the position.
/// - A tosa.matmul whose operands give another static [batch, M, N] than
///   its result type (MLIR 22's shard-partition splits the operands of a
///   sharded tosa.matmul and keeps the unsplit result type) takes the
///   operands' shape when its only users are the returns of a public
///   function no one calls, whose result type changes with it; otherwise
///   overlap-tosa-zero-points refuses it with the reason.
/// Idempotent; fails with a diagnostic on the module's context.
LogicalResult repairInput(ModuleOp module);

/// How deep brackets ('(', '[', '{', '<') may nest in a source text. MLIR's
/// parser recurses once per level and overflows the stack far deeper than
/// any program nests (an attribute 50,000 deep, a type 20,000 deep), and a
/// stack overflow is a SIGSEGV no tool can answer.
constexpr unsigned kMaxNestingDepth = 1000;

/// Scans the main buffer of `source` (strings and `//` comments skipped,
/// the `>` of `->` not a bracket) and fails with an error located at the
/// first bracket deeper than `limit`, emitted on `context`.
LogicalResult checkNestingDepth(const llvm::SourceMgr &source,
                                MLIRContext *context,
                                unsigned limit = kMaxNestingDepth);

/// A `shard.grid` with a static extent 0 (upstream's verifier takes it, and
/// its collectives' symbol checks then divide by the group size: SIGFPE)
/// is an error naming the grid, the axis and the shape. Run it on IR parsed
/// without verification, before the verifier.
LogicalResult checkGridExtents(Operation *root);

/// What our tools parse a source with: checkNestingDepth, the parse
/// without verification, checkGridExtents, then the verifier. Null after
/// an error, emitted on `context`.
OwningOpRef<ModuleOp>
parseCheckedSource(const std::shared_ptr<llvm::SourceMgr> &source,
                   MLIRContext *context);

} // namespace compiler
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_COMPILER_INPUT_H
