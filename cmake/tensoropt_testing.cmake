# Helpers for tensoropt's own tests: warnings as errors and optional sanitizers.
function(tensoropt_dev_flags target)
  # C++ only: a target may also compile the CUDA backend's source (tensoropt_cuda_flags).
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>)
  # GCC 12's -Wrestrict misfires inside libstdc++'s std::string operator+ at -O2/-O3
  # (GCC bug 105329); it flags no code of ours.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
  endif()
  if(TENSOROPT_SANITIZE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined
                           -fno-omit-frame-pointer -fno-sanitize-recover=all>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# The project's own targets that compile the CUDA backend's source (tensoropt::cuda
# adds it, with -std=c++20: CMake 3.25 knows neither cuda_std_20 nor CUDA_STANDARD 20
# for nvcc 13, "dialect CUDA20 not supported"), nvcc and host warnings as errors,
# C++ warnings as tensoropt_dev_flags.
function(tensoropt_cuda_flags target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror>
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
  endif()
endfunction()

# The planner's tools link tcmalloc_minimal where found (TENSOROPT_TCMALLOC, CMakeLists.txt):
# nothing of it is called, so it is linked past --as-needed. Not under the sanitizers, whose
# allocator it would replace.
function(tensoropt_planner_allocator target)
  if(NOT TENSOROPT_TCMALLOC OR TENSOROPT_SANITIZE)
    return()
  endif()
  find_library(TENSOROPT_TCMALLOC_LIBRARY NAMES tcmalloc_minimal libtcmalloc_minimal.so.4)
  if(TENSOROPT_TCMALLOC_LIBRARY)
    target_link_libraries(${target} PRIVATE -Wl,--push-state,--no-as-needed ${TENSOROPT_TCMALLOC_LIBRARY}
                          -Wl,--pop-state)
  endif()
endfunction()

# tensoropt-plan and plan_bench (which times it) build at -O2 where the Release flags ask
# for -O3 (CMake's default): tensoropt-plan's one translation unit compiles in 43 instead
# of 57 s, most of the first run of scripts/plan.sh, and the planner runs about as fast
# (plan_bench, 2 threads, the builds one after the other: megatron-1t and inception-v3 4-6 %
# faster, gpt3-39b and gpt3-1.3b in fast mode 3-5 % slower, the rest within what runs vary;
# README, the planner's speed table). Other flags (the test build's -O1) are left alone.
function(tensoropt_planner_o2 target)
  if(CMAKE_CXX_FLAGS_RELEASE MATCHES "-O3")
    target_compile_options(${target} PRIVATE $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:-O2>)
  endif()
endfunction()
