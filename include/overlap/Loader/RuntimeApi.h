//===- RuntimeApi.h - The runtime the loader runs programs on ---*- C++ -*-===//
//
// The loader links no runtime. It finds one at run time, relative to the
// library or executable it is part of, and calls it through a table with
// one pointer per row of overlap/Runtime/RuntimeABI.def: so that
// libOverlapHostCAPI.so (which Python's planner loads) needs no CUDA
// library, and a program, its loader and its runtime agree on one copy of
// the runtime in the process.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_RUNTIMEAPI_H
#define OVERLAP_LOADER_RUNTIMEAPI_H

#include "overlap/Runtime/overlap_runtime.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"
#include "overlap/Runtime/overlap_runtime_process.h"

#include <string>

namespace overlap {
namespace exec {

/// The runtime's C ABI, one pointer per function. CORE and PROCESS
/// functions are always set; CUDA ones only when the runtime is
/// liboverlap_runtime_cuda.so.
struct RuntimeApi {
#define OVERLAP_RUNTIME_FUNCTION(GROUP, NAME, RESULT, ...)                     \
  RESULT (*NAME)(__VA_ARGS__) = nullptr;
#include "overlap/Runtime/RuntimeABI.def"
  /// The library the functions come from ("" when the process links one).
  std::string path;
  /// The dlopen handle of that library (RTLD_DEFAULT when the process links
  /// one): where the CUDA executor finds the CUDA runtime's functions.
  void *handle = nullptr;
  bool hasCuda() const { return overlap_cuda_context_create_single != nullptr; }
};

/// The runtime, loaded once per process: the one the process already links
/// (a tool or test linked against Overlap::Runtime), else
/// $OVERLAP_RUNTIME_LIBRARY when set, else the runtime beside the library
/// or executable that holds the loader (its directory, then ../lib):
/// liboverlap_runtime_cuda.so where it was built (it holds the host
/// backend too), else liboverlap_runtime.so. The runtimes found there are
/// loaded with RTLD_GLOBAL, so that the programs loaded later, which name
/// one of them, bind to the same copy. On failure returns null and says
/// which paths were tried in `error` (every later call fails the same way).
const RuntimeApi *loadRuntime(std::string &error);

/// loadRuntime's table. Only after loadRuntime succeeded: every entry point
/// of the loader (runSession, the C API, overlap-run) calls it first; a
/// call before that is a programming error and aborts with the reason.
const RuntimeApi &rt();

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_RUNTIMEAPI_H
