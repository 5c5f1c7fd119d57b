//===- EntrySignature.h - Entry signatures from the IR ----------*- C++ -*-===//
//
// The MLIR side of overlap::artifact::Signature (overlap/Artifact/Signature.h):
// the signature of an entry function and the grids of its module, read from the
// input IR before compilation, and the constant overlap-compile embeds in
// objects and shared libraries so that overlap-exec can run them without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_COMPILER_ENTRYSIGNATURE_H
#define OVERLAP_COMPILER_ENTRYSIGNATURE_H

#include "overlap/Artifact/Signature.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir {
namespace func {
class FuncOp;
} // namespace func

namespace overlap {
namespace compiler {

/// The buffer of an argument or result of type `type`: a statically shaped
/// tensor or identity-layout memref of f32, f16 or bf16. Otherwise fails
/// with a message that says what `runner` (the tool that would run it)
/// handles.
llvm::Expected<::overlap::artifact::BufferSpec>
specFor(Type type, std::string name, llvm::StringRef runner);

/// The name, C-interface symbol, arguments and results of `func`.
llvm::Expected<::overlap::artifact::Signature>
signatureOf(func::FuncOp func, llvm::StringRef runner);

/// The module's `shard.grid`s (with `entry`, only those it or a function it
/// calls names; for an entry that names none, all when they have one
/// shape, else none: it runs on one rank). Dynamic extents are "?" (a
/// run sets the first from its number of ranks, the others to 1).
llvm::Expected<std::vector<::overlap::artifact::GridSpec>>
gridsOf(ModuleOp module, llvm::StringRef runner, func::FuncOp entry = {});

/// The name of the only public function with a body (the entry when none is
/// chosen), without changing the module; fails when there is not exactly
/// one.
llvm::Expected<std::string> soleEntry(ModuleOp module);

/// signatureOf the public function `entry` of `module`, with the module's
/// grids.
llvm::Expected<::overlap::artifact::Signature>
describeEntry(ModuleOp module, llvm::StringRef entry, llvm::StringRef runner);

/// The entry `entry`'s scalar arguments and results (integers, floats,
/// index) become 0-d tensors (index as i64), so that it is called as
/// every runner calls an entry, with buffers only: a scalar is passed and
/// returned as a rank-0 buffer, which the signature then describes. Done
/// when a runnable artifact is emitted (--emit=obj/so, overlap-run); a
/// module that calls its entry itself keeps its scalars (and the runners
/// then say they take buffers only). Returns whether anything changed.
bool boxEntryScalars(ModuleOp module, llvm::StringRef entry);

/// The longest entry or grid name a signature carries, and the largest
/// buffer (16 TiB, beyond any device) of an entry that gets one.
constexpr size_t kMaxSignatureName = 256;
constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 44;

/// Fails, saying which symbol or buffer and why, when `sig` cannot be
/// embedded as it is: an entry or grid name that is empty, longer than
/// kMaxSignatureName or holds whitespace or a control character (it would
/// add or break lines of the text, which is parsed by lines and words), or
/// a buffer whose byte size overflows int64 or exceeds kMaxBufferBytes.
llvm::Error checkEmbeddable(const ::overlap::artifact::Signature &sig);

/// Adds the constant `overlap_entry_signature` (formatSignature's text,
/// NUL-terminated, exported) to `module`.
void embedSignature(llvm::Module &module,
                    const ::overlap::artifact::Signature &sig);

} // namespace compiler
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_COMPILER_ENTRYSIGNATURE_H
