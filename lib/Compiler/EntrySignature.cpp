//===- EntrySignature.cpp - Entry signatures from the IR --------*- C++ -*-===//
//
// Signatures and grids from the input IR, and their embedding in LLVM IR.
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/EntrySignature.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace artifact = ::overlap::artifact;

namespace mlir {
namespace overlap {
namespace compiler {

llvm::Expected<artifact::BufferSpec> specFor(Type type, std::string name,
                                             llvm::StringRef runner) {
  std::string error;
  llvm::raw_string_ostream os(error);
  auto shaped = dyn_cast<ShapedType>(type);
  auto memref = dyn_cast<MemRefType>(type);
  if (!shaped || !(isa<RankedTensorType>(type) || memref) ||
      (memref && !memref.getLayout().isIdentity())) {
    os << name << " has type " << type << "; " << runner
       << " handles ranked tensors and identity-layout memrefs";
    return llvm::createStringError(error);
  }
  artifact::BufferSpec spec;
  spec.name = std::move(name);
  Type elem = shaped.getElementType();
  if (elem.isF32())
    spec.elem = artifact::Elem::F32;
  else if (elem.isF16())
    spec.elem = artifact::Elem::F16;
  else if (elem.isBF16())
    spec.elem = artifact::Elem::BF16;
  else if (elem.isF64())
    spec.elem = artifact::Elem::F64;
  else if (elem.isSignlessInteger(1))
    spec.elem = artifact::Elem::I1;
  else if (elem.isSignlessInteger(8))
    spec.elem = artifact::Elem::I8;
  else if (elem.isSignlessInteger(16))
    spec.elem = artifact::Elem::I16;
  else if (elem.isSignlessInteger(32))
    spec.elem = artifact::Elem::I32;
  else if (elem.isSignlessInteger(64))
    spec.elem = artifact::Elem::I64;
  else {
    os << spec.name << " has element type " << elem << "; " << runner
       << " handles f32, f16, bf16, f64 and signless i1, i8, i16, i32, i64";
    return llvm::createStringError(error);
  }
  for (int64_t d : shaped.getShape())
    spec.shape.push_back(ShapedType::isDynamic(d) ? artifact::kDynamicExtent
                                                  : d);
  return spec;
}

llvm::Expected<artifact::Signature> signatureOf(func::FuncOp func,
                                                llvm::StringRef runner) {
  artifact::Signature sig;
  sig.name = func.getSymName().str();
  sig.symbol = artifact::cInterfaceSymbol(sig.name);
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto spec = specFor(type, "arg" + std::to_string(i), runner);
    if (!spec)
      return spec.takeError();
    // What the entry writes to a memref it takes is an output; a tensor
    // argument is a value (see BufferSpec::inout).
    spec->inout = isa<MemRefType>(type);
    sig.args.push_back(*spec);
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    auto spec = specFor(type, "result" + std::to_string(i), runner);
    if (!spec)
      return spec.takeError();
    sig.results.push_back(*spec);
  }
  return sig;
}

/// The grids `func` and the functions it calls name (by symbol).
static llvm::StringSet<> gridsUsedBy(ModuleOp module, func::FuncOp func) {
  llvm::StringSet<> grids, seen;
  SmallVector<func::FuncOp> work = {func};
  while (!work.empty()) {
    func::FuncOp f = work.pop_back_val();
    if (!seen.insert(f.getSymName()).second)
      continue;
    f.walk([&](Operation *op) {
      for (NamedAttribute attr : op->getAttrs()) {
        auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
        if (!ref)
          continue;
        if (module.lookupSymbol<shard::GridOp>(ref.getAttr()))
          grids.insert(ref.getValue());
        else if (auto callee = module.lookupSymbol<func::FuncOp>(ref.getAttr()))
          work.push_back(callee);
      }
    });
  }
  return grids;
}

llvm::Expected<std::vector<artifact::GridSpec>>
gridsOf(ModuleOp module, llvm::StringRef runner, func::FuncOp entry) {
  std::vector<artifact::GridSpec> grids;
  // With an entry, only the grids it (or a function it calls) names:
  // upstream's test modules declare grids of several sizes, one per
  // function. An entry that names none (a partitioned function that
  // communicates nowhere) runs on the module's grids when they all have
  // one shape, else on one rank.
  llvm::StringSet<> used;
  bool all = !entry;
  if (entry) {
    used = gridsUsedBy(module, entry);
    if (used.empty()) {
      auto ops = module.getOps<shard::GridOp>();
      all = llvm::all_equal(
          llvm::map_range(ops, [](shard::GridOp g) { return g.getShape(); }));
    }
  }
  for (auto grid : module.getOps<shard::GridOp>()) {
    if (!all && !used.contains(grid.getSymName()))
      continue;
    artifact::GridSpec spec;
    spec.name = grid.getSymName().str();
    for (int64_t extent : grid.getShape())
      spec.shape.push_back(
          ShapedType::isDynamic(extent) ? artifact::kDynamicExtent : extent);
    if (!spec.checkedSize())
      return llvm::createStringError(
          "grid @" + spec.name + " has more devices than " + runner + " runs");
    grids.push_back(std::move(spec));
  }
  return grids;
}

llvm::Expected<std::string> soleEntry(ModuleOp module) {
  std::vector<std::string> names;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      names.push_back(func.getSymName().str());
  if (names.size() == 1)
    return names.front();
  return llvm::createStringError(
      "the module has " + std::to_string(names.size()) +
      " public functions with a body; choose one with --entry");
}

llvm::Expected<artifact::Signature>
describeEntry(ModuleOp module, llvm::StringRef entry, llvm::StringRef runner) {
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func || !func.isPublic() || func.isExternal())
    return llvm::createStringError("no public function @" + entry +
                                   " with a body");
  llvm::Expected<std::vector<artifact::GridSpec>> grids =
      gridsOf(module, runner, func);
  if (!grids)
    return grids.takeError();
  llvm::Expected<artifact::Signature> sig = signatureOf(func, runner);
  if (!sig)
    return sig.takeError();
  sig->grids = std::move(*grids);
  return std::move(*sig);
}

static bool isScalar(Type type) {
  return isa<IntegerType, FloatType, IndexType>(type);
}

bool boxEntryScalars(ModuleOp module, llvm::StringRef entry) {
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func || func.isExternal())
    return false;
  FunctionType type = func.getFunctionType();
  if (llvm::none_of(type.getInputs(), isScalar) &&
      llvm::none_of(type.getResults(), isScalar))
    return false;
  if (!SymbolTable::symbolKnownUseEmpty(func, module))
    return false;
  MLIRContext *ctx = module.getContext();
  ctx->getOrLoadDialect<tensor::TensorDialect>();
  ctx->getOrLoadDialect<arith::ArithDialect>();
  OpBuilder b(ctx);
  auto boxed = [&](Type t) -> Type {
    if (!isScalar(t))
      return t;
    return RankedTensorType::get(
        {}, isa<IndexType>(t) ? IntegerType::get(ctx, 64) : t);
  };
  Block &body = func.getBody().front();
  b.setInsertionPointToStart(&body);
  for (BlockArgument arg : body.getArguments()) {
    Type t = arg.getType();
    if (!isScalar(t))
      continue;
    arg.setType(boxed(t));
    auto extract =
        tensor::ExtractOp::create(b, arg.getLoc(), arg, ValueRange{});
    Value v = extract;
    if (isa<IndexType>(t))
      v = arith::IndexCastOp::create(b, arg.getLoc(), t, v);
    arg.replaceAllUsesExcept(v, extract);
  }
  func.walk([&](func::ReturnOp ret) {
    b.setInsertionPoint(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Value v = operand.get();
      Type t = v.getType();
      if (!isScalar(t))
        continue;
      if (isa<IndexType>(t))
        v = arith::IndexCastOp::create(b, ret.getLoc(), b.getI64Type(), v);
      operand.set(tensor::FromElementsOp::create(
          b, ret.getLoc(), cast<RankedTensorType>(boxed(t)), ValueRange{v}));
    }
  });
  SmallVector<Type> inputs, results;
  for (Type t : type.getInputs())
    inputs.push_back(boxed(t));
  for (Type t : type.getResults())
    results.push_back(boxed(t));
  func.setFunctionType(FunctionType::get(ctx, inputs, results));
  return true;
}

/// Why `name` cannot be a word of the signature's text (parseSignature
/// splits lines at spaces and the text at newlines), or "".
static std::string unrepresentable(llvm::StringRef name) {
  if (name.empty())
    return "is empty";
  if (name.size() > kMaxSignatureName)
    return "is " + std::to_string(name.size()) + " bytes long, more than " +
           std::to_string(kMaxSignatureName);
  for (char c : name) {
    if (c == ' ')
      return "holds a space";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return "holds a control character (newline, tab, ...)";
  }
  return "";
}

/// `@name` as MLIR prints a symbol that needs quotes.
static std::string shown(llvm::StringRef name) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "@\"";
  llvm::printEscapedString(name.take_front(64), os);
  os << (name.size() > 64 ? "...\"" : "\"");
  return text;
}

llvm::Error checkEmbeddable(const artifact::Signature &sig) {
  auto name = [&](llvm::StringRef what, llvm::StringRef symbol) -> llvm::Error {
    std::string why = unrepresentable(symbol);
    if (why.empty())
      return llvm::Error::success();
    return llvm::createStringError(
        what + " " + shown(symbol) + ": the name " + why +
        ", which the embedded signature cannot carry (names of the entry and "
        "of grids are 1 to " +
        std::to_string(kMaxSignatureName) +
        " bytes without whitespace or control characters); rename it");
  };
  if (llvm::Error err = name("function", sig.name))
    return err;
  for (const artifact::GridSpec &grid : sig.grids)
    if (llvm::Error err = name("grid", grid.name))
      return err;
  for (const auto *buffers : {&sig.args, &sig.results})
    for (const artifact::BufferSpec &spec : *buffers) {
      std::optional<uint64_t> bytes = spec.checkedBytes();
      if (!bytes)
        return llvm::createStringError(
            spec.name + " (" + spec.typeString() +
            ") needs more than 2^63 bytes: its size overflows int64");
      if (*bytes > kMaxBufferBytes)
        return llvm::createStringError(
            spec.name + " (" + spec.typeString() + ") needs " +
            std::to_string(*bytes) + " bytes, more than the " +
            std::to_string(kMaxBufferBytes) +
            " (16 TiB) a buffer of a runnable entry may have");
    }
  return llvm::Error::success();
}

void embedSignature(llvm::Module &module, const artifact::Signature &sig) {
  if (llvm::GlobalVariable *old =
          module.getNamedGlobal(artifact::kSignatureSymbol))
    old->eraseFromParent();
  llvm::Constant *text = llvm::ConstantDataArray::getString(
      module.getContext(), artifact::formatSignature(sig), /*AddNull=*/true);
  auto *global = new llvm::GlobalVariable(
      module, text->getType(), /*isConstant=*/true,
      llvm::GlobalValue::ExternalLinkage, text, artifact::kSignatureSymbol);
  global->setAlignment(llvm::Align(1));
}

} // namespace compiler
} // namespace overlap
} // namespace mlir
