# tensoropt-plan --gpu-file: a device preset file (tensoropt-device/1) is planned
# with its figures (4x the GEMM rates gives a faster predicted iteration, a small
# memory does not fit), and bad files are refused with one line naming the field.
# Run: cmake -DPLAN=path/to/tensoropt-plan -DOUT=dir -P check_gpu_file.cmake
file(MAKE_DIRECTORY ${OUT})
set(model gpt:layers=2,hidden=256,heads=4,seq=128,vocab=512,batch=8)
function(device_file path bf16 fp32 mem hbm)
  file(WRITE ${path} "{\"format\": \"tensoropt-device/1\", \"name\": \"calibrated-gpu\", \"device\": {"
       "\"memory-gib\": ${mem}, \"bf16-tflops\": ${bf16}, \"fp32-tflops\": ${fp32}, \"hbm-gbs\": ${hbm}, "
       "\"nvlink-gbs\": 300, \"network-gbs\": 40}, \"launch-us\": 3, \"measured\": [\"bf16-tflops\"]}\n")
endfunction()
# predicted seconds per iteration of --strategy tp=2 on 2 devices of `file`
function(predicted file outvar fitvar)
  execute_process(COMMAND ${PLAN} --model ${model} --devices 2 --micro-batches 1 --strategy tp=2 --quiet
                          --gpu-file ${file}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tensoropt-plan --gpu-file ${file} failed (${rc}): ${err}")
  endif()
  if(NOT out MATCHES "strategy tp=2 on 2 x calibrated-gpu")
    message(FATAL_ERROR "the device of the file is not named in the output:\n${out}")
  endif()
  if(NOT out MATCHES "predicted: ([0-9.e+-]+) (s|ms|us) per iteration")
    message(FATAL_ERROR "no predicted time in:\n${out}")
  endif()
  set(v ${CMAKE_MATCH_1})
  if(CMAKE_MATCH_2 STREQUAL "ms")
    set(scale "0.001")
  elseif(CMAKE_MATCH_2 STREQUAL "us")
    set(scale "0.000001")
  else()
    set(scale "1")
  endif()
  # CMake has no floating point: the value in nanoseconds, as an integer
  string(REGEX REPLACE "\\.[0-9]*$" "" whole "${v}")
  string(REGEX MATCH "\\.([0-9]*)$" frac "${v}")
  set(frac "${CMAKE_MATCH_1}000000")
  string(SUBSTRING "${frac}" 0 6 frac)
  if(whole STREQUAL "")
    set(whole 0)
  endif()
  math(EXPR micro "${whole} * 1000000 + 1${frac} - 1000000")  # value * 1e6
  if(scale STREQUAL "0.001")
    set(ns ${micro})
  elseif(scale STREQUAL "0.000001")
    math(EXPR ns "${micro} / 1000")
  else()
    math(EXPR ns "${micro} * 1000")
  endif()
  set(${outvar} ${ns} PARENT_SCOPE)  # nanoseconds
  if(out MATCHES "does NOT fit")
    set(${fitvar} no PARENT_SCOPE)
  else()
    set(${fitvar} yes PARENT_SCOPE)
  endif()
endfunction()

device_file(${OUT}/slow.json 100 10 80 2000)
device_file(${OUT}/fast.json 400 40 80 2000)
device_file(${OUT}/small.json 100 10 0.001 2000)
predicted(${OUT}/slow.json t_slow fit_slow)
predicted(${OUT}/fast.json t_fast fit_fast)
predicted(${OUT}/small.json t_small fit_small)
message(STATUS "predicted: ${t_slow} ns at 100 TFLOP/s, ${t_fast} ns at 400 TFLOP/s")
if(NOT t_fast LESS t_slow)
  message(FATAL_ERROR "4x the GEMM rate is not faster: ${t_fast} ns vs ${t_slow} ns")
endif()
if(NOT fit_slow STREQUAL "yes" OR NOT fit_small STREQUAL "no")
  message(FATAL_ERROR "memory-gib of the file is not the device's capacity (80 GiB fits: ${fit_slow}, "
                      "1 MiB fits: ${fit_small})")
endif()

# bad files: one line naming the field
function(refused path regex)
  execute_process(COMMAND ${PLAN} --model ${model} --devices 2 --gpu-file ${path} --quiet
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(STRIP "${err}" err)
  if(rc EQUAL 0 OR NOT err MATCHES "${regex}" OR err MATCHES "\n")
    message(FATAL_ERROR "${path}: expected one error line matching '${regex}', got rc ${rc}: ${err}")
  endif()
endfunction()
device_file(${OUT}/negative.json 100 10 80 -5)
refused(${OUT}/negative.json "device file '.*negative.json': device.hbm-gbs: expected a number in \\(0,")
file(WRITE ${OUT}/missing.json "{\"format\": \"tensoropt-device/1\", \"name\": \"x\", \"device\": {\"memory-gib\": 80}, \"launch-us\": 3}")
refused(${OUT}/missing.json "device: missing key 'bf16-tflops'")
file(WRITE ${OUT}/tag.json "{\"format\": \"tensoropt-plan/1\"}")
refused(${OUT}/tag.json "format: expected \"tensoropt-device/1\"")
refused(${OUT}/nonexistent.json "cannot open the device file")
