//===- Remarks.h - How Overlap's passes name their remarks ------*- C++ -*-===//
//
// Every decision of Overlap's passes is a remark of MLIR's remark framework
// (mlir/IR/Remarks.h): `remark::analysis` for plans (with metrics such as
// predicted_us), `remark::missed` with a reason for what a pass left alone,
// `remark::passed` for rewrites. All are in the category "overlap" (so
// `--remarks-filter=overlap` selects them), with the pass as subcategory and
// a short remark name ("plan", "raise", ...). Nothing is printed unless a
// tool or embedder enables the remark engine.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_REMARKS_H
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_REMARKS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Remarks.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
namespace overlap {

/// The category of every Overlap remark.
inline constexpr llvm::StringLiteral kRemarkCategory = "overlap";

/// The name of the Planner's decision remarks (compiler::collectPlans).
inline constexpr llvm::StringLiteral kPlanRemarkName = "plan";

/// Options of a remark `name` emitted by `pass`.
inline remark::RemarkOpts remarkOpts(llvm::StringRef name,
                                     llvm::StringRef pass) {
  return remark::RemarkOpts::name(name)
      .category(kRemarkCategory)
      .subCategory(pass);
}

/// The same, naming the function that holds `op` (the remark's Function).
inline remark::RemarkOpts remarkOpts(llvm::StringRef name, llvm::StringRef pass,
                                     Operation *op) {
  remark::RemarkOpts opts = remarkOpts(name, pass);
  for (Operation *parent = op; parent; parent = parent->getParentOp())
    if (auto symbol = parent->getAttrOfType<StringAttr>("sym_name");
        symbol && parent->getNumRegions())
      return opts.function(symbol.getValue());
  return opts;
}

/// `pass` left `op` alone: a missed remark `name` whose reason is `why`.
inline void remarkMissed(Operation *op, llvm::StringRef name,
                         llvm::StringRef pass, const llvm::Twine &why) {
  remark::missed(op->getLoc(), remarkOpts(name, pass, op))
      << remark::reason("{0}", why.str());
}

/// `pass` rewrote `op`: a passed remark `name` that says `what`.
inline void remarkPassed(Operation *op, llvm::StringRef name,
                         llvm::StringRef pass, const llvm::Twine &what) {
  remark::passed(op->getLoc(), remarkOpts(name, pass, op)) << what.str();
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
