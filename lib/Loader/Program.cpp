//===- Program.cpp - Load programs from overlap-compile --------*- C++ -*-===//
//
// dlopen of a shared library from `overlap-compile --emit=so`, its embedded
// signature and entry point.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/RegularFile.h"

#include "overlap/Loader/ElfCheck.h"
#include "overlap/Loader/Executor.h"
#include "overlap/Loader/Run.h"

#include "overlap/Runtime/overlap_runtime.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace overlap;

overlap::exec::Library::~Library() {
  if (handle && sig.target != "cuda")
    dlclose(handle);
}

/// Replaces every `from` in `text` by `to`.
static std::string replaceAll(std::string text, const std::string &from,
                              const std::string &to) {
  for (size_t at = text.find(from); !from.empty() && at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// Writes `bytes` to a new private file in `dir` named after `base`, dlopens
/// it and unlinks it. On failure returns null with the reason in `error`
/// (dlerror's, with the copy's name replaced by `path`).
static void *openPrivateCopy(const std::string &dir, const std::string &base,
                             const std::string &path, const std::string &bytes,
                             std::string &error) {
  std::string copy = dir + "/." + base + ".overlap-XXXXXX";
  int fd = mkstemp(copy.data());
  if (fd < 0) {
    error =
        "cannot make a private copy in " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  bool written = done == bytes.size() && fchmod(fd, 0500) == 0;
  if (!written)
    error =
        "cannot write a private copy in " + dir + ": " + std::strerror(errno);
  close(fd);
  void *handle =
      written ? dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (written && !handle) {
    const char *why = dlerror();
    error = replaceAll(why ? why : "dlopen failed", copy, path);
  }
  unlink(copy.c_str());
  return handle;
}

/// The link map of the object that holds `address`, and its symbol there.
static bool symbolAt(const void *address, struct link_map *&map,
                     const ElfW(Sym) * &sym) {
  Dl_info info;
  void *extra = nullptr;
  if (!dladdr1(address, &info, &extra, RTLD_DL_LINKMAP))
    return false;
  map = static_cast<struct link_map *>(extra);
  extra = nullptr;
  if (!dladdr1(address, &info, &extra, RTLD_DL_SYMENT))
    return false;
  sym = static_cast<const ElfW(Sym) *>(extra);
  return map && sym && info.dli_saddr == address;
}

/// dlopens a private copy of `path` and reads its signature and entry point.
bool overlap::exec::loadLibrary(const std::string &path, Library &lib,
                                std::string &message) {
  lib.path = path;
  std::string bytes, why;
  if (!exec::readRegularFile(path, bytes, "a shared library", why) ||
      !checkElfImage(reinterpret_cast<const unsigned char *>(bytes.data()),
                     bytes.size(), why)) {
    message = "cannot load " + path + ": " + why;
    return false;
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const char *tmp = std::getenv("TMPDIR");
  for (const std::string &where :
       {dir, std::string(tmp && *tmp ? tmp : "/tmp")}) {
    std::string whyHere;
    lib.handle = openPrivateCopy(where, base, path, bytes, whyHere);
    if (lib.handle)
      break;
    if (why.empty())
      why = whyHere;
  }
  if (!lib.handle) {
    message = "cannot load " + path + ": " + why;
    return false;
  }
  struct link_map *own = nullptr;
  if (dlinfo(lib.handle, RTLD_DI_LINKMAP, &own) != 0 || !own) {
    message = "cannot load " + path + ": dlinfo found no link map";
    return false;
  }
  auto *text =
      static_cast<const char *>(dlsym(lib.handle, run::kSignatureSymbol));
  struct link_map *map = nullptr;
  const ElfW(Sym) *sym = nullptr;
  if (!text || !symbolAt(text, map, sym) || map != own) {
    message = path + " has no " + std::string(run::kSignatureSymbol) +
              ": it was not made by overlap-compile --emit=so, or the "
              "compiler could not describe its entry (see its warning)";
    return false;
  }
  if (sym->st_size == 0 || !std::memchr(text, 0, sym->st_size)) {
    message = path + ": malformed " + std::string(run::kSignatureSymbol) +
              ", not a NUL-terminated string of its " +
              std::to_string(sym->st_size) + " bytes";
    return false;
  }
  if (!run::parseSignature(text, lib.sig, why)) {
    message =
        path + ": malformed " + std::string(run::kSignatureSymbol) + ", " + why;
    return false;
  }
  lib.entry = dlsym(lib.handle, lib.sig.symbol.c_str());
  if (!lib.entry) {
    message = path + " has no symbol " + lib.sig.symbol +
              ", which its signature names";
    return false;
  }
  // Called with the signature's arguments, anything but a function of this
  // library (a data object, a function it imports) would crash the host.
  if (!symbolAt(lib.entry, map, sym) || map != own) {
    Dl_info info;
    std::string from =
        dladdr(lib.entry, &info) && info.dli_fname
            ? std::string(" (it resolves to ") + info.dli_fname + ")"
            : std::string();
    message = path + ": the symbol " + lib.sig.symbol +
              " that its signature names is not defined in it" + from;
    lib.entry = nullptr;
    return false;
  }
  if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC) {
    message =
        path + ": the symbol " + lib.sig.symbol +
        " that its signature names is not a function (ELF symbol "
        "type " +
        std::to_string(ELF64_ST_TYPE(sym->st_info)) +
        (ELF64_ST_TYPE(sym->st_info) == STT_OBJECT ? ", a data object" : "") +
        ")";
    lib.entry = nullptr;
    return false;
  }
  size_t values = (lib.sig.results.empty() ? 0 : 1) + 1 + lib.sig.args.size();
  if (values > kMaxEntryValues) {
    message = path + ": @" + lib.sig.name + " takes " +
              std::to_string(lib.sig.args.size()) +
              " arguments; the loader calls entries of up to " +
              std::to_string(kMaxEntryValues - 2);
    return false;
  }
  return true;
}
