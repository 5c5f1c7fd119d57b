//===- RuntimeApi.cpp - Locate, load and bind the runtime -------*- C++ -*-===//
//
// loadRuntime and rt() (RuntimeApi.h).
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/RuntimeApi.h"

#include "overlap/Loader/RegularFile.h"
#include "overlap/Loader/ElfCheck.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <sys/stat.h>
#include <vector>

namespace overlap {
namespace exec {

namespace {

bool isFile(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// The directory of the object that holds this code.
std::string ownDirectory() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&loadRuntime), &info) || !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  char *real = realpath(path.c_str(), nullptr);
  if (real) {
    path = real;
    std::free(real);
  }
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// Fills `api` from `handle`; false (naming the function) when a CORE or
/// PROCESS function is missing.
bool bind(void *handle, RuntimeApi &api, std::string &error) {
  std::string missing;
#define OVERLAP_RUNTIME_FUNCTION(GROUP, NAME, RESULT, ...)                     \
  api.NAME = reinterpret_cast<RESULT (*)(__VA_ARGS__)>(dlsym(handle, #NAME));  \
  if (!api.NAME && std::string(#GROUP) != "CUDA" && missing.empty())           \
    missing = #NAME;
#include "overlap/Runtime/RuntimeABI.def"
  if (!missing.empty()) {
    error = "the runtime " +
            (api.path.empty() ? "this process links" : api.path) + " has no " +
            missing + " (a runtime older than this loader, or not Overlap's)";
    return false;
  }
  api.handle = handle;
  return true;
}

struct Loaded {
  RuntimeApi api;
  std::string error;
  bool ok = false;
};

Loaded load() {
  Loaded result;
  // A process that links a runtime already has one: use it.
  if (dlsym(RTLD_DEFAULT, "overlap_host_launch")) {
    result.ok = bind(RTLD_DEFAULT, result.api, result.error);
    return result;
  }
  std::vector<std::string> tried;
  auto open = [&](const std::string &path) -> void * {
    tried.push_back(path);
    // Checked like a program file first: a FIFO would block dlopen for
    // ever, a truncated copy would end the process with SIGBUS.
    std::string bytes, why;
    if (!exec::readRegularFile(path, bytes, "a shared library", why) ||
        !exec::checkElfImage(
            reinterpret_cast<const unsigned char *>(bytes.data()),
            bytes.size(), why)) {
      result.error = "cannot load the runtime " + path + ": " + why;
      return nullptr;
    }
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      const char *why = dlerror();
      result.error = "cannot load the runtime " + path + ": " +
                     (why ? why : "dlopen failed");
    }
    return handle;
  };
  if (const char *forced = std::getenv("OVERLAP_RUNTIME_LIBRARY");
      forced && *forced) {
    result.api.path = forced;
    void *handle = open(forced);
    result.ok = handle && bind(handle, result.api, result.error);
    return result;
  }
  std::string dir = ownDirectory();
  for (const std::string &candidate : {dir, dir + "/../lib"}) {
    std::string cuda = candidate + "/liboverlap_runtime_cuda.so";
    std::string host = candidate + "/liboverlap_runtime.so";
    bool haveCuda = isFile(cuda), haveHost = isFile(host);
    if (!haveCuda && !haveHost) {
      tried.push_back(host);
      continue;
    }
    // The CUDA runtime first (it exports the host backend too), so that a
    // program naming either binds to it; the other is loaded beside it so
    // that a program's DT_NEEDED finds this copy rather than its rpath's.
    const std::string &chosen = haveCuda ? cuda : host;
    result.api.path = chosen;
    void *handle = open(chosen);
    if (!handle)
      return result;
    if (haveCuda && haveHost)
      (void)dlopen(host.c_str(), RTLD_NOW | RTLD_GLOBAL);
    result.ok = bind(handle, result.api, result.error);
    return result;
  }
  result.error = "no Overlap runtime found (looked for";
  for (const std::string &path : tried)
    result.error += " " + path;
  result.error += "; set OVERLAP_RUNTIME_LIBRARY to one)";
  return result;
}

const Loaded &loaded() {
  static const Loaded once = load();
  return once;
}

} // namespace

const RuntimeApi *loadRuntime(std::string &error) {
  const Loaded &l = loaded();
  if (!l.ok) {
    error = l.error;
    return nullptr;
  }
  return &l.api;
}

const RuntimeApi &rt() {
  const Loaded &l = loaded();
  if (!l.ok) {
    std::fprintf(stderr, "overlap loader: %s\n", l.error.c_str());
    std::abort();
  }
  return l.api;
}

} // namespace exec
} // namespace overlap
