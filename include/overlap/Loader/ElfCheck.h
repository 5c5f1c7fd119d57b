//===- ElfCheck.h - Check a program file before dlopen ----------*- C++ -*-===//
//
// The system's dynamic loader trusts the file it maps: a shared library cut
// short by an interrupted copy maps pages past the end of the file, and the
// first touch of one raises SIGBUS inside dlopen. So the loader reads the
// file itself first and checks that its ELF header, its program headers and
// every segment they describe (and the section header table, which a
// truncation cuts first) lie inside the file. Plain bytes in, no mapping:
// the checks are fuzzed (fuzz/LoaderFuzzer.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_ELFCHECK_H
#define OVERLAP_LOADER_ELFCHECK_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace overlap {
namespace exec {

/// Whether `data` (`size` bytes, a whole file) is a 64-bit ELF shared object
/// for this machine whose headers and segments lie inside the file. On
/// failure returns false with one line saying what is wrong (and where) in
/// `error`.
bool checkElfImage(const unsigned char *data, size_t size, std::string &error);

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_ELFCHECK_H
