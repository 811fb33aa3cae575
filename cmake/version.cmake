# The project version (project() in CMakeLists.txt) is the version of outcore. Two other places
# must say the same, and a release that bumps one and not the others fails here, at configure
# time: the header's OC_VERSION_* macros (which oc_version(), and so outcore.__version__,
# return) and the Python distribution's version in python/pyproject.toml.
file(STRINGS "${PROJECT_SOURCE_DIR}/include/outcore.h" oc_version_lines
     REGEX "^#define OC_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+$")
foreach(part MAJOR MINOR PATCH)
  set(oc_header_${part} "")
  foreach(line IN LISTS oc_version_lines)
    if(line MATCHES "^#define OC_VERSION_${part} +([0-9]+)$")
      set(oc_header_${part} "${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
set(oc_header_version "${oc_header_MAJOR}.${oc_header_MINOR}.${oc_header_PATCH}")
if(NOT oc_header_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "include/outcore.h says version ${oc_header_version} (OC_VERSION_MAJOR/MINOR/PATCH), "
                      "CMakeLists.txt's project() says ${PROJECT_VERSION}: make them the same")
endif()

# The Python package's version: scikit-build-core passes it when it runs the build (also from an
# sdist, where python/ is not beside this file); otherwise it is read from python/pyproject.toml.
set(oc_python_where "${PROJECT_SOURCE_DIR}/python/pyproject.toml")
if(DEFINED SKBUILD_PROJECT_VERSION)
  set(oc_python_version "${SKBUILD_PROJECT_VERSION}")
  set(oc_python_where "the Python package being built")
elseif(EXISTS "${oc_python_where}")
  file(STRINGS "${oc_python_where}" oc_python_version REGEX "^version = \"[^\"]*\"$")
  string(REGEX REPLACE "^version = \"([^\"]*)\"$" "\\1" oc_python_version "${oc_python_version}")
else()
  set(oc_python_version "${PROJECT_VERSION}")
endif()
if(NOT oc_python_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "${oc_python_where} says version '${oc_python_version}', "
                      "CMakeLists.txt's project() says ${PROJECT_VERSION}: make them the same")
endif()
