# Helpers for tensoropt's own tests: warnings as errors and optional sanitizers.
function(tensoropt_dev_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  # GCC 12's -Wrestrict misfires inside libstdc++'s std::string operator+ at -O2/-O3
  # (GCC bug 105329); it flags no code of ours.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(TENSOROPT_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                           -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
