# find_package(TorchReduce): the imported target TorchReduce::torch_reduce, which carries
# lib/libtorch_reduce.so, the header directory (#include <torch_reduce/torch_reduce.h>) and torch's
# own libraries; also TorchReduce_INCLUDE_DIRS and TorchReduce_LIBRARIES.
#
# The prefix to give CMake, as torch does for its own package:
#   python -c "import torch_reduce; print(torch_reduce.cmake_prefix_path)"
# Torch is looked for where pip puts it beside torch_reduce, then on CMAKE_PREFIX_PATH
# (python -c "import torch; print(torch.utils.cmake_prefix_path)").
include(CMakeFindDependencyMacro)

# this file: <package>/share/cmake/TorchReduce/
get_filename_component(_treduce_pkg "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
find_dependency(Torch CONFIG HINTS "${_treduce_pkg}/../torch")

set(_treduce_lib "${_treduce_pkg}/lib/libtorch_reduce.so")
if(NOT EXISTS "${_treduce_lib}")
  set(TorchReduce_FOUND FALSE)
  set(TorchReduce_NOT_FOUND_MESSAGE
      "${_treduce_lib} does not exist: build torch_reduce first "
      "(pip install --no-build-isolation --no-deps -e .)")
  return()
endif()

if(NOT TARGET TorchReduce::torch_reduce)
  add_library(TorchReduce::torch_reduce SHARED IMPORTED)
  set_target_properties(TorchReduce::torch_reduce PROPERTIES
    IMPORTED_LOCATION "${_treduce_lib}"
    IMPORTED_SONAME "libtorch_reduce.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_treduce_pkg}/include"
    INTERFACE_LINK_LIBRARIES "${TORCH_LIBRARIES}")
endif()

set(TorchReduce_INCLUDE_DIRS "${_treduce_pkg}/include")
set(TorchReduce_LIBRARIES TorchReduce::torch_reduce)
unset(_treduce_lib)
unset(_treduce_pkg)
