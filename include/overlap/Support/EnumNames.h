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

/// The row of `value` in `table` (rows with `value` and `name`, and any
/// other fields), or null.
template <typename Table, typename E>
auto rowOf(const Table &table, E value) -> decltype(&*std::begin(table)) {
  for (const auto &row : table)
    if (row.value == value)
      return &row;
  return nullptr;
}

/// The name of `value` in `table` (EnumName rows); "?" when it has none.
template <typename Table, typename E>
const char *nameOf(const Table &table, E value) {
  auto row = rowOf(table, value);
  return row ? row->name : "?";
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

/// The names of `table`, in its order.
template <typename Table> std::vector<std::string> namesOf(const Table &table) {
  std::vector<std::string> names;
  for (const auto &row : table)
    names.push_back(row.name);
  return names;
}

/// `items` each between `quote`s, joined by ", " and, before the last, by
/// `last`: joinQuoted(v, "\"") is "\"a\", \"b\", \"c\"", joinQuoted(v, "",
/// " or ") is "a, b or c" (flags::listChoices).
inline std::string joinQuoted(const std::vector<std::string> &items,
                              const char *quote = "", const char *last = ", ") {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i)
    text += (i == 0                  ? ""
             : i + 1 == items.size() ? last
                                     : ", ") +
            std::string(quote) + items[i] + quote;
  return text;
}

/// joinQuoted of the table's names (for "expected one of ..." errors).
template <typename Table>
std::string joinNames(const Table &table, const char *quote = "",
                      const char *last = ", ") {
  return joinQuoted(namesOf(table), quote, last);
}

} // namespace overlap

#endif // OVERLAP_SUPPORT_ENUMNAMES_H
