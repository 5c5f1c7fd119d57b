//===- ElfImports.h - Redirect a loaded library's imports -------*- C++ -*-===//
//
// overlap-run poisons the allocations of the code it JITs by registering
// its own malloc with the JIT. A library from `overlap-compile --emit=so`
// is loaded by the system's dynamic loader instead, so overlap-exec
// rewrites that one library's import slots (GOT and PLT entries) for the
// allocators after dlopen: the program's calls go to the poisoning
// versions, while the rest of the process keeps the C library's.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_ELFIMPORTS_H
#define OVERLAP_LOADER_ELFIMPORTS_H

#include <string>
#include <vector>

namespace overlap {
namespace exec {

/// One import to redirect, and how many slots of the library were changed.
struct ImportRedirect {
  const char *name;
  void *replacement;
  int slots = 0;
};

/// Points every relocation of the library `handle` (from dlopen) that binds
/// a symbol named `redirect.name` at `redirect.replacement`, and counts the
/// slots changed. The slots are made writable (a RELRO page stays
/// writable). On failure (not an ELF object this knows how to patch)
/// returns false with the reason in `error`.
bool redirectImports(void *handle, std::vector<ImportRedirect> &redirects,
                     std::string &error);

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_ELFIMPORTS_H
