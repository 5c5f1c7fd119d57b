//===- Program.cpp - Load programs from overlap-compile --------*- C++ -*-===//
//
// dlopen of a shared library from `overlap-compile --emit=so`, its embedded
// signature and entry point, and the runtimes it links.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Executor.h"
#include "overlap/Loader/RunSupport.h"

#include "overlap/Runtime/overlap_runtime.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <sys/stat.h>

using namespace overlap;

/// A program names liboverlap_runtime.so or liboverlap_runtime_cuda.so with
/// an absolute rpath into the build that compiled it. The dynamic loader
/// reuses a library already loaded under the same name, so loading both
/// runtimes that sit next to the one this tool links (first, so that their
/// symbols come after its own in the global scope) lets programs run from a
/// build directory carried to another machine.
void overlap::exec::preloadRuntimes() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&overlap_host_launch), &info) ||
      !info.dli_fname)
    return;
  std::string dir = info.dli_fname;
  size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  for (const char *name :
       {"liboverlap_runtime.so", "liboverlap_runtime_cuda.so"}) {
    std::string path = dir + "/" + name;
    struct stat file;
    if (stat(path.c_str(), &file) == 0)
      (void)dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
}

/// dlopens `path` and reads its signature and entry point.
bool overlap::exec::loadLibrary(const std::string &path, Library &lib,
                                std::string &message) {
  lib.path = path;
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    message = "cannot load " + path + ": " + std::strerror(errno);
    return false;
  }
  // A name without a slash would be looked up in the library path.
  std::string openPath =
      path.find('/') == std::string::npos ? "./" + path : path;
  lib.handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    message = "cannot load " + path + ": " + dlerror();
    return false;
  }
  auto *text =
      static_cast<const char *>(dlsym(lib.handle, run::kSignatureSymbol));
  if (!text) {
    message = path + " has no " + std::string(run::kSignatureSymbol) +
              ": it was not made by overlap-compile --emit=so, or the "
              "compiler could not describe its entry (see its warning)";
    return false;
  }
  std::string why;
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
  size_t values = (lib.sig.results.empty() ? 0 : 1) + 1 + lib.sig.args.size();
  if (values > kMaxEntryValues) {
    message = path + ": @" + lib.sig.name + " takes " +
              std::to_string(lib.sig.args.size()) + " arguments; the loader calls entries of up to " +
              std::to_string(kMaxEntryValues - 2);
    return false;
  }
  return true;
}

