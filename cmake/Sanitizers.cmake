# Sanitizer and fuzzer configurations (docs/testing.md).
#
# OVERLAP_SANITIZERS instruments Overlap's own code (not the prebuilt
# libLLVM.so / libMLIR.so it links, which are Debian's): "address;undefined"
# for the ASan+UBSan build of the MLIR-free part (build-asan), "thread" for
# the TSan build of the host runtime (build-tsan). OVERLAP_BUILD_FUZZERS
# builds the libFuzzer targets of fuzz/ and implies address;undefined plus
# coverage instrumentation; it needs clang (libFuzzer is part of
# compiler-rt: Debian's libclang-rt-22-dev).
#
# Included after HandleLLVMOptions, whose -Wl,-z,defs on shared libraries
# must go: an instrumented shared library leaves the sanitizer runtime's
# symbols to the executable that loads it.

set(OVERLAP_SANITIZERS "" CACHE STRING
  "Sanitizers for Overlap's own code, e.g. address;undefined or thread")
option(OVERLAP_BUILD_FUZZERS
  "Build the libFuzzer targets in fuzz/ (clang; implies address;undefined)" OFF)

if(OVERLAP_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "OVERLAP_BUILD_FUZZERS needs clang (libFuzzer), e.g. "
      "-DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22; "
      "this is ${CMAKE_CXX_COMPILER_ID}")
  endif()
  list(APPEND OVERLAP_SANITIZERS address undefined)
  list(REMOVE_DUPLICATES OVERLAP_SANITIZERS)
endif()

if(OVERLAP_SANITIZERS)
  if("thread" IN_LIST OVERLAP_SANITIZERS AND "address" IN_LIST OVERLAP_SANITIZERS)
    message(FATAL_ERROR "OVERLAP_SANITIZERS: thread and address do not mix")
  endif()
  list(JOIN OVERLAP_SANITIZERS "," _overlap_sanitize)
  message(STATUS "Overlap sanitizers: ${_overlap_sanitize}")
  set(_overlap_flags -fsanitize=${_overlap_sanitize} -fno-omit-frame-pointer
    -g1
    # A report is a failure, not a line in a log that still exits 0.
    -fno-sanitize-recover=all
    # Assertions on in our code and in the LLVM/MLIR headers it inlines
    # (cast<>, ArrayRef bounds): a fuzzer or a test that breaks one stops.
    -UNDEBUG)
  if("undefined" IN_LIST OVERLAP_SANITIZERS AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # LLVM and MLIR are built without RTTI, so the vptr check cannot run;
    # -fsanitize=function wants every indirect callee instrumented, and
    # libMLIR.so's are not.
    list(APPEND _overlap_flags -fno-sanitize=vptr,function)
  endif()
  if(OVERLAP_BUILD_FUZZERS)
    list(APPEND _overlap_flags -fsanitize=fuzzer-no-link)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_overlap_flags}>")
  if("address" IN_LIST OVERLAP_SANITIZERS)
    # LLVM's allocator must not poison memory that the prebuilt,
    # uninstrumented LLVM and MLIR libraries allocate from too.
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${PROJECT_SOURCE_DIR}/cmake/AsanPrebuiltLLVM.h>")
  endif()
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=${_overlap_sanitize}>")
  string(REPLACE "-Wl,-z,defs" "" CMAKE_SHARED_LINKER_FLAGS
    "${CMAKE_SHARED_LINKER_FLAGS}")
endif()
