//===- RunOptions.cpp - The rows of RunOptions.def, as data -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/RunOptions.h"
#include "overlap/Loader/Session.h"
#include "overlap/Support/Flags.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

using namespace overlap;
using namespace overlap::exec;

const std::vector<RunOption> &exec::runOptions() {
  static const std::vector<RunOption> rows = {
#define OVERLAP_RUN_OPTION(GROUP, FIELD, FLAG, KIND, DEFAULT, LOW, HIGH, UNIT, \
                           ZERO, META, HELP)                                   \
  RunOption{RunGroup::GROUP##_GROUP,                                           \
            #FIELD,                                                            \
            FLAG,                                                              \
            RunKind::KIND##_KIND,                                              \
            int64_t(LOW),                                                      \
            int64_t(HIGH),                                                     \
            UNIT,                                                              \
            ZERO,                                                              \
            META,                                                              \
            HELP},
#define RUN_GROUP Run
#define LIBRARY_GROUP Library
#define PATH_KIND Path
#define CHOICE_KIND Choice
#define RANKS_AS_KIND RanksAs
#define INT_KIND Int
#define INT64_KIND Int64
#define UINT64_KIND UInt64
#define SEED_KIND Seed
#define DOUBLE_KIND Double
#define BOOL_KIND Bool
#include "overlap/Loader/RunOptions.def"
#undef RUN_GROUP
#undef LIBRARY_GROUP
#undef PATH_KIND
#undef CHOICE_KIND
#undef RANKS_AS_KIND
#undef INT_KIND
#undef INT64_KIND
#undef UINT64_KIND
#undef SEED_KIND
#undef DOUBLE_KIND
#undef BOOL_KIND
  };
  return rows;
}

const RunOption *exec::findRunOption(const std::string &flag) {
  for (const RunOption &row : runOptions())
    if (flag == row.flag)
      return &row;
  return nullptr;
}

std::string exec::flagSpelling(const RunOption &row) {
  return (std::string(row.flag).size() == 1 ? "-" : "--") +
         std::string(row.flag);
}

/// The choices of a CHOICE or RANKS_AS row: META split at '|'.
static std::vector<std::string> choices(const RunOption &row) {
  return flags::split(row.meta, '|');
}

std::string exec::expectedValue(const RunOption &row) {
  switch (row.kind) {
  case RunKind::Path:
    return "a file name";
  case RunKind::Choice:
  case RunKind::RanksAs:
    return flags::listChoices(choices(row));
  case RunKind::Int:
  case RunKind::Int64: {
    std::string low = std::to_string(row.low);
    if (row.low == 0 && *row.zero)
      low += std::string(" (") + row.zero + ")";
    return low + " to " + std::to_string(row.high) +
           (*row.unit ? std::string(" ") + row.unit : "");
  }
  case RunKind::UInt64:
  case RunKind::Seed:
    return "an unsigned 64-bit integer";
  case RunKind::Double:
    return "a finite number >= " + std::to_string(row.low);
  case RunKind::Bool:
    return "no value";
  }
  return "";
}

/// The text of a value, as a flag would give it.
static std::string textOf(const std::string &v) { return v; }
static std::string textOf(int64_t v) { return std::to_string(v); }
static std::string textOf(uint64_t v) { return std::to_string(v); }
static std::string textOf(int v) { return std::to_string(v); }
static std::string textOf(bool v) { return v ? "on" : "off"; }
static std::string textOf(const std::optional<uint64_t> &v) {
  return v ? std::to_string(*v) : "off";
}
static std::string textOf(double v) { return run::formatDouble("%g", v); }
static std::string textOf(RanksAs v) { return ranksAsName(v); }

std::string exec::defaultText(const RunOption &row) {
  return defaultText(row, SessionOptions());
}

std::string exec::defaultText(const RunOption &row,
                              const SessionOptions &defaults) {
  switch (row.kind) {
  case RunKind::Path:
  case RunKind::Bool:
    return "";
  case RunKind::Choice:
  case RunKind::Seed:
    return *row.zero ? std::string("default: ") + row.zero : "";
  default:
    break;
  }
  std::string value;
#define OVERLAP_RUN_OPTION(GROUP, FIELD, FLAG, KIND, DEFAULT, LOW, HIGH, UNIT, \
                           ZERO, META, HELP)                                   \
  if (row.flag == std::string(FLAG))                                           \
    value = textOf(defaults.FIELD);
#include "overlap/Loader/RunOptions.def"
  return "default " + value + (*row.zero ? std::string(": ") + row.zero : "");
}

std::string exec::helpText(const RunOption &row) {
  return helpText(row, SessionOptions());
}

std::string exec::helpText(const RunOption &row,
                           const SessionOptions &defaults) {
  std::string text = row.help;
  std::string d = defaultText(row, defaults);
  return d.empty() ? text : text + " (" + d + ")";
}

/// Parses `text` into a field of the row's kind; false when it is not one.
static bool parse(const RunOption &row, const std::string &text,
                  std::string &out) {
  if (text.empty())
    return false;
  if (row.kind == RunKind::Choice) {
    std::vector<std::string> all = choices(row);
    if (std::find(all.begin(), all.end(), text) == all.end())
      return false;
  }
  out = text;
  return true;
}
static bool parse(const RunOption &row, const std::string &text, int &out) {
  int64_t v;
  if (!flags::parseInteger(text, INT64_MIN, INT64_MAX, v) || v < INT32_MIN ||
      v > INT32_MAX)
    return false;
  out = int(v);
  return true;
}
static bool parse(const RunOption &, const std::string &text, int64_t &out) {
  return flags::parseInteger(text, INT64_MIN, INT64_MAX, out);
}
static bool parse(const RunOption &, const std::string &text, uint64_t &out) {
  return flags::parseUnsigned(text, out);
}
static bool parse(const RunOption &, const std::string &text,
                  std::optional<uint64_t> &out) {
  uint64_t v;
  if (!flags::parseUnsigned(text, v))
    return false;
  out = v;
  return true;
}
static bool parse(const RunOption &, const std::string &text, double &out) {
  return flags::parseNumber(text, out);
}
static bool parse(const RunOption &, const std::string &text, bool &out) {
  out = text == "1";
  return text == "1";
}
static bool parse(const RunOption &, const std::string &text, RanksAs &out) {
  return parseRanksAs(text, out);
}

/// Whether a value of the row's kind is one of its values.
static bool valid(const RunOption &row, const std::string &v) {
  if (row.kind != RunKind::Choice || v.empty())
    return true;
  std::vector<std::string> all = choices(row);
  return std::find(all.begin(), all.end(), v) != all.end();
}
static bool valid(const RunOption &row, int64_t v) {
  return v >= row.low && v <= row.high;
}
static bool valid(const RunOption &row, int v) {
  return valid(row, int64_t(v));
}
static bool valid(const RunOption &row, double v) {
  return std::isfinite(v) && v >= double(row.low);
}
template <typename T> static bool valid(const RunOption &, const T &) {
  return true;
}

std::string exec::setRunOption(SessionOptions &o, const RunOption &row,
                               const std::string &text,
                               const std::string &name) {
  bool ok = false, checked = false;
#define OVERLAP_RUN_OPTION(GROUP, FIELD, FLAG, KIND, DEFAULT, LOW, HIGH, UNIT, \
                           ZERO, META, HELP)                                   \
  if (row.flag == std::string(FLAG)) {                                         \
    ok = parse(row, text, o.FIELD) && valid(row, o.FIELD);                     \
    checked = true;                                                            \
  }
#include "overlap/Loader/RunOptions.def"
  if (!checked)
    return "no run option '" + std::string(row.flag) + "'";
  if (ok)
    return "";
  return (name.empty() ? flagSpelling(row) : name) + " '" + text +
         "': expected " + expectedValue(row);
}

std::string exec::checkRunOptions(
    const SessionOptions &o,
    const std::function<std::string(const RunOption &)> &name) {
  for (const RunOption &row : runOptions()) {
    std::string error;
#define OVERLAP_RUN_OPTION(GROUP, FIELD, FLAG, KIND, DEFAULT, LOW, HIGH, UNIT, \
                           ZERO, META, HELP)                                   \
  if (row.flag == std::string(FLAG) && !valid(row, o.FIELD))                   \
    error = name(row) + " " + textOf(o.FIELD) + ": expected " +                \
            expectedValue(row);
#include "overlap/Loader/RunOptions.def"
    if (!error.empty())
      return error;
  }
  return "";
}

std::string exec::checkRunOptions(const SessionOptions &o) {
  return checkRunOptions(o, flagSpelling);
}
