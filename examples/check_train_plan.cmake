# A plan file from the planner trains in train_gpt; a resumed run repeats the
# losses of an uninterrupted one. Run by CTest:
#   cmake -DPLAN=<tensoropt-plan> -DTRAIN=<train_gpt> -DOUT=<dir> -P check_train_plan.cmake
include(${CMAKE_CURRENT_LIST_DIR}/check_common.cmake)
file(MAKE_DIRECTORY ${OUT})

# 1. Plan train_gpt's model (the spec it prints at start) for 4 CPU devices in fp32
#    and save the chosen plan.
run_ok(out ${TRAIN} --steps 1)
if(NOT out MATCHES "model (gpt:[^\n]*)\n")
  message(FATAL_ERROR "train_gpt does not print its model spec:\n${out}")
endif()
set(spec "${CMAKE_MATCH_1}")
run_ok(out ${PLAN} --model ${spec} --gpu cpu --precision fp32 --devices 4 --micro-batches 1
       --no-baselines --quiet --save-plan ${OUT}/p.json)
if(NOT EXISTS ${OUT}/p.json)
  message(FATAL_ERROR "tensoropt-plan --save-plan wrote no file:\n${out}")
endif()
file(READ ${OUT}/p.json plan_text)
if(NOT plan_text MATCHES "\"format\":\"tensoropt-plan/1\"")
  message(FATAL_ERROR "p.json is not a tensoropt-plan/1 file:\n${plan_text}")
endif()

# 2. train_gpt runs it and the loss falls.
run_ok(out ${TRAIN} --devices 4 --plan ${OUT}/p.json --steps 25)
if(NOT out MATCHES "plan file ${OUT}/p.json on 4 devices")
  message(FATAL_ERROR "train_gpt did not run the plan file:\n${out}")
endif()

# 3. Refusals: another device count, another precision, another model.
execute_process(COMMAND ${TRAIN} --devices 2 --plan ${OUT}/p.json --steps 1 RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(rc EQUAL 0 OR NOT err MATCHES "the plan is for 4 devices \\(1 x 4\\), this run has 2")
  message(FATAL_ERROR "a 4-device plan on 2 devices was not refused as expected (${rc}):\n${out}\n${err}")
endif()
run_ok(out ${PLAN} --model ${spec} --gpu cpu --precision bf16-mixed --devices 4 --micro-batches 1
       --no-baselines --quiet --save-plan ${OUT}/bf16.json)
execute_process(COMMAND ${TRAIN} --devices 4 --plan ${OUT}/bf16.json --steps 1 RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(rc EQUAL 0 OR NOT err MATCHES "the CPU backend runs fp32: plan with --precision fp32")
  message(FATAL_ERROR "a bf16 plan was not refused as expected (${rc}):\n${out}\n${err}")
endif()

string(REPLACE "layers=2" "layers=3" other "${spec}")
execute_process(COMMAND ${TRAIN} --model ${other} --devices 4 --plan ${OUT}/p.json --steps 1 RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(rc EQUAL 0 OR NOT err MATCHES "the plan was made for another model")
  message(FATAL_ERROR "a plan for ${spec} ran on ${other} (${rc}):\n${out}\n${err}")
endif()

# 4. 6 steps in one run equal 3 steps, a checkpoint, and 3 resumed steps.
function(losses text out_var)
  string(REGEX MATCHALL "step +[0-9]+  loss [0-9.]+" l "${text}")
  set(${out_var} "${l}" PARENT_SCOPE)
endfunction()
run_ok(whole ${TRAIN} --devices 4 --plan ${OUT}/p.json --steps 6)
run_ok(first ${TRAIN} --devices 4 --plan ${OUT}/p.json --steps 3 --save ${OUT}/ck.bin)
run_ok(second ${TRAIN} --devices 4 --plan ${OUT}/p.json --steps 3 --resume ${OUT}/ck.bin)
losses("${whole}" want)
losses("${first}${second}" got)
list(LENGTH want n)
if(NOT n EQUAL 6 OR NOT "${want}" STREQUAL "${got}")
  message(FATAL_ERROR "resumed losses differ from the uninterrupted run:\n want ${want}\n got  ${got}")
endif()

# 5. A tensoropt-plan/2 file (--pipeline: the frontier with pipeline stages; on this
#    model and 4 CPU devices its fastest plan has 2 stages) runs its stages (1F1B),
#    the loss falls, and a resumed pipeline run repeats the uninterrupted losses.
run_ok(out ${PLAN} --model ${spec} --gpu cpu --precision fp32 --devices 4 --pipeline --micro-batches 4
       --no-baselines --quiet --save-plan ${OUT}/pp.json)
file(READ ${OUT}/pp.json pp_text)
if(NOT pp_text MATCHES "\"format\":\"tensoropt-plan/2\"" OR NOT pp_text MATCHES "\"pipeline\": *{\"degree\":[2-9]")
  message(FATAL_ERROR "tensoropt-plan --pipeline did not choose a plan with pipeline stages here (the check needs "
                      "one; give it a budget or a model where stages win):\n${out}")
endif()
run_ok(out ${TRAIN} --devices 4 --plan ${OUT}/pp.json --steps 25)
if(NOT out MATCHES "plan file ${OUT}/pp.json on 4 devices: [^\n]*micro-batch\\(es\\) \\(1F1B\\)\n[^\n]*stages start at ops 0 ")
  message(FATAL_ERROR "train_gpt did not run the pipeline plan file's stages:\n${out}")
endif()
run_ok(whole ${TRAIN} --devices 4 --plan ${OUT}/pp.json --steps 4)
run_ok(first ${TRAIN} --devices 4 --plan ${OUT}/pp.json --steps 2 --save ${OUT}/pk.bin)
run_ok(second ${TRAIN} --devices 4 --plan ${OUT}/pp.json --steps 2 --resume ${OUT}/pk.bin)
losses("${whole}" pwant)
losses("${first}${second}" pgot)
if(NOT "${pwant}" STREQUAL "${pgot}")
  message(FATAL_ERROR "resumed pipeline losses differ from the uninterrupted run:\n want ${pwant}\n got  ${pgot}")
endif()
message(STATUS "plan file trained; refusals named; resumed losses equal: ${got}; pipeline plan file trained: ${pgot}")
