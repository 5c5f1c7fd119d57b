//===- ElfImports.cpp - Redirect a loaded library's imports -----*- C++ -*-===//
//
// Walks the dynamic section of a library the loader has mapped, finds its
// relocations that store a symbol's address into a slot (JUMP_SLOT for PLT
// calls, GLOB_DAT and absolute 64-bit ones for address uses) and rewrites
// those of the symbols asked for. The loader has already bound them (the
// library is opened with RTLD_NOW), so the new value is final.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/ElfImports.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

namespace overlap {
namespace exec {

/// Relocation types that store the address of a symbol in a word.
static bool storesSymbolAddress(uint32_t type) {
#if defined(__x86_64__)
  return type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT ||
         type == R_X86_64_64;
#elif defined(__aarch64__)
  return type == R_AARCH64_JUMP_SLOT || type == R_AARCH64_GLOB_DAT ||
         type == R_AARCH64_ABS64;
#else
  (void)type;
  return false;
#endif
}

bool redirectImports(void *handle, std::vector<ImportRedirect> &redirects,
                     std::string &error) {
#if !defined(__x86_64__) && !defined(__aarch64__)
  error = "redirecting imports is implemented for x86-64 and AArch64 only";
  return false;
#endif
  struct link_map *map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map) {
    const char *why = dlerror();
    error = why ? why : "dlinfo failed";
    return false;
  }
  ElfW(Addr) base = map->l_addr;
  // glibc relocates the address entries of a writable dynamic section in
  // place; others hold offsets from the base.
  auto address = [&](ElfW(Addr) value) {
    return value < base ? value + base : value;
  };
  const ElfW(Sym) *symtab = nullptr;
  const char *strtab = nullptr;
  const ElfW(Rela) *rela = nullptr, *jmprel = nullptr;
  size_t relaBytes = 0, jmprelBytes = 0;
  ElfW(Sxword) pltRelType = DT_RELA;
  bool hasRel = false;
  for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
    case DT_SYMTAB:
      symtab = reinterpret_cast<const ElfW(Sym) *>(address(d->d_un.d_ptr));
      break;
    case DT_STRTAB:
      strtab = reinterpret_cast<const char *>(address(d->d_un.d_ptr));
      break;
    case DT_RELA:
      rela = reinterpret_cast<const ElfW(Rela) *>(address(d->d_un.d_ptr));
      break;
    case DT_RELASZ:
      relaBytes = d->d_un.d_val;
      break;
    case DT_JMPREL:
      jmprel = reinterpret_cast<const ElfW(Rela) *>(address(d->d_un.d_ptr));
      break;
    case DT_PLTRELSZ:
      jmprelBytes = d->d_un.d_val;
      break;
    case DT_PLTREL:
      pltRelType = d->d_un.d_val;
      break;
    case DT_REL:
      hasRel = true;
      break;
    default:
      break;
    }
  }
  if (!symtab || !strtab) {
    error = "the library has no dynamic symbol table";
    return false;
  }
  if (hasRel || pltRelType != DT_RELA) {
    error = "the library uses REL relocations, which this does not patch";
    return false;
  }
  long pageSize = sysconf(_SC_PAGESIZE);
  auto patch = [&](const ElfW(Rela) * table, size_t bytes) {
    for (size_t i = 0; table && i < bytes / sizeof(ElfW(Rela)); ++i) {
      const ElfW(Rela) &r = table[i];
      if (!storesSymbolAddress(ELF64_R_TYPE(r.r_info)))
        continue;
      const char *name = strtab + symtab[ELF64_R_SYM(r.r_info)].st_name;
      for (ImportRedirect &redirect : redirects) {
        if (std::strcmp(name, redirect.name) != 0)
          continue;
        auto *slot = reinterpret_cast<void **>(base + r.r_offset);
        auto page = reinterpret_cast<uintptr_t>(slot) &
                    ~static_cast<uintptr_t>(pageSize - 1);
        if (mprotect(reinterpret_cast<void *>(page), pageSize,
                     PROT_READ | PROT_WRITE) != 0) {
          error = std::string("mprotect of the slot of ") + name +
                  " failed: " + std::strerror(errno);
          return false;
        }
        *slot = redirect.replacement;
        ++redirect.slots;
      }
    }
    return true;
  };
  return patch(rela, relaBytes) && patch(jmprel, jmprelBytes);
}

} // namespace exec
} // namespace overlap
