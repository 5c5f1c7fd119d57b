//===- EnumNames.h - Enum values and their names in text --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// One table of (value, name) per enum gives both directions, the name a
// value prints as (JSON, reports, flags) and the value a name parses to, so
// that the two cannot drift apart. Plain C++ (no LLVM), so the Planner and
// the libraries above it (Calibration) share it.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_ENUMNAMES_H
#define OVERLAP_PLANNER_ENUMNAMES_H

#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlap {
namespace planner {

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
template <typename Table> std::vector<std::string> namesOf(const Table &table) {
  std::vector<std::string> names;
  for (const auto &row : table)
    names.push_back(row.name);
  return names;
}

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_ENUMNAMES_H
