# cmake --install <build> --prefix P: headers, libraries, tools, the
# mlir-opt plugin, profiles (P/share/overlap/profiles) and the CMake package
# (P/lib/cmake/overlap/OverlapConfig.cmake) with the imported targets
# Overlap::Compiler, Runner, CAPI, HostCAPI, Planner, Artifact, Loader,
# Support, Runtime [, RuntimeCuda].
# Nothing installed names the source or the build tree: binaries find the
# runtime and the profiles relative to themselves ($ORIGIN/../lib,
# <binary dir>/../share/overlap/profiles) and LLVM in its installation.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(OVERLAP_INSTALL_PROFILESDIR ${CMAKE_INSTALL_DATADIR}/overlap/profiles)
set(OVERLAP_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/overlap)

set(overlap_exported OverlapSupport OverlapPlanner OverlapArtifact
  OverlapLoader overlap_runtime OverlapHostCAPI)
set_target_properties(OverlapSupport PROPERTIES EXPORT_NAME Support)
set_target_properties(OverlapArtifact PROPERTIES EXPORT_NAME Artifact)
set_target_properties(OverlapHostCAPI PROPERTIES EXPORT_NAME HostCAPI)
set_target_properties(OverlapPlanner PROPERTIES EXPORT_NAME Planner)
set_target_properties(OverlapLoader PROPERTIES EXPORT_NAME Loader)
set_target_properties(overlap_runtime PROPERTIES EXPORT_NAME Runtime)
if(OVERLAP_HAVE_CUDA)
  list(APPEND overlap_exported overlap_runtime_cuda)
  set_target_properties(overlap_runtime_cuda PROPERTIES EXPORT_NAME RuntimeCuda)
endif()
set(OVERLAP_WITH_MLIR ON)
if(OVERLAP_WITHOUT_MLIR)
  set(OVERLAP_WITH_MLIR OFF)
else()
  list(APPEND overlap_exported OverlapCompiler OverlapCAPI OverlapRunner)
  set_target_properties(OverlapRunner PROPERTIES EXPORT_NAME Runner)
  set_target_properties(OverlapCompiler PROPERTIES EXPORT_NAME Compiler)
  set_target_properties(OverlapCAPI PROPERTIES EXPORT_NAME CAPI)
endif()

install(TARGETS ${overlap_exported}
  EXPORT OverlapTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT OverlapTargets NAMESPACE Overlap::
  DESTINATION ${OVERLAP_INSTALL_CMAKEDIR})
# The MPI transport of host ranks as processes: loaded by the runtime from
# its own directory, linked by nothing.
if(TARGET overlap_runtime_mpi)
  install(TARGETS overlap_runtime_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# Headers: the sources' and the generated TableGen ones.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td" PATTERN "*.def"
  PATTERN "CMakeLists.txt" EXCLUDE)
if(NOT OVERLAP_WITHOUT_MLIR)
  install(DIRECTORY ${PROJECT_BINARY_DIR}/include/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.inc" PATTERN "CMakeFiles" EXCLUDE)
  install(TARGETS OverlapPlugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# Tools (those this configuration builds).
foreach(tool overlap-opt overlap-compile overlap-run overlap-exec overlap-plan
             overlap-bench overlap-calibrate)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

install(FILES ${OVERLAP_PROFILE_FILES} DESTINATION ${OVERLAP_INSTALL_PROFILESDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/OverlapConfig.cmake.in
  ${PROJECT_BINARY_DIR}/OverlapConfig.cmake
  INSTALL_DESTINATION ${OVERLAP_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR
            OVERLAP_INSTALL_PROFILESDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/OverlapConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/OverlapConfig.cmake
              ${PROJECT_BINARY_DIR}/OverlapConfigVersion.cmake
  DESTINATION ${OVERLAP_INSTALL_CMAKEDIR})
