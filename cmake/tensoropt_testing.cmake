# Helpers for tensoropt's own tests: warnings as errors and optional sanitizers.
function(tensoropt_dev_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  if(TENSOROPT_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                           -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
