//===- SessionAgreement.cpp - Ranks as processes agree first -----------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/SessionAgreement.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

namespace overlap {
namespace exec {

uint64_t fnv1a(const void *data, size_t bytes, uint64_t hash) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

void SessionFacts::add(const std::string &key, const std::string &value) {
  std::string clean = value;
  for (char &c : clean)
    if (c == '\n' || c == '\t')
      c = ' ';
  text_ += key + "\t" + clean + "\n";
}

std::string SessionFacts::hashText(const void *data, size_t bytes) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "fnv1a %016" PRIx64, fnv1a(data, bytes));
  return hex;
}

void SessionFacts::addHashed(const std::string &key, const void *data,
                            size_t bytes) {
  add(key, hashText(data, bytes));
}

namespace {
/// The facts of one rank: key -> value, and the keys in order.
struct Parsed {
  std::vector<std::string> keys;
  std::map<std::string, std::string> values;
};

Parsed parse(const std::string &text) {
  Parsed out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos)
      continue;
    std::string key = line.substr(0, tab);
    if (!out.values.count(key))
      out.keys.push_back(key);
    out.values[key] = line.substr(tab + 1);
  }
  return out;
}

} // namespace

std::string rankList(const std::vector<int> &ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

std::string describeDisagreement(const std::vector<std::string> &facts) {
  std::vector<Parsed> parsed;
  std::vector<int> speaking;
  std::vector<std::string> keys;
  for (size_t r = 0; r < facts.size(); ++r) {
    parsed.push_back(parse(facts[r]));
    if (facts[r].empty())
      continue;
    speaking.push_back(static_cast<int>(r));
    for (const std::string &key : parsed.back().keys)
      if (std::find(keys.begin(), keys.end(), key) == keys.end())
        keys.push_back(key);
  }
  std::string out;
  for (const std::string &key : keys) {
    // Value -> the ranks that have it, in order of first appearance.
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    for (int r : speaking) {
      auto it = parsed[r].values.find(key);
      std::string value =
          it == parsed[r].values.end() ? "(not given)" : it->second;
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const auto &p) { return p.first == value; });
      if (g == groups.end())
        groups.push_back({value, {r}});
      else
        g->second.push_back(r);
    }
    if (groups.size() < 2)
      continue;
    out += out.empty() ? "" : "\n";
    out += key + ": ";
    for (size_t i = 0; i < groups.size(); ++i)
      out += (i ? "; " : "") + groups[i].first + " on " +
             rankList(groups[i].second);
  }
  return out;
}

} // namespace exec
} // namespace overlap
