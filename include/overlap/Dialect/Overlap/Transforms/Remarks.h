//===- Remarks.h - How Overlap's passes name their remarks ------*- C++ -*-===//
//
// Every decision of Overlap's passes is a remark of MLIR's remark framework
// (mlir/IR/Remarks.h): `remark::analysis` for plans (with metrics such as
// predicted_us), `remark::missed` with a reason for what a pass left alone,
// `remark::passed` for rewrites. All are in the category "overlap" with the
// pass as subcategory and a short remark name ("plan", "raised", ...), and
// are shown as `Category:overlap:overlap-plan`. Nothing is printed unless a
// tool or embedder enables the remark engine.
//
// The engine selects remarks by matching its regex against the category
// alone, so `--remarks-filter=overlap-plan` would select nothing although
// the remark shows that name. emitRemark therefore offers each remark under
// the names it is shown with, in turn: category "overlap" (subcategory the
// pass; `--remarks-filter=overlap` selects every pass's remarks), category
// "overlap:<pass>" (as shown), then category "<pass>" (shown as
// `Category:overlap-plan`). The first the filter accepts is emitted; this
// works with every tool's flags, mlir-opt's included.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_REMARKS_H
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_REMARKS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Remarks.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>
#include <string>

namespace mlir {
namespace overlap {

/// The category of every Overlap remark.
inline constexpr llvm::StringLiteral kRemarkCategory = "overlap";

/// The name of the Planner's decision remarks (compiler::collectPlans).
inline constexpr llvm::StringLiteral kPlanRemarkName = "plan";

/// "overlap:<pass>", with the lifetime of the program (a remark keeps its
/// category as a StringRef and may be reported when the context ends).
inline llvm::StringRef qualifiedRemarkCategory(llvm::StringRef pass) {
  static std::mutex mutex;
  static llvm::StringSet<> names;
  std::lock_guard<std::mutex> lock(mutex);
  return names.insert((kRemarkCategory + ":" + pass).str()).first->getKey();
}

/// The function that holds `op` (the remark's Function), or empty.
inline llvm::StringRef remarkFunction(Operation *op) {
  for (Operation *parent = op; parent; parent = parent->getParentOp())
    if (auto symbol = parent->getAttrOfType<StringAttr>("sym_name");
        symbol && parent->getNumRegions())
      return symbol.getValue();
  return {};
}

/// A remark `name` of `pass` about `op`, through `emit` (remark::passed,
/// remark::missed or remark::analysis), under the first of the names it is
/// shown with that the engine's filter selects (the file comment); empty
/// when none is selected, so that its text need not be built.
template <typename EmitFn>
remark::detail::InFlightRemark
emitRemarkAt(EmitFn emit, Location loc, llvm::StringRef function,
             llvm::StringRef name, llvm::StringRef pass) {
  if (!loc->getContext()->getRemarkEngine())
    return {};
  auto opts = remark::RemarkOpts::name(name).function(function);
  if (remark::detail::InFlightRemark r =
          emit(loc, opts.category(kRemarkCategory).subCategory(pass)))
    return r;
  if (remark::detail::InFlightRemark r =
          emit(loc, opts.category(qualifiedRemarkCategory(pass))))
    return r;
  return emit(loc, opts.category(pass));
}

/// The same about `op` (its location, the function that holds it).
template <typename EmitFn>
remark::detail::InFlightRemark emitRemark(EmitFn emit, Operation *op,
                                          llvm::StringRef name,
                                          llvm::StringRef pass) {
  return emitRemarkAt(emit, op->getLoc(), remarkFunction(op), name, pass);
}

/// `pass` planned or analysed `op`: an analysis remark `name`.
inline remark::detail::InFlightRemark
remarkAnalysis(Operation *op, llvm::StringRef name, llvm::StringRef pass) {
  return emitRemark(remark::analysis, op, name, pass);
}

/// `pass` left `op` alone: a missed remark `name` whose reason is `why`.
inline void remarkMissed(Operation *op, llvm::StringRef name,
                         llvm::StringRef pass, const llvm::Twine &why) {
  if (remark::detail::InFlightRemark r =
          emitRemark(remark::missed, op, name, pass))
    r << remark::reason("{0}", why.str());
}

/// `pass` rewrote `op`: a passed remark `name` that says `what`.
inline void remarkPassed(Operation *op, llvm::StringRef name,
                         llvm::StringRef pass, const llvm::Twine &what) {
  if (remark::detail::InFlightRemark r =
          emitRemark(remark::passed, op, name, pass))
    r << what.str();
}

/// Prints `value` (an attribute, a type) to a string, for remark text.
template <typename T> std::string remarkText(const T &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  return text;
}

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_DIALECT_OVERLAP_TRANSFORMS_REMARKS_H
