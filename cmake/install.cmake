# install.cmake - what `cmake --install build --prefix P` puts under P (GNUInstallDirs layout):
#
#   bin/outcore                                  the CLI; RUNPATH $ORIGIN:$ORIGIN/../lib  runtime
#   lib/liboutcore.so.0.1.0, liboutcore.so.0     SONAME liboutcore.so.<major>          runtime
#   share/man/man1/outcore.1                     generated from the CLI's --help      runtime
#   share/bash-completion/completions/outcore                                         runtime
#   lib/liboutcore.so, lib/liboutcore.a          the link-time names                  development
#   include/outcore.h                                                                 development
#   lib/cmake/outcore/                           find_package(outcore CONFIG)         development
#   lib/pkgconfig/outcore.pc                     pkg-config outcore                   development
#   lib/outcore/libcudart_static.a               CUDA builds: what liboutcore.a needs  development
#   share/doc/outcore/LICENSE                    BSD-3-Clause                         runtime
#
# Relocatable: no installed file holds an absolute path of the build tree or of P. The CLI
# finds the library relative to itself, the CMake package computes its prefix from its own
# location, and outcore.pc from ${pcfiledir}; outcore.pc names no directory of the build
# machine either (CUDA's static runtime is installed beside liboutcore.a, MPI is named by its
# libraries alone). (Absolute CMAKE_INSTALL_*DIR values, which a
# distribution may pass, are kept absolute and give up relocation.)
include(CMakePackageConfigHelpers)

set(OC_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/outcore")
set(OC_PKGCONFIG_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# How FROM (an install directory) reaches TO: relative when both are relative to the prefix.
function(oc_install_relpath out from to)
  if(IS_ABSOLUTE "${from}" OR IS_ABSOLUTE "${to}")
    set(abs_to "${to}")
    if(NOT IS_ABSOLUTE "${to}")
      set(abs_to "${CMAKE_INSTALL_PREFIX}/${to}")
    endif()
    set(${out} "${abs_to}" PARENT_SCOPE)
  else()
    file(RELATIVE_PATH rel "/${from}" "/${to}")
    string(REGEX REPLACE "/$" "" rel "${rel}")
    if(rel STREQUAL "")
      set(rel ".")
    endif()
    set(${out} "${rel}" PARENT_SCOPE)
  endif()
endfunction()

# ---------------------------------------------------------------- the CLI and the libraries
oc_install_relpath(oc_bin_to_lib "${CMAKE_INSTALL_BINDIR}" "${CMAKE_INSTALL_LIBDIR}")
# The CLI's own folder (the build tree's layout: the CLI is built with this RUNPATH,
# CMakeLists.txt), then the installed library's.
if(IS_ABSOLUTE "${oc_bin_to_lib}")
  set_target_properties(outcore_cli PROPERTIES INSTALL_RPATH "$ORIGIN;${oc_bin_to_lib}")
else()
  set_target_properties(outcore_cli PROPERTIES INSTALL_RPATH "$ORIGIN;$ORIGIN/${oc_bin_to_lib}")
endif()

install(TARGETS outcore_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS outcore EXPORT outcoreTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development)
# The static library has an export set of its own: its link dependencies (zlib, CUDA) are
# looked for only by a consumer that uses it.
install(TARGETS outcore_archive EXPORT outcoreStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(FILES include/outcore.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

# ---------------------------------------------------------------- CMake package
install(EXPORT outcoreTargets NAMESPACE outcore:: DESTINATION ${OC_CMAKE_DIR} COMPONENT development)
install(EXPORT outcoreStaticTargets NAMESPACE outcore:: DESTINATION ${OC_CMAKE_DIR} COMPONENT development)
set(OC_CONFIG_HAVE_ZLIB ${ZLIB_FOUND})
set(OC_CONFIG_HAVE_CUDA ${OUTCORE_HAVE_CUDA})
set(OC_CONFIG_HAVE_MPI ${OUTCORE_HAVE_MPI})
# Where a CUDA build installs CUDA's static runtime (below); the CMake package links it from there.
set(OC_CUDART_DIR "${CMAKE_INSTALL_LIBDIR}/outcore")
configure_package_config_file(cmake/outcoreConfig.cmake.in ${CMAKE_BINARY_DIR}/outcoreConfig.cmake
                              INSTALL_DESTINATION ${OC_CMAKE_DIR} PATH_VARS OC_CUDART_DIR NO_SET_AND_CHECK_MACRO)
# 0.x releases follow the soname, liboutcore.so.<major>: the same major version is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/outcoreConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/outcoreConfig.cmake ${CMAKE_BINARY_DIR}/outcoreConfigVersion.cmake
        DESTINATION ${OC_CMAKE_DIR} COMPONENT development)

# ---------------------------------------------------------------- pkg-config
oc_install_relpath(OC_PC_PREFIX "${OC_PKGCONFIG_DIR}" "")
if(NOT IS_ABSOLUTE "${OC_PC_PREFIX}")
  set(OC_PC_PREFIX "\${pcfiledir}/${OC_PC_PREFIX}")
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(OC_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(OC_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# What a static link needs besides liboutcore.a, in the order the linker wants it.
set(OC_PC_LIBS_PRIVATE "")
if(ZLIB_FOUND)
  string(APPEND OC_PC_LIBS_PRIVATE " -lz")
endif()
if(OUTCORE_HAVE_CUDA)
  # liboutcore.a calls the CUDA runtime, which is linked statically. Its archive is installed
  # in a directory of outcore's own (lib/outcore, so that no other -lcudart_static of the
  # prefix is shadowed): a static link, through outcore.pc or outcore::outcore_static (whose
  # outcore::cudart_static names this file), then needs no CUDA toolkit, and outcore.pc names no
  # directory of the build machine (NVIDIA's licence lets libcudart_static.a be redistributed
  # with an application). The driver is loaded at run time (dlopen); nvcc's host code needs
  # the C++ runtime.
  get_target_property(oc_cudart_static CUDA::cudart_static IMPORTED_LOCATION)
  if(NOT oc_cudart_static)
    set(oc_cudart_static "${CUDA_cudart_static_LIBRARY}")
  endif()
  get_filename_component(oc_cudart_static "${oc_cudart_static}" REALPATH)
  install(FILES "${oc_cudart_static}" DESTINATION ${OC_CUDART_DIR} RENAME libcudart_static.a
          COMPONENT development)
  string(APPEND OC_PC_LIBS_PRIVATE " -L\${libdir}/outcore -lcudart_static -ldl -lrt -lstdc++")
endif()
if(OUTCORE_HAVE_MPI)
  # By name only: a program that links liboutcore.a of an MPI build is an MPI program, built
  # with its MPI's compiler wrapper (mpicc), which knows where that MPI's libraries are.
  foreach(lib ${MPI_C_LIBRARIES})
    get_filename_component(name "${lib}" NAME_WE)
    string(REGEX REPLACE "^lib" "" name "${name}")
    string(APPEND OC_PC_LIBS_PRIVATE " -l${name}")
  endforeach()
endif()
string(APPEND OC_PC_LIBS_PRIVATE " -lm")
if(CMAKE_THREAD_LIBS_INIT)
  string(APPEND OC_PC_LIBS_PRIVATE " ${CMAKE_THREAD_LIBS_INIT}")
endif()
string(STRIP "${OC_PC_LIBS_PRIVATE}" OC_PC_LIBS_PRIVATE)
configure_file(cmake/outcore.pc.in ${CMAKE_BINARY_DIR}/outcore.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/outcore.pc DESTINATION ${OC_PKGCONFIG_DIR} COMPONENT development)

include(cmake/cli_docs.cmake)
include(cmake/wheel.cmake)
