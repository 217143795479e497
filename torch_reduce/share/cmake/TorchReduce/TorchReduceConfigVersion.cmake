# The package's version, read from torch_reduce/_version.py (its one place). A request is met by
# this version or a newer one.
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../../../_version.py" _treduce_line
     REGEX "^__version__ = \"[^\"]+\"")
string(REGEX REPLACE "^__version__ = \"([^\"]+)\".*" "\\1" PACKAGE_VERSION "${_treduce_line}")
unset(_treduce_line)
if(PACKAGE_FIND_VERSION AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
