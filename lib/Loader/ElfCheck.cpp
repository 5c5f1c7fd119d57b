//===- ElfCheck.cpp - Check a program file before dlopen --------*- C++ -*-===//
//
// Bounds checks of an ELF64 shared object's headers and segments against
// the size of its file, on a copy of its bytes (memcpy of each header: the
// bytes need no alignment).
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/ElfCheck.h"

#include <cstring>
#include <elf.h>

namespace overlap {
namespace exec {

#if defined(__x86_64__)
static constexpr uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
static constexpr uint16_t kMachine = EM_AARCH64;
#else
static constexpr uint16_t kMachine = EM_NONE;
#endif

/// Whether [offset, offset + count * entry) lies in a file of `size` bytes,
/// without overflow.
static bool inFile(uint64_t offset, uint64_t count, uint64_t entry,
                   uint64_t size) {
  uint64_t bytes, end;
  return !__builtin_mul_overflow(count, entry, &bytes) &&
         !__builtin_add_overflow(offset, bytes, &end) && end <= size;
}

static const char *segmentName(uint32_t type) {
  switch (type) {
  case PT_LOAD:
    return "PT_LOAD";
  case PT_DYNAMIC:
    return "PT_DYNAMIC";
  case PT_INTERP:
    return "PT_INTERP";
  case PT_NOTE:
    return "PT_NOTE";
  case PT_TLS:
    return "PT_TLS";
  case PT_GNU_EH_FRAME:
    return "PT_GNU_EH_FRAME";
  case PT_GNU_PROPERTY:
    return "PT_GNU_PROPERTY";
  default:
    return "segment";
  }
}

bool checkElfImage(const unsigned char *data, size_t size, std::string &error) {
  const std::string fileSize = "a " + std::to_string(size) + "-byte file";
  if (size < EI_NIDENT || std::memcmp(data, ELFMAG, SELFMAG) != 0) {
    error = "not an ELF file (" + fileSize + ")";
    return false;
  }
  if (data[EI_CLASS] != ELFCLASS64) {
    error = "not a 64-bit ELF file";
    return false;
  }
  bool little = data[EI_DATA] == ELFDATA2LSB;
  if (little != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)) {
    error = "an ELF file of the other byte order";
    return false;
  }
  Elf64_Ehdr header;
  if (size < sizeof header) {
    error = "truncated: the ELF header needs " + std::to_string(sizeof header) +
            " bytes, " + fileSize;
    return false;
  }
  std::memcpy(&header, data, sizeof header);
  if (header.e_type != ET_DYN) {
    error = "an ELF file that is not a shared object (e_type " +
            std::to_string(header.e_type) + ")";
    return false;
  }
  if (header.e_machine != kMachine) {
    error = "a shared object for another machine (e_machine " +
            std::to_string(header.e_machine) + ")";
    return false;
  }
  if (header.e_phnum == 0 || header.e_phentsize != sizeof(Elf64_Phdr)) {
    error = "a shared object without valid program headers (" +
            std::to_string(header.e_phnum) + " of " +
            std::to_string(header.e_phentsize) + " bytes)";
    return false;
  }
  if (!inFile(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), size)) {
    error = "truncated: " + std::to_string(header.e_phnum) +
            " program headers at offset " + std::to_string(header.e_phoff) +
            " reach past the end of " + fileSize;
    return false;
  }
  bool hasLoad = false;
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, data + header.e_phoff + i * sizeof segment,
                sizeof segment);
    hasLoad |= segment.p_type == PT_LOAD;
    if (segment.p_type == PT_LOAD && segment.p_filesz > segment.p_memsz) {
      error = "program header " + std::to_string(i) +
              " (PT_LOAD) has more bytes in the file than in memory";
      return false;
    }
    if (!inFile(segment.p_offset, 1, segment.p_filesz, size)) {
      error = "truncated: program header " + std::to_string(i) + " (" +
              segmentName(segment.p_type) + ") spans bytes " +
              std::to_string(segment.p_offset) + " to " +
              std::to_string(segment.p_offset + segment.p_filesz) + " of " +
              fileSize;
      return false;
    }
  }
  if (!hasLoad) {
    error = "a shared object with no PT_LOAD segment";
    return false;
  }
  if (header.e_shoff != 0 &&
      !inFile(header.e_shoff, header.e_shnum, header.e_shentsize, size)) {
    error = "truncated: " + std::to_string(header.e_shnum) +
            " section headers at offset " + std::to_string(header.e_shoff) +
            " reach past the end of " + fileSize;
    return false;
  }
  return true;
}

} // namespace exec
} // namespace overlap
