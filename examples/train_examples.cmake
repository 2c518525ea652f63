# The runtime's training examples (need tensoropt::runtime: BLAS + threads; MPI optional).
# Included from examples/CMakeLists.txt; each example also runs as a test at a small size.
if(TARGET tensoropt::runtime)
  include(${PROJECT_SOURCE_DIR}/cmake/tensoropt_testing.cmake)
  foreach(ex IN ITEMS train_gpt train_cnn)
    if(NOT EXISTS ${CMAKE_CURRENT_LIST_DIR}/${ex}.cpp)
      continue()
    endif()
    add_executable(${ex} ${CMAKE_CURRENT_LIST_DIR}/${ex}.cpp)
    target_link_libraries(${ex} PRIVATE tensoropt::runtime)
    target_compile_definitions(${ex} PRIVATE TENSOROPT_EXAMPLE_DATA="${CMAKE_CURRENT_LIST_DIR}/data")
    if(TARGET MPI::MPI_CXX)
      target_link_libraries(${ex} PRIVATE MPI::MPI_CXX)
      target_compile_definitions(${ex} PRIVATE TENSOROPT_EXAMPLE_MPI)
    endif()
    tensoropt_dev_flags(${ex})
    if(ex STREQUAL "train_gpt" AND TENSOROPT_CUDA_BACKEND)  # --backend cuda
      target_link_libraries(${ex} PRIVATE tensoropt_cuda_local)
      tensoropt_cuda_flags(${ex})
    endif()
    if(TENSOROPT_BUILD_TESTS)
      add_test(NAME example.${ex} COMMAND ${ex} --steps 25)
      set_tests_properties(example.${ex} PROPERTIES TIMEOUT 120 LABELS example)
      if(ex STREQUAL "train_gpt")  # a hand-written plan with a fixed micro-batch count
        add_test(NAME example.train_gpt_strategy
                 COMMAND train_gpt --steps 25 --strategy tp=2,sp=1,recompute=full --micro-batches 2)
        set_tests_properties(example.train_gpt_strategy PROPERTIES TIMEOUT 120 LABELS example)
        # two pipeline stages of tp 2 under 1F1B with 4 micro-batches (the planner's
        # balanced stages want a repeat of 3 or more layers)
        add_test(NAME example.train_gpt_pipeline
                 COMMAND train_gpt --steps 25 --model gpt:layers=4,hidden=64,heads=4,seq=32,vocab=64,batch=8
                         --strategy pp=2,tp=2 --micro-batches 4)
        set_tests_properties(example.train_gpt_pipeline PROPERTIES TIMEOUT 120 LABELS example)
        # predicted vs measured memory of five frontier points; the exit status follows the table
        add_test(NAME example.train_gpt_compare
                 COMMAND ${CMAKE_COMMAND} -DTRAIN=$<TARGET_FILE:train_gpt> -P ${CMAKE_CURRENT_LIST_DIR}/check_compare.cmake)
        set_tests_properties(example.train_gpt_compare PROPERTIES TIMEOUT 150 LABELS example)
      endif()
      if(TARGET MPI::MPI_CXX)
        add_test(NAME example.${ex}_mpi
                 COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe --allow-run-as-root ${MPIEXEC_NUMPROC_FLAG} 4
                         $<TARGET_FILE:${ex}> --comm mpi --steps 25)
        set_tests_properties(example.${ex}_mpi PROPERTIES TIMEOUT 120 LABELS "example;mpi"
                             ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")  # OpenMPI frees at exit
      endif()
    endif()
  endforeach()
  # A saved plan trains in train_gpt, is refused for another device count or
  # precision, and a resumed run gives the losses of an uninterrupted one; the same
  # for a plan file with pipeline stages.
  if(TENSOROPT_BUILD_TESTS AND TARGET train_gpt AND TARGET tensoropt-plan)
    add_test(NAME example.train_gpt_plan_file
             COMMAND ${CMAKE_COMMAND} -DPLAN=$<TARGET_FILE:tensoropt-plan> -DTRAIN=$<TARGET_FILE:train_gpt>
                     -DOUT=${CMAKE_CURRENT_BINARY_DIR}/train_plan_test -P ${CMAKE_CURRENT_LIST_DIR}/check_train_plan.cmake)
    set_tests_properties(example.train_gpt_plan_file PROPERTIES TIMEOUT 300 LABELS example)
    # --strategy dp=1,tp=2,pp=2 --save-plan: the evaluated pipeline plan, trained from its file
    add_test(NAME example.train_gpt_strategy_plan_file
             COMMAND ${CMAKE_COMMAND} -DPLAN=$<TARGET_FILE:tensoropt-plan> -DTRAIN=$<TARGET_FILE:train_gpt>
                     -DOUT=${CMAKE_CURRENT_BINARY_DIR}/train_strategy_plan_test
                     -P ${CMAKE_CURRENT_LIST_DIR}/check_strategy_plan.cmake)
    set_tests_properties(example.train_gpt_strategy_plan_file PROPERTIES TIMEOUT 120 LABELS example)
  endif()
endif()
