//===- NpzFuzzer.cpp - Fuzz the .npz reader ----------------------*- C++ -*-===//
//
// Input: the bytes of a .npz, as overlap-exec --inputs reads them (issue 25:
// input no one here wrote). Any input must give an error or arrays, never a
// crash, a hang or an allocation the bytes do not justify:
//  - parseArchive (the zip central directory, zip64, stored and deflated
//    entries, CRC-32, the .npy header) with the bound readInputs uses for a
//    small signature; an accepted archive's arrays lie inside its buffers
//    and have distinct names;
//  - matchInputs against that signature (one f32 [2, 3] and one bf16 [4]
//    argument, 2 ranks): accepted inputs point at whole rows inside the
//    arrays.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Npz.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

using namespace overlap;

static bool inside(const char *p, size_t bytes, const std::vector<char> &buf) {
  const char *begin = buf.data(), *end = buf.data() + buf.size();
  return p >= begin && p <= end && bytes <= size_t(end - p);
}

static bool insideAny(const char *p, size_t bytes, const npz::Archive &a) {
  if (inside(p, bytes, a.file))
    return true;
  for (const std::vector<char> &buf : a.inflated)
    if (inside(p, bytes, buf))
      return true;
  return false;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  run::Signature sig;
  sig.name = "f";
  sig.args.resize(2);
  sig.args[0].name = "arg0";
  sig.args[0].elem = run::Elem::F32;
  sig.args[0].shape = {2, 3};
  sig.args[1].name = "arg1";
  sig.args[1].elem = run::Elem::BF16;
  sig.args[1].shape = {4};
  const int ranks = 2;

  npz::Inputs inputs;
  inputs.archive.path = "input.npz";
  inputs.archive.file.assign(data, data + size);
  std::string error;
  // readInputs' bound for this signature.
  if (!npz::parseArchive(inputs.archive, error,
                         npz::maxInputEntryBytes(sig, ranks))) {
    if (error.empty())
      std::abort();
    return 0;
  }
  std::set<std::string> names;
  for (const npz::Array &array : inputs.archive.arrays) {
    if (!names.insert(array.name).second)
      std::abort();
    if (!insideAny(array.data, array.bytes, inputs.archive))
      std::abort();
  }
  error.clear();
  if (!npz::matchInputs(sig, ranks, inputs, error)) {
    if (error.empty())
      std::abort();
    return 0;
  }
  if (inputs.given.size() != size_t(ranks))
    std::abort();
  for (const std::vector<const void *> &row : inputs.given)
    for (size_t i = 0; i < sig.args.size(); ++i)
      if (!insideAny(static_cast<const char *>(row[i]),
                     sig.args[i].numElements() * sig.args[i].elemBytes(),
                     inputs.archive))
        std::abort();
  return 0;
}
