# A hand-written pipeline plan saved by the planner trains in train_gpt: tensoropt-plan
# --strategy dp=1,tp=2,pp=2 --save-plan writes the evaluated plan (tensoropt-plan/2),
# train_gpt --plan runs its two stages under 1F1B, the loss falls, the losses are those
# of train_gpt --strategy with the same spec (the same plan), and each stage's measured
# peak is within -10 % .. +5 % of the predicted one. Run by CTest:
#   cmake -DPLAN=<tensoropt-plan> -DTRAIN=<train_gpt> -DOUT=<dir> -P check_strategy_plan.cmake
include(${CMAKE_CURRENT_LIST_DIR}/check_common.cmake)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(model gpt:layers=4,hidden=64,heads=4,seq=32,vocab=64,batch=8,dropout=0)
set(spec dp=1,tp=2,pp=2)

run_ok(out ${PLAN} --model ${model} --gpu cpu --precision fp32 --devices 4 --micro-batches 4 --strategy ${spec}
       --save-plan ${OUT}/sp.json)
if(NOT out MATCHES "predicted runtime peak: [^\n]*\nwrote plan: ${OUT}/sp.json")
  message(FATAL_ERROR "tensoropt-plan --strategy ${spec} --save-plan did not write the plan:\n${out}")
endif()
file(READ ${OUT}/sp.json pj)
string(JSON fmt GET "${pj}" format)
string(JSON degree GET "${pj}" pipeline degree)
string(JSON k GET "${pj}" micro_batches)
string(JSON summary GET "${pj}" summary)
if(NOT fmt STREQUAL "tensoropt-plan/2" OR NOT degree EQUAL 2 OR NOT k EQUAL 4 OR NOT summary MATCHES "^pp 2 x tp 2")
  message(FATAL_ERROR "sp.json is not the 2-stage tp 2 plan of 4 micro-batches ('${fmt}', degree ${degree}, "
                      "k ${k}, '${summary}'):\n${pj}")
endif()

function(losses text out_var)
  string(REGEX MATCHALL "step +[0-9]+  loss [0-9.]+" l "${text}")
  set(${out_var} "${l}" PARENT_SCOPE)
endfunction()
run_ok(file_run ${TRAIN} --model ${model} --devices 4 --plan ${OUT}/sp.json --steps 20)
if(NOT file_run MATCHES "plan file ${OUT}/sp.json on 4 devices: [^\n]*4 micro-batch\\(es\\) \\(1F1B\\)\n[^\n]*stages start at ops 0 [1-9]")
  message(FATAL_ERROR "train_gpt did not run the saved plan's stages:\n${file_run}")
endif()
if(NOT file_run MATCHES "loss ([0-9.]+) -> ([0-9.]+);")
  message(FATAL_ERROR "train_gpt printed no loss summary:\n${file_run}")
endif()
set(first ${CMAKE_MATCH_1})
set(last ${CMAKE_MATCH_2})
if(NOT last LESS first)
  message(FATAL_ERROR "the loss did not fall: ${first} -> ${last}")
endif()
run_ok(spec_run ${TRAIN} --model ${model} --devices 4 --strategy ${spec} --micro-batches 4 --steps 20)
losses("${file_run}" from_file)
losses("${spec_run}" from_spec)
list(LENGTH from_file n)
if(NOT n EQUAL 20 OR NOT "${from_file}" STREQUAL "${from_spec}")
  message(FATAL_ERROR "the saved plan and --strategy ${spec} train differently:\n file ${from_file}\n spec ${from_spec}")
endif()

# measured peak per stage next to the predicted one
string(REGEX MATCHALL "stage [0-9] \\(ranks [0-9]-[0-9]\\): peak memory [0-9.]+ MiB, predicted [0-9.]+ MiB \\([-+][0-9.]+ %\\)"
       stages "${file_run}")
list(LENGTH stages ns)
if(NOT ns EQUAL 2)
  message(FATAL_ERROR "train_gpt did not report the measured and predicted peak of each of the 2 stages:\n${file_run}")
endif()
foreach(line IN LISTS stages)
  string(REGEX MATCH "\\(([-+][0-9.]+) %\\)" _ "${line}")
  set(err ${CMAKE_MATCH_1})
  if(err GREATER 5 OR err LESS -10)
    message(FATAL_ERROR "measured peak outside -10 % .. +5 % of predicted: ${line}")
  endif()
endforeach()
message(STATUS "--strategy ${spec} --save-plan trained: loss ${first} -> ${last}, losses equal to --strategy; ${stages}")
