//===- UserJson.cpp - JSON from users, with bounded nesting ----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/UserJson.h"

using namespace llvm;
using namespace overlap::planner;

/// Offset of the first bracket nested deeper than `limit`, skipping string
/// contents (escapes included); npos when there is none. Unbalanced or
/// malformed text is left to the parser, which reports it without recursing
/// deeper than the limit.
static size_t findTooDeep(StringRef text, unsigned limit) {
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // the escaped character, whatever it is
      else if (c == '"')
        inString = false;
      continue;
    }
    switch (c) {
    case '"':
      inString = true;
      break;
    case '[':
    case '{':
      if (++depth > limit)
        return i;
      break;
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return StringRef::npos;
}

Expected<json::Value> overlap::planner::parseUserJson(StringRef text,
                                                  StringRef nameForErrors) {
  size_t at = findTooDeep(text, kMaxJsonDepth);
  if (at != StringRef::npos) {
    StringRef before = text.take_front(at);
    size_t line = before.count('\n') + 1;
    size_t lineStart = before.rfind('\n');
    size_t column = lineStart == StringRef::npos ? at + 1 : at - lineStart;
    return createStringError(
        std::errc::invalid_argument,
        "%s: invalid JSON: nested deeper than %u levels at byte %zu "
        "(line %zu, column %zu)",
        nameForErrors.str().c_str(), kMaxJsonDepth, at, line, column);
  }
  Expected<json::Value> root = json::parse(text);
  if (!root)
    return createStringError(std::errc::invalid_argument, "%s: invalid JSON %s",
                             nameForErrors.str().c_str(),
                             toString(root.takeError()).c_str());
  return root;
}
