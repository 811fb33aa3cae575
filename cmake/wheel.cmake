# wheel.cmake - the Python wheel's layout (scikit-build-core installs the "python" component
# only; python/pyproject.toml):
#
#   outcore/lib/liboutcore.so.<major>   the library under its SONAME, one file, no symlinks
#   outcore/bin/outcore                 the CLI (python -m outcore), RUNPATH $ORIGIN/../lib
#
# A wheel cannot hold symlinks (each would become a second copy of the library), so the file
# is installed once under the name the CLI asks the loader for.
if(DEFINED SKBUILD_PROJECT_NAME)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}")
    message(FATAL_ERROR "outcore: a wheel needs relative CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_BINDIR")
  endif()
  install(FILES $<TARGET_FILE:outcore> DESTINATION outcore/${CMAKE_INSTALL_LIBDIR}
          RENAME liboutcore.so.${PROJECT_VERSION_MAJOR} COMPONENT python)
  install(TARGETS outcore_cli RUNTIME DESTINATION outcore/${CMAKE_INSTALL_BINDIR} COMPONENT python)
endif()
