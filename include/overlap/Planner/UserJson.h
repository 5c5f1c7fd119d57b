//===- UserJson.h - JSON from users, with bounded nesting ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// llvm::json::parse recurses once per nested array or object, so a document
// nested a hundred thousand levels deep (or one made of unclosed brackets)
// overflows the stack before the parser can say anything. Every JSON text
// that comes from a user (profiles, and what is built from them) goes through
// parseUserJson, which refuses nesting beyond kMaxJsonDepth before parsing.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_USERJSON_H
#define OVERLAP_PLANNER_USERJSON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace overlap {
namespace planner {

/// Deepest nesting of arrays and objects accepted (the shipped profiles
/// use 7).
constexpr unsigned kMaxJsonDepth = 64;

/// Parses `text`; errors (std::errc::invalid_argument) name `nameForErrors`
/// and, for nesting beyond kMaxJsonDepth, the limit and the byte offset,
/// line and column of the bracket that goes past it.
llvm::Expected<llvm::json::Value> parseUserJson(llvm::StringRef text,
                                            llvm::StringRef nameForErrors);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_USERJSON_H
