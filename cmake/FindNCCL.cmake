# Finds NCCL's header (nccl.h) and, where installed, its library. Defines
# NCCL::headers (the include directory: what the CUDA backend needs, as it loads
# libnccl at run time) and, when the library was found, NCCL::NCCL (links it).
# Hints: NCCL_ROOT, or CUDAToolkit's directories. Sets NCCL_FOUND (the header),
# NCCL_LIBRARY_FOUND, NCCL_VERSION.
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY nccl HINTS ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
if(NCCL_INCLUDE_DIR AND EXISTS ${NCCL_INCLUDE_DIR}/nccl.h)
  file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_v REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
         NCCL_VERSION "${_nccl_v}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)
set(NCCL_LIBRARY_FOUND FALSE)
if(NCCL_FOUND AND NOT TARGET NCCL::headers)
  add_library(NCCL::headers INTERFACE IMPORTED)
  set_target_properties(NCCL::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
endif()
if(NCCL_FOUND AND NCCL_LIBRARY)
  set(NCCL_LIBRARY_FOUND TRUE)
  if(NOT TARGET NCCL::NCCL)
    add_library(NCCL::NCCL UNKNOWN IMPORTED)
    set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
                          INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
  endif()
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
