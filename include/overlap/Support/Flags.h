//===- Flags.h - The command lines of the MLIR-free tools -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The one flag parser of the tools that link neither MLIR nor LLVM's
// command-line library (overlap-exec, overlap-plan, overlap-bench,
// overlap-calibrate; the MLIR tools use llvm::cl): a table of flags (name,
// value name, help) from which the parser, the help text and the errors
// are made. "--name value", "--name=value", switches, positionals and
// -h/--help. Reading a malformed value records an error (the first one is
// kept) and returns the default, so that a tool reads all its flags, then
// checks error() once. Exit status of a usage error: 2 (docs/tools.md).
// No dependency beyond the C++ library.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_SUPPORT_FLAGS_H
#define OVERLAP_SUPPORT_FLAGS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace overlap {
namespace flags {

/// One row of a tool's table.
struct Flag {
  /// As typed: "--ranks", "-v".
  std::string name;
  /// The value's name in the help ("R", "host|cuda"); empty: a switch.
  std::string meta;
  /// One paragraph; help() wraps it.
  std::string help;
};

/// "  --name META   help", one flag after the other, the help wrapped at
/// 79 columns beside the names.
std::string formatHelp(const std::vector<Flag> &flags);

/// The name in `names` closest to `name` by edit distance, when it is
/// close enough to be a misspelling of it; "" otherwise.
std::string closest(const std::string &name,
                    const std::vector<std::string> &names);

/// `text` split at each `separator`; an empty item (",," or a trailing
/// separator) is kept, so that a parser of the items can reject it.
std::vector<std::string> split(const std::string &text, char separator);

/// "a, b or c".
std::string listChoices(const std::vector<std::string> &choices);

/// Reads a positive decimal integer at `text[pos]` and advances `pos`.
/// Rejects signs, empty digits and values that do not fit 2^62 (so that
/// products of a few of them are still checked for overflow by the callers).
bool readPositive(const std::string &text, size_t &pos, int64_t &out);

/// A decimal integer from `low` to `high`, the whole of `text`.
bool parseInteger(const std::string &text, int64_t low, int64_t high,
                  int64_t &value);

/// An unsigned 64-bit decimal integer, the whole of `text`.
bool parseUnsigned(const std::string &text, uint64_t &value);

/// A number (strtod), the whole of `text`.
bool parseNumber(const std::string &text, double &value);

class Args {
public:
  Args() = default;
  explicit Args(std::vector<Flag> table) : table(std::move(table)) {}
  Args &add(Flag flag);
  Args &add(const std::vector<Flag> &flags);

  /// Reads argv[first, argc). Returns false, with error() saying why, on an
  /// unknown option (naming the closest one), an option without its value
  /// or given twice, a switch given a value, or an argument that is not an
  /// option when `positionals` is false. Stops at -h or --help (helpAsked()).
  bool parse(int argc, const char *const *argv, int first = 1,
             bool positionals = false);
  bool helpAsked() const { return help_; }
  const std::vector<std::string> &positionals() const { return positional; }

  bool has(const std::string &name) const { return values.count(name) != 0; }
  std::string get(const std::string &name, const std::string &def) const;
  /// The value given, or nullopt.
  std::optional<std::string> value(const std::string &name) const;
  /// A positive integer, or `def` when absent.
  int64_t getInt(const std::string &name, int64_t def) const;
  /// The options given, in the order given (a repeated one: each time).
  const std::vector<std::pair<std::string, std::string>> &given() const {
    return order;
  }

  /// formatHelp of the table.
  std::string help() const { return formatHelp(table); }
  const std::vector<Flag> &flags() const { return table; }

  /// The first error of parse or a getter ("" if none): one line naming
  /// the option.
  const std::string &error() const { return firstError; }
  /// Records `message` as the error unless one is already recorded.
  void fail(const std::string &message) const;

private:
  const Flag *find(const std::string &name) const;

  std::vector<Flag> table;
  std::map<std::string, std::string> values;
  std::vector<std::pair<std::string, std::string>> order;
  std::vector<std::string> positional;
  bool help_ = false;
  mutable std::string firstError;
};

} // namespace flags
} // namespace overlap

#endif // OVERLAP_SUPPORT_FLAGS_H
