# cli_docs.cmake - the CLI's man page and bash completion.
#
# outcore.1 is generated after the CLI is linked, from what `outcore --help` and
# `outcore <command> --help` print (tools/man/outcore_man.py), so the page and the help are
# the same text and cannot disagree. The completion asks the installed CLI for its commands
# and options when it runs, for the same reason.
#
# An interpreter is all the build needs of Python (this page; pytest in tests/): find_program,
# which runs nothing, where FindPython3 starts the interpreter several times at configure to
# read its paths and ABI. A Python3_EXECUTABLE given to CMake (scikit-build-core passes one) is
# used as it is.
find_program(Python3_EXECUTABLE NAMES python3 DOC "The Python 3 interpreter of the man page and the tests")
if(Python3_EXECUTABLE AND NOT CMAKE_CROSSCOMPILING AND NOT OUTCORE_SANITIZE)
  add_custom_command(
    OUTPUT ${CMAKE_BINARY_DIR}/outcore.1
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/man/outcore_man.py
            --cli $<TARGET_FILE:outcore_cli> --version ${PROJECT_VERSION} -o ${CMAKE_BINARY_DIR}/outcore.1
    DEPENDS outcore_cli ${PROJECT_SOURCE_DIR}/tools/man/outcore_man.py
    COMMENT "Generating the man page outcore.1 from the CLI's --help")
  add_custom_target(outcore_man ALL DEPENDS ${CMAKE_BINARY_DIR}/outcore.1)
  install(FILES ${CMAKE_BINARY_DIR}/outcore.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
else()
  message(STATUS "outcore: the man page is not built (it needs Python 3 and a CLI that runs here, "
                 "without sanitizers)")
endif()

install(FILES tools/completion/outcore.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME outcore COMPONENT runtime)
