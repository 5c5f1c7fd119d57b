# overlap_exact_rpath(TARGET [DIR...]): TARGET's RUNPATH is exactly DIR...
# (in order, without duplicates; none: no RUNPATH), in the build tree and
# installed alike. The word CUDA stands for the directories of the CUDA
# libraries the CUDA backend links (cudart, cuBLASLt, NCCL), when it is
# built; LLVM for LLVM's library directory, except in the MLIR-free build
# (OVERLAP_WITHOUT_MLIR), which links LLVM Support statically.
#
# Why: a target that `cmake --install` would give another RUNPATH is linked
# with its build-tree RUNPATH padded with separators (CMake then rewrites it
# in place at install time), which leaves empty entries, and the dynamic
# loader searches an empty entry as the current directory. The runtime
# libraries and the tools a GPU session runs need the same directories in
# both trees ($ORIGIN-relative ones and CUDA's), so they are built with the
# RUNPATH they are installed with and nothing is padded
# (test/Runtime/runpath.test).
function(overlap_exact_rpath target)
  set(dirs)
  foreach(dir ${ARGN})
    if(dir STREQUAL "CUDA")
      if(OVERLAP_HAVE_CUDA)
        list(APPEND dirs ${CUDAToolkit_LIBRARY_DIR})
        get_filename_component(nccl_dir "${OVERLAP_NCCL_LIBRARY}" DIRECTORY)
        list(APPEND dirs ${nccl_dir})
      endif()
    elseif(dir STREQUAL "LLVM")
      if(NOT OVERLAP_WITHOUT_MLIR)
        list(APPEND dirs ${LLVM_LIBRARY_DIR})
      endif()
    else()
      list(APPEND dirs ${dir})
    endif()
  endforeach()
  if(dirs)
    list(REMOVE_DUPLICATES dirs)
  endif()
  set_target_properties(${target} PROPERTIES
    BUILD_WITH_INSTALL_RPATH ON
    INSTALL_RPATH "${dirs}")
endfunction()
