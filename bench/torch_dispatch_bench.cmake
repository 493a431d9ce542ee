# torch_dispatch_bench.cmake - optional PyTorch reference benchmark (opd-bench-dispatch-torch).
#
# include()d from bench/CMakeLists.txt. Builds torch_dispatch_bench.cpp against libtorch when a
# TorchConfig.cmake is found (Debian: libtorch-dev, /usr/lib/<multiarch>/cmake/Torch; elsewhere
# pass -DTorch_DIR=... or CMAKE_PREFIX_PATH). Otherwise it prints a STATUS line and does nothing
# (C++ is not enabled). Disable explicitly with -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON.

include_guard(GLOBAL)

set(_opd_torch_hints)
if(CMAKE_LIBRARY_ARCHITECTURE)
  list(APPEND _opd_torch_hints "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/Torch")
endif()
find_package(Torch CONFIG QUIET HINTS ${_opd_torch_hints})
unset(_opd_torch_hints)

if(NOT Torch_FOUND)
  message(STATUS "libtorch not found (install libtorch-dev): skipping opd-bench-dispatch-torch")
  return()
endif()

get_property(_opd_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
if(NOT "CXX" IN_LIST _opd_langs)
  include(CheckLanguage)
  check_language(CXX)
  if(NOT CMAKE_CXX_COMPILER)
    message(STATUS "libtorch found but no C++ compiler: skipping opd-bench-dispatch-torch")
    return()
  endif()
  enable_language(CXX)
endif()
unset(_opd_langs)

message(STATUS "libtorch ${Torch_VERSION} found (${Torch_DIR}): building opd-bench-dispatch-torch")
add_executable(opd-bench-dispatch-torch "${CMAKE_CURRENT_LIST_DIR}/torch_dispatch_bench.cpp")
set_target_properties(opd-bench-dispatch-torch PROPERTIES
  CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
separate_arguments(_opd_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(opd-bench-dispatch-torch PRIVATE ${_opd_torch_flags})
unset(_opd_torch_flags)
# The dispatcher fast path is header-inlined: never measure it unoptimized or with the
# debug-only dispatch trace check (compiled in unless NDEBUG).
if(NOT CMAKE_CONFIGURATION_TYPES AND NOT CMAKE_BUILD_TYPE)
  target_compile_options(opd-bench-dispatch-torch PRIVATE -O2)
  target_compile_definitions(opd-bench-dispatch-torch PRIVATE NDEBUG)
endif()
target_link_libraries(opd-bench-dispatch-torch PRIVATE ${TORCH_LIBRARIES})

add_executable(opd-bench-tensor-memory-torch "${CMAKE_CURRENT_LIST_DIR}/torch_tensor_memory.cpp")
set_target_properties(opd-bench-tensor-memory-torch PROPERTIES
  CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
target_link_libraries(opd-bench-tensor-memory-torch PRIVATE ${TORCH_LIBRARIES})
