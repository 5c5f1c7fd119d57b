//===- AsanPrebuiltLLVM.h - ASan beside an uninstrumented LLVM --*- C++ -*-===//
//
// Included first in every C++ file of an ASan build (cmake/Sanitizers.cmake).
// llvm::BumpPtrAllocator, inline in Allocator.h, poisons a new slab when
// compiled with ASan and unpoisons each allocation it hands out. MLIR's
// uniquers share one allocator between Overlap's code (instrumented: it
// poisons) and Debian's libMLIR.so (not instrumented: it never unpoisons),
// so libMLIR.so's own allocations land in poisoned memory and ASan reports
// a use-after-poison that is none. Manual poisoning is therefore off in our
// code too; ASan's checks of every access stay on.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CMAKE_ASANPREBUILTLLVM_H
#define OVERLAP_CMAKE_ASANPREBUILTLLVM_H

#include "llvm/Support/Compiler.h"

#undef __asan_poison_memory_region
#undef __asan_unpoison_memory_region
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))

#endif // OVERLAP_CMAKE_ASANPREBUILTLLVM_H
