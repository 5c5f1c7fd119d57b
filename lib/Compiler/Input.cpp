//===- Input.cpp - What the compile repairs in its input --------*- C++ -*-===//
//
// See Input.h.
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Input.h"
#include "overlap/Dialect/Overlap/Transforms/Tosa.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace mlir {
namespace overlap {
namespace compiler {

/// A public function that takes or returns a `!shard.sharding` (upstream's
/// partition tests return one from shard.get_sharding): a compile-time
/// description of a layout with no value at run time. Such results, and
/// such arguments nothing uses, are dropped from the compiled signature
/// with a warning that names them; a sharding argument the body uses, or a
/// function that is also called in the module (its callers would lose a
/// result), is an error with the function and the position rather than an
/// LLVM translation failure.
static LogicalResult dropShardingValues(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    FunctionType type = func.getFunctionType();
    auto isSharding = [](Type t) { return isa<shard::ShardingType>(t); };
    if (llvm::none_of(type.getInputs(), isSharding) &&
        llvm::none_of(type.getResults(), isSharding))
      continue;
    auto refuse = [&](const char *what, unsigned i, const char *why) {
      return func.emitError()
             << "@" << func.getSymName() << " has a !shard.sharding as " << what
             << " " << i << ", which " << why
             << ": a sharding describes a layout at compile time and has no "
                "value at run time; drop it from the signature (a program "
                "can still use shard.get_sharding inside)";
    };
    bool called = !SymbolTable::symbolKnownUseEmpty(func, module);
    llvm::BitVector args(type.getNumInputs()), results(type.getNumResults());
    for (auto [i, t] : llvm::enumerate(type.getInputs())) {
      if (!isSharding(t))
        continue;
      if (!func.getArgument(i).use_empty())
        return refuse("argument", i, "the body uses");
      if (called)
        return refuse("argument", i, "its callers in the module pass");
      args.set(i);
    }
    for (auto [i, t] : llvm::enumerate(type.getResults())) {
      if (!isSharding(t))
        continue;
      if (called)
        return refuse("result", i, "its callers in the module take");
      results.set(i);
    }
    InFlightDiagnostic warning = func.emitWarning();
    warning << "@" << func.getSymName()
            << ": dropped from the compiled signature, as a sharding has no "
               "value at run time:";
    for (unsigned i : args.set_bits())
      warning << " argument " << i;
    for (unsigned i : results.set_bits())
      warning << " result " << i;
    warning.report();
    func.walk([&](func::ReturnOp ret) { ret->eraseOperands(results); });
    if (failed(func.eraseArguments(args)) || failed(func.eraseResults(results)))
      return func.emitError()
             << "cannot drop the sharding values of @" << func.getSymName();
  }
  return success();
}

/// The public, uncalled function whose returns are the only users of
/// `value`, if it is one.
static func::FuncOp returnedOnlyByEntry(Value value, ModuleOp module) {
  auto func = value.getParentRegion()->getParentOfType<func::FuncOp>();
  if (!func || !func.isPublic() || !func->getParentOp() ||
      func->getParentOp() != module.getOperation() ||
      !SymbolTable::symbolKnownUseEmpty(func, module))
    return {};
  for (Operation *user : value.getUsers())
    if (!isa<func::ReturnOp>(user) || user->getParentOp() != func)
      return {};
  return func;
}

static LogicalResult repairTosaMatmulResults(ModuleOp module) {
  SmallVector<tosa::MatMulOp> matmuls;
  module.walk([&](tosa::MatMulOp op) { matmuls.push_back(op); });
  for (tosa::MatMulOp op : matmuls) {
    std::optional<SmallVector<int64_t>> shape = tosaMatmulShapeOfOperands(op);
    auto result = dyn_cast<RankedTensorType>(op.getType());
    if (!shape || ArrayRef<int64_t>(*shape) == result.getShape())
      continue;
    func::FuncOp func = returnedOnlyByEntry(op.getResult(), module);
    if (!func)
      continue; // overlap-tosa-zero-points says why it cannot run.
    RankedTensorType repaired = result.clone(*shape);
    op.getResult().setType(repaired);
    SmallVector<Type> results(func.getResultTypes());
    SmallVector<unsigned> changed;
    for (OpOperand &use : op.getResult().getUses()) {
      results[use.getOperandNumber()] = repaired;
      changed.push_back(use.getOperandNumber());
    }
    func.setFunctionType(FunctionType::get(module.getContext(),
                                           func.getArgumentTypes(), results));
    InFlightDiagnostic warning = op.emitWarning();
    warning << "result type " << result
            << " contradicts the operands (upstream's shard-partition splits "
               "a tosa.matmul's operands and leaves its result unsplit): it "
               "is the operands' "
            << repaired << ", and so is @" << func.getSymName() << "'s";
    for (unsigned i : changed)
      warning << " result " << i;
  }
  return success();
}

LogicalResult repairInput(ModuleOp module) {
  if (failed(dropShardingValues(module)))
    return failure();
  return repairTosaMatmulResults(module);
}

} // namespace compiler
} // namespace overlap
} // namespace mlir

LogicalResult mlir::overlap::compiler::checkNestingDepth(
    const llvm::SourceMgr &source, MLIRContext *context, unsigned limit) {
  unsigned id = source.getMainFileID();
  const llvm::MemoryBuffer *buffer = source.getMemoryBuffer(id);
  llvm::StringRef text = buffer->getBuffer();
  // The open brackets, innermost last. A '>' closes only a '<' (else it
  // is a comparison, as in `d0 >= 0`, or the end of `->`), a closer pops
  // the '<'s left open above its own opener ('<' as less-than).
  std::string open;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '"') {
      // A string: its brackets are text. A backslash escapes one byte.
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '/' && i + 1 < e && text[i + 1] == '/') {
      size_t end = text.find('\n', i);
      i = end == llvm::StringRef::npos ? e : end;
      continue;
    }
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      open.push_back(c);
      unsigned depth = open.size();
      if (depth <= limit)
        continue;
      auto [line, column] = source.getLineAndColumn(
          llvm::SMLoc::getFromPointer(text.data() + i), id);
      return emitError(FileLineColLoc::get(
                 context, buffer->getBufferIdentifier(), line, column))
             << "brackets nest deeper than " << limit << " levels here (this '"
             << c << "' opens level " << depth
             << "): the input is refused before it is parsed, as the "
                "parser would run out of stack";
    }
    if (c == '>') {
      if (i > 0 && text[i - 1] == '-')
        continue; // `->`
      if (!open.empty() && open.back() == '<')
        open.pop_back();
      continue;
    }
    if (c == ')' || c == ']' || c == '}') {
      const char opener = c == ')' ? '(' : c == ']' ? '[' : '{';
      size_t at = open.find_last_of(opener);
      if (at != std::string::npos &&
          open.find_first_not_of('<', at + 1) == std::string::npos)
        open.resize(at); // the opener and the '<'s left open above it
    }
  }
  return success();
}

LogicalResult mlir::overlap::compiler::checkGridExtents(Operation *root) {
  bool bad = false;
  root->walk([&](shard::GridOp grid) {
    ArrayRef<int64_t> shape = grid.getShape();
    for (auto [axis, extent] : llvm::enumerate(shape)) {
      if (extent != 0)
        continue;
      std::string shown;
      llvm::raw_string_ostream os(shown);
      llvm::interleave(
          shape, os,
          [&](int64_t d) {
            if (ShapedType::isDynamic(d))
              os << "?";
            else
              os << d;
          },
          "x");
      grid.emitOpError() << "@" << grid.getSymName() << " has extent 0 on axis "
                         << axis << " (shape " << shown
                         << "): every axis of a grid needs at least one "
                            "process";
      bad = true;
      break;
    }
  });
  return failure(bad);
}

OwningOpRef<ModuleOp> mlir::overlap::compiler::parseCheckedSource(
    const std::shared_ptr<llvm::SourceMgr> &source, MLIRContext *context) {
  if (failed(checkNestingDepth(*source, context)))
    return nullptr;
  ParserConfig config(context, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(source, config);
  if (!module || failed(checkGridExtents(*module)) || failed(verify(*module)))
    return nullptr;
  return module;
}
