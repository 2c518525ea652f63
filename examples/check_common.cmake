# Helpers of the example check scripts (cmake -P), included by each.

# Runs the command in ARGN; fails the check unless it exits 0. Sets `out_var` to its stdout.
function(run_ok out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# Fails the check unless the frontier files `a_json` and `b_json` (JSON text; `a_name` and
# `b_name` name them in the message) have as many points and each point the same time
# and memory. Where two strategies tie in cost, two searches may return different
# ones, so only the costs are compared (re-cost each choice with --check-frontier).
# The costs are read by one regex per file: a string(JSON GET) per point re-parses the
# whole file each time (64 s for 509 points of 0.4 MB); a point whose costs the regex
# does not find makes the counts differ and fails the check.
function(expect_equal_costs a_json a_name b_json b_name)
  string(JSON na LENGTH "${a_json}" points)
  string(JSON nb LENGTH "${b_json}" points)
  if(NOT na EQUAL nb)
    message(FATAL_ERROR "${b_name} gave ${nb} points, ${a_name} ${na}")
  endif()
  string(REGEX MATCHALL "\"time\": *[-+0-9.eE]+, *\"memory\": *[0-9]+" ca "${a_json}")
  string(REGEX MATCHALL "\"time\": *[-+0-9.eE]+, *\"memory\": *[0-9]+" cb "${b_json}")
  list(LENGTH ca ma)
  list(LENGTH cb mb)
  if(NOT ma EQUAL na OR NOT mb EQUAL nb)
    message(FATAL_ERROR "expect_equal_costs: found the costs of ${ma} of ${na} points of ${a_name} and ${mb} of ${nb} "
                        "of ${b_name} (each point is written as {\"time\":..,\"memory\":..,...})")
  endif()
  if("${ca}" STREQUAL "${cb}")
    return()
  endif()
  math(EXPR last "${na} - 1")
  foreach(i RANGE ${last})
    list(GET ca ${i} a)
    list(GET cb ${i} b)
    if(NOT a STREQUAL b)
      message(FATAL_ERROR "point ${i}: ${a_name} ${a}, ${b_name} ${b}")
    endif()
  endforeach()
endfunction()
