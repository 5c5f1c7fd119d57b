//===- ProfileLookup.cpp - Naming the shipped profiles ----------*- C++ -*-===//
//
// One wording, in every tool, for a --profile that names nothing: the
// shipped names, and the nearest of them when the name looks misspelt.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Profile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace llvm;

std::vector<std::string>
overlap::planner::shippedProfileNames(StringRef profilesDir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (sys::fs::directory_iterator it(profilesDir, ec), end; it != end && !ec;
       it.increment(ec))
    if (sys::path::extension(it->path()) == ".json")
      names.push_back(sys::path::stem(it->path()).str());
  llvm::sort(names);
  return names;
}

std::string overlap::planner::unknownProfileMessage(StringRef nameOrPath,
                                                    StringRef profilesDir) {
  std::vector<std::string> names = shippedProfileNames(profilesDir);
  std::string message = ("no file '" + nameOrPath +
                         "' and no shipped profile of that name")
                            .str();
  // The nearest shipped name: a few edits away, or one that has every
  // word of the name ("h100-datasheet": h100-nvlink-datasheet).
  StringRef stem = sys::path::stem(nameOrPath);
  SmallVector<StringRef> words;
  stem.split(words, '-', -1, false);
  const std::string *nearest = nullptr;
  unsigned best = 0;
  for (const std::string &name : names) {
    unsigned distance = stem.edit_distance(name, true, 4);
    bool hasWords = !words.empty() && llvm::all_of(words, [&](StringRef w) {
      return StringRef(name).contains(w);
    });
    if (hasWords && distance > 3)
      distance = 3;
    if (distance <= 3 && (!nearest || distance < best)) {
      nearest = &name;
      best = distance;
    }
  }
  if (nearest)
    message += "; did you mean '" + *nearest + "'?";
  if (names.empty())
    return message + " (no profiles in '" + profilesDir.str() + "')";
  return message + " (shipped: " + llvm::join(names, ", ") + ", in " +
         profilesDir.str() + ")";
}
