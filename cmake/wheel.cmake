# wheel.cmake - the Python wheel's layout (scikit-build-core installs the "python" component
# only; python/pyproject.toml):
#
#   outcore/lib/liboutcore.so.<major>   the library under its SONAME, one file, no symlinks
#   outcore/bin/outcore                 the CLI (python -m outcore), RUNPATH $ORIGIN/../lib
#
# A wheel cannot hold symlinks (each would become a second copy of the library), so the file
# is installed once under the name the CLI asks the loader for.
#
# -C cmake.define.OUTCORE_WHEEL_FROM_BUILD=DIR packs the library and the CLI that the build
# folder DIR holds instead of compiling them: the project is configured as for any wheel (the
# version check, CUDA and MPI looked for), then CMakeLists.txt includes this file and stops,
# and the target the wheel builds (outcore_cli, build.targets of pyproject.toml) compiles
# nothing. tests/install/test_wheel.py packs the build under test this way.
if(DEFINED SKBUILD_PROJECT_NAME)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}")
    message(FATAL_ERROR "outcore: a wheel needs relative CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_BINDIR")
  endif()
  set(oc_wheel_lib_name liboutcore.so.${PROJECT_VERSION_MAJOR})
  if(OUTCORE_WHEEL_FROM_BUILD)
    set(oc_wheel_lib "${OUTCORE_WHEEL_FROM_BUILD}/liboutcore.so.${PROJECT_VERSION}")
    set(oc_wheel_cli "${OUTCORE_WHEEL_FROM_BUILD}/outcore")
    foreach(file "${oc_wheel_lib}" "${oc_wheel_cli}")
      if(NOT EXISTS "${file}")
        message(FATAL_ERROR "outcore: OUTCORE_WHEEL_FROM_BUILD: ${file} does not exist (a build of outcore "
                            "${PROJECT_VERSION}'s library and CLI is needed there)")
      endif()
    endforeach()
    add_custom_target(outcore_cli)
    install(FILES "${oc_wheel_lib}" DESTINATION outcore/${CMAKE_INSTALL_LIBDIR} RENAME ${oc_wheel_lib_name}
            COMPONENT python)
    install(PROGRAMS "${oc_wheel_cli}" DESTINATION outcore/${CMAKE_INSTALL_BINDIR} COMPONENT python)
    # The build tree's CLI finds the library beside itself; the
    # wheel's in ../lib alone, as install(TARGETS) below makes it.
    install(CODE "file(RPATH_SET FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/outcore/${CMAKE_INSTALL_BINDIR}/outcore\"
                       NEW_RPATH \"\\\$ORIGIN/../${CMAKE_INSTALL_LIBDIR}\")" COMPONENT python)
  else()
    install(FILES $<TARGET_FILE:outcore> DESTINATION outcore/${CMAKE_INSTALL_LIBDIR} RENAME ${oc_wheel_lib_name}
            COMPONENT python)
    install(TARGETS outcore_cli RUNTIME DESTINATION outcore/${CMAKE_INSTALL_BINDIR} COMPONENT python)
  endif()
endif()
