# Runs tensoropt-plan on a small job, checks its outputs, re-solves its problem file.
include(${CMAKE_CURRENT_LIST_DIR}/check_common.cmake)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${PLAN} --model mlp --devices 4 --micro-batches 4 --memory-budget 4 --quiet
                        --frontier-json ${OUT}/frontier.json --problem-json ${OUT}/problem.json
                        --svg ${OUT}/frontier.svg --html ${OUT}/report.html
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tensoropt-plan failed (${rc}):\n${out}\n${err}")
endif()
foreach(want "frontier: [0-9]+ Pareto-optimal plans" "baselines" "data parallel" "chosen plan #")
  if(NOT out MATCHES "${want}")
    message(FATAL_ERROR "output lacks '${want}':\n${out}")
  endif()
endforeach()
foreach(f frontier.json problem.json frontier.svg report.html)
  if(NOT EXISTS ${OUT}/${f})
    message(FATAL_ERROR "${f} was not written")
  endif()
endforeach()
file(READ ${OUT}/frontier.json fj)
string(JSON fmt GET "${fj}" format)
string(JSON n LENGTH "${fj}" points)
if(NOT fmt STREQUAL "tensoropt-frontier/2" OR n LESS 2)
  message(FATAL_ERROR "bad frontier file: format '${fmt}', ${n} points")
endif()
# Staircase: memory ascending, time strictly descending.
math(EXPR last "${n} - 1")
set(prev_m -1)
set(prev_t "")
foreach(i RANGE ${last})
  string(JSON m GET "${fj}" points ${i} memory)
  string(JSON t GET "${fj}" points ${i} time)
  string(JSON k GET "${fj}" points ${i} micro_batches)
  if(NOT k EQUAL 4)
    message(FATAL_ERROR "point ${i} has micro_batches ${k}, expected 4")
  endif()
  if(NOT m GREATER prev_m)
    message(FATAL_ERROR "point ${i}: memory ${m} not above ${prev_m}")
  endif()
  if(NOT t GREATER 0)
    message(FATAL_ERROR "point ${i}: time ${t} s is not a positive number")
  endif()
  # if(LESS) compares as floating-point numbers (the times are seconds, e.g. 1.25e-05).
  if(NOT prev_t STREQUAL "" AND NOT t LESS prev_t)
    message(FATAL_ERROR "point ${i}: time ${t} s not below the previous point's ${prev_t} s")
  endif()
  set(prev_m ${m})
  set(prev_t ${t})
endforeach()
file(READ ${OUT}/frontier.svg svg)
if(NOT svg MATCHES "^<svg" OR NOT svg MATCHES "chosen plan #")
  message(FATAL_ERROR "the SVG lacks the plot or the chosen plan")
endif()
# An outside tool's view: solve the written problem and compare the frontiers.
execute_process(COMMAND ${PLAN} --solve ${OUT}/problem.json --micro-batches 4 --frontier-json ${OUT}/resolved.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out2 ERROR_VARIABLE err2)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--solve failed (${rc}):\n${out2}\n${err2}")
endif()
file(READ ${OUT}/resolved.json rj)
# Costs must be equal point for point; where two strategies tie in cost the planner's
# search (the exact chain fold over repeated layers) and --solve (the general engine)
# may return different ones, so each choice is re-costed from the problem instead.
expect_equal_costs("${fj}" "the planner" "${rj}" "--solve")
foreach(f frontier.json resolved.json)
  execute_process(COMMAND ${PLAN} --check-frontier ${OUT}/${f} --problem-json ${OUT}/problem.json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out3 ERROR_VARIABLE err3)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--check-frontier ${f} failed (${rc}):\n${out3}\n${err3}")
  endif()
endforeach()
# "-" is stdout: the frontier alone goes there, the table to stderr.
execute_process(COMMAND ${PLAN} --solve ${OUT}/problem.json --micro-batches 4 --frontier-json -
                RESULT_VARIABLE rc OUTPUT_VARIABLE js ERROR_VARIABLE err3)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--frontier-json - failed (${rc}):\n${err3}")
endif()
string(JSON n3 ERROR_VARIABLE jerr LENGTH "${js}" points)
if(jerr OR NOT n3 EQUAL n OR NOT err3 MATCHES "solved in")
  message(FATAL_ERROR "--frontier-json - wrote no clean frontier to stdout (${jerr}):\n${js}")
endif()
# Each micro-batch count's progress line gives its wall time and its own CPU time.
execute_process(COMMAND ${PLAN} --model mlp --devices 2 --threads 2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out4 ERROR_VARIABLE err4)
if(NOT rc EQUAL 0 OR NOT "${out4}${err4}" MATCHES "micro-batches [0-9]+: [^\n]*solved in [0-9.]+ s \\([0-9.]+ s CPU\\)")
  message(FATAL_ERROR "no count's line with its wall and CPU time (${rc}):\n${out4}\n${err4}")
endif()
# An output path that cannot be written fails before the search, naming the path.
execute_process(COMMAND ${PLAN} --model mlp --devices 4 --micro-batches 4 --quiet --html ${OUT}/missing/r.html
                RESULT_VARIABLE rc OUTPUT_VARIABLE out4 ERROR_VARIABLE err4)
if(rc EQUAL 0 OR NOT err4 MATCHES "cannot write the report to '.*/missing/r.html': the folder .* does not exist"
   OR out4 MATCHES "frontier:")
  message(FATAL_ERROR "an unwritable --html path was not refused up front (${rc}):\n${out4}\n${err4}")
endif()
# A budget beyond int64 bytes is refused (it printed -8589934592 GiB): by the flag's
# range, or by the checked conversion behind it.
execute_process(COMMAND ${PLAN} --solve ${OUT}/problem.json --micro-batches 4 --memory-budget 1e10
                RESULT_VARIABLE rc OUTPUT_VARIABLE out5 ERROR_VARIABLE err5)
if(rc EQUAL 0 OR NOT err5 MATCHES "--memory-budget.*(is too large|expected a number in)")
  message(FATAL_ERROR "--memory-budget 1e10 was not refused (${rc}):\n${out5}\n${err5}")
endif()
# Repeated blocks in the problem file: the MLP's repeat<> is declared (tensoropt-problem/2),
# and --solve --mode fast composes it by powering to the planner's fast-mode frontier.
file(READ ${OUT}/problem.json pj)
string(JSON pfmt GET "${pj}" format)
string(JSON nrep ERROR_VARIABLE rerr LENGTH "${pj}" repeats)
if(NOT pfmt STREQUAL "tensoropt-problem/2" OR rerr OR nrep LESS 1)
  message(FATAL_ERROR "the problem file declares no repeated block: format '${pfmt}', repeats '${nrep}' ${rerr}")
endif()
execute_process(COMMAND ${PLAN} --model mlp --devices 4 --micro-batches 4 --mode fast --quiet --no-baselines
                        --frontier-json ${OUT}/fast.json --problem-json ${OUT}/fast_problem.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out6 ERROR_VARIABLE err6)
if(NOT rc EQUAL 0 OR NOT out6 MATCHES "fast mode")
  message(FATAL_ERROR "tensoropt-plan --mode fast failed (${rc}):\n${out6}\n${err6}")
endif()
execute_process(COMMAND ${PLAN} --solve ${OUT}/fast_problem.json --mode fast --micro-batches 4
                        --frontier-json ${OUT}/fast_resolved.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out7 ERROR_VARIABLE err7)
if(NOT rc EQUAL 0 OR NOT out7 MATCHES "search: fast mode: one layout at every boundary between the [0-9]+ identical"
   OR NOT out7 MATCHES "weighted-sum optima")
  message(FATAL_ERROR "--solve --mode fast failed or did not say what it restricted (${rc}):\n${out7}\n${err7}")
endif()
file(READ ${OUT}/fast.json ffj)
file(READ ${OUT}/fast_resolved.json frj)
expect_equal_costs("${ffj}" "the planner's fast mode" "${frj}" "--solve --mode fast")
execute_process(COMMAND ${PLAN} --check-frontier ${OUT}/fast_resolved.json --problem-json ${OUT}/fast_problem.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out8 ERROR_VARIABLE err8)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--check-frontier of the fast frontier failed (${rc}):\n${out8}\n${err8}")
endif()
# Without --mode fast, --solve stays exact and says the file's blocks were not used.
if(NOT out2 MATCHES "\\(exact\\)" OR NOT out2 MATCHES "exact mode \\(--solve is exact unless --mode fast\\)")
  message(FATAL_ERROR "--solve of a /2 file did not say it solved exactly:\n${out2}")
endif()
# --mode fast on a file that declares no block is refused, saying how to solve it.
file(WRITE ${OUT}/plain.json "{\"format\": \"tensoropt-problem/1\", \"memory_offset\": 0, \"nodes\": [{\"name\": \"a\", \"configs\": [{\"label\": \"x\", \"time\": 1, \"memory\": 1}]}], \"edges\": []}")
execute_process(COMMAND ${PLAN} --solve ${OUT}/plain.json --mode fast
                RESULT_VARIABLE rc OUTPUT_VARIABLE out9 ERROR_VARIABLE err9)
if(rc EQUAL 0 OR NOT err9 MATCHES "declares no repeated block.*drop --mode fast to solve it exactly")
  message(FATAL_ERROR "--mode fast on a file without repeats was not refused clearly (${rc}):\n${out9}\n${err9}")
endif()
message(STATUS "planner outputs ok: ${n} points")
