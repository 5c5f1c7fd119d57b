//===- Flags.cpp - The command lines of the MLIR-free tools -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Support/Flags.h"
#include "overlap/Support/EnumNames.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

using namespace overlap;
using namespace overlap::flags;

static constexpr size_t kHelpColumn = 24;
static constexpr size_t kWidth = 79;

std::string flags::formatHelp(const std::vector<Flag> &table) {
  std::string out;
  for (const Flag &f : table) {
    std::string head = "  " + f.name + (f.meta.empty() ? "" : " " + f.meta);
    // The help's words, wrapped beside the names (below a long name).
    std::string line = head;
    bool fresh = true;
    if (line.size() + 1 >= kHelpColumn) {
      out += line + "\n";
      line.clear();
    }
    size_t at = 0;
    while (at < f.help.size()) {
      size_t end = f.help.find(' ', at);
      if (end == std::string::npos)
        end = f.help.size();
      std::string word = f.help.substr(at, end - at);
      at = end + 1;
      if (word.empty())
        continue;
      if (!fresh && line.size() + 1 + word.size() > kWidth) {
        out += line + "\n";
        line.clear();
        fresh = true;
      }
      if (fresh) {
        line.resize(kHelpColumn, ' ');
        line += word;
        fresh = false;
      } else {
        line += " " + word;
      }
    }
    if (!line.empty())
      out += line + "\n";
  }
  return out;
}

static size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string flags::closest(const std::string &name,
                           const std::vector<std::string> &names) {
  std::string best;
  size_t bestDistance = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string &candidate : names) {
    size_t d = editDistance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

std::vector<std::string> flags::split(const std::string &text, char separator) {
  std::vector<std::string> items;
  size_t at = 0;
  for (;;) {
    size_t end = text.find(separator, at);
    items.push_back(text.substr(at, end == std::string::npos ? std::string::npos
                                                             : end - at));
    if (end == std::string::npos)
      return items;
    at = end + 1;
  }
}

std::string flags::listChoices(const std::vector<std::string> &choices) {
  return joinQuoted(choices, "", " or ");
}

bool flags::readPositive(const std::string &text, size_t &pos, int64_t &out) {
  size_t start = pos;
  int64_t v = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    if (v > (int64_t(1) << 62) / 10)
      return false;
    v = v * 10 + (text[pos++] - '0');
  }
  out = v;
  return pos > start && v > 0;
}

bool flags::parseInteger(const std::string &text, int64_t low, int64_t high,
                         int64_t &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end || parsed < low || parsed > high)
    return false;
  value = parsed;
  return true;
}

bool flags::parseUnsigned(const std::string &text, uint64_t &value) {
  if (text.empty() || text[0] < '0' || text[0] > '9')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long parsed = std::strtoull(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  value = parsed;
  return true;
}

bool flags::parseNumber(const std::string &text, double &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !errno && !*end;
}

Args &Args::add(Flag flag) {
  table.push_back(std::move(flag));
  return *this;
}

Args &Args::add(const std::vector<Flag> &flags) {
  table.insert(table.end(), flags.begin(), flags.end());
  return *this;
}

const Flag *Args::find(const std::string &name) const {
  for (const Flag &f : table)
    if (f.name == name)
      return &f;
  return nullptr;
}

bool Args::parse(int argc, const char *const *argv, int first,
                 bool positionals) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help_ = true;
      return true;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (!positionals) {
        fail("unexpected argument '" + arg + "'");
        return false;
      }
      positional.push_back(arg);
      continue;
    }
    std::string name = arg, value;
    size_t eq = arg.find('=');
    bool inline_ = eq != std::string::npos;
    if (inline_) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    const Flag *flag = find(name);
    if (!flag) {
      std::vector<std::string> names;
      for (const Flag &f : table)
        names.push_back(f.name);
      std::string near = closest(name, names);
      fail("unknown option '" + name + "'" +
           (near.empty() ? "" : "; did you mean '" + near + "'?"));
      return false;
    }
    if (flag->meta.empty()) {
      if (inline_) {
        fail("option '" + name + "' takes no value");
        return false;
      }
      value = "1";
    } else if (!inline_) {
      if (i + 1 >= argc) {
        fail("option '" + name + "' needs a value (" + flag->meta + ")");
        return false;
      }
      value = argv[++i];
    }
    if (!values.emplace(name, value).second) {
      fail("option '" + name + "' given twice");
      return false;
    }
    order.emplace_back(name, value);
  }
  return true;
}

std::string Args::get(const std::string &name, const std::string &def) const {
  auto it = values.find(name);
  return it == values.end() ? def : it->second;
}

std::optional<std::string> Args::value(const std::string &name) const {
  auto it = values.find(name);
  if (it == values.end())
    return std::nullopt;
  return it->second;
}

int64_t Args::getInt(const std::string &name, int64_t def) const {
  if (!has(name))
    return def;
  const std::string text = get(name, "");
  size_t pos = 0;
  int64_t v = 0;
  if (!readPositive(text, pos, v) || pos != text.size()) {
    fail(name + " needs a positive integer, got '" + text + "'");
    return def;
  }
  return v;
}

void Args::fail(const std::string &message) const {
  if (firstError.empty())
    firstError = message;
}
