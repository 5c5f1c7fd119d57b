//===- EnumNames.h - Enum values and their names in text --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// One table of (value, name) per enum gives both directions, the name a
// value prints as (JSON, reports, flags) and the value a name parses to, so
// that the two cannot drift apart, and the list of names that messages and
// help print. Plain header-only C++ (no LLVM, nothing to link), so every
// library shares it: the Planner and those above it, the Loader and the
// Artifact library.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_SUPPORT_ENUMNAMES_H
#define OVERLAP_SUPPORT_ENUMNAMES_H

#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlap {

/// One row of an enum's table.
template <typename E> struct EnumName {
  E value;
  const char *name;
};

/// The name of `value` in `table` (EnumName rows); "?" when it has none.
template <typename Table, typename E>
const char *nameOf(const Table &table, E value) {
  for (const auto &row : table)
    if (row.value == value)
      return row.name;
  return "?";
}

/// The value named `name` in `table`, or nullopt.
template <typename Table>
auto valueOf(const Table &table, std::string_view name)
    -> std::optional<decltype(std::begin(table)->value)> {
  for (const auto &row : table)
    if (name == row.name)
      return row.value;
  return std::nullopt;
}

/// The names of `table`, in its order (for "expected a, b or c" errors).
/// The names in the table's order, each between `quote`s, joined by ", "
/// and, before the last, by `last`: joinNames(t, "\"") is "\"a\", \"b\",
/// \"c\"", joinNames(t, "", " or ") is "a, b or c".
template <typename Table>
std::string joinNames(const Table &table, const char *quote = "",
                      const char *last = ", ") {
  std::string text;
  size_t n = std::size(table), i = 0;
  for (const auto &row : table) {
    if (i)
      text += i + 1 == n ? last : ", ";
    text += std::string(quote) + row.name + quote;
    ++i;
  }
  return text;
}

template <typename Table> std::vector<std::string> namesOf(const Table &table) {
  std::vector<std::string> names;
  for (const auto &row : table)
    names.push_back(row.name);
  return names;
}

} // namespace overlap

#endif // OVERLAP_SUPPORT_ENUMNAMES_H
