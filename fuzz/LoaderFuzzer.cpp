//===- LoaderFuzzer.cpp - Fuzz the loader's untrusted-input checks -*- C++ -*-//
//
// Input: the bytes of a program file, or the text of an embedded signature:
// what overlap-exec, overlapRun and overlap.run read before they call any
// code (issue 25). Any input must give an error or a result, never a crash:
//  - checkElfImage on the bytes: a file it accepts has its ELF header,
//    program headers and segments inside the file (checked again here);
//  - parseSignature on the bytes as text: a signature it accepts has sizes
//    that are safe to multiply (checkedBytes, checkedSize), descriptors and
//    seeded inputs that can be made, a byte budget that can be checked, and
//    formats to text that parses to the same signature.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/ElfCheck.h"
#include "overlap/Loader/Run.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <string>
#include <string_view>

using namespace overlap;

static void checkElf(const uint8_t *data, size_t size) {
  std::string error;
  if (!exec::checkElfImage(data, size, error)) {
    if (error.empty())
      std::abort();
    return;
  }
  // What the loader then relies on.
  Elf64_Ehdr header;
  if (size < sizeof header)
    std::abort();
  std::memcpy(&header, data, sizeof header);
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    uint64_t at = header.e_phoff + uint64_t(i) * sizeof segment;
    if (at + sizeof segment > size)
      std::abort();
    std::memcpy(&segment, data + at, sizeof segment);
    if (segment.p_offset > size || segment.p_filesz > size - segment.p_offset)
      std::abort();
  }
}

static bool sameBuffers(const std::vector<run::BufferSpec> &a,
                        const std::vector<run::BufferSpec> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].shape != b[i].shape ||
        a[i].elem != b[i].elem || a[i].inout != b[i].inout)
      return false;
  return true;
}

static void checkSignature(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  run::Signature sig;
  std::string error;
  if (!run::parseSignature(text, sig, error)) {
    if (error.empty())
      std::abort();
    return;
  }
  for (const run::GridSpec &grid : sig.grids)
    if (!grid.checkedSize())
      std::abort();
  // The text form round-trips, "?" sizes included.
  run::Signature again;
  if (!run::parseSignature(run::formatSignature(sig), again, error) ||
      again.name != sig.name || again.symbol != sig.symbol ||
      again.target != sig.target || again.grids.size() != sig.grids.size() ||
      !sameBuffers(again.args, sig.args) ||
      !sameBuffers(again.results, sig.results))
    std::abort();
  // Dynamic sizes as a seeded run gives the arguments' (and, here, the
  // results'): a size that overflows is refused with a message.
  int ranks = run::defaultRanks(sig);
  if (!run::resolveArgumentShapes(sig, ranks, {}, error)) {
    if (error.empty())
      std::abort();
    return;
  }
  for (run::BufferSpec &spec : sig.results)
    for (int64_t &d : spec.shape)
      if (d == run::kDynamicExtent)
        d = run::seededDynamicSize(ranks);
  uint64_t small = 0;
  for (const auto *list : {&sig.args, &sig.results})
    for (const run::BufferSpec &spec : *list) {
      std::optional<uint64_t> bytes = spec.checkedBytes();
      if (!bytes)
        return; // a result whose seeded size overflows
      if (*bytes != uint64_t(spec.numElements()) * spec.elemBytes())
        std::abort();
      (void)run::contiguousDescriptor(spec, nullptr);
      if (*bytes <= 4096)
        small += *bytes;
    }
  // The budget check is total: it accepts or names a buffer.
  if (!run::checkRunBytes(sig, run::defaultRanks(sig), error) && error.empty())
    std::abort();
  // Small enough to make: seeded inputs and poisoned result storage.
  if (small <= 1 << 16 && sig.args.size() <= 64) {
    bool allSmall = true;
    for (const run::BufferSpec &spec : sig.args)
      allSmall &= *spec.checkedBytes() <= 4096;
    run::RankData rank;
    if (allSmall && !run::prepareRank(sig, 1, 0, rank))
      std::abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  checkElf(data, size);
  checkSignature(data, size);
  return 0;
}
