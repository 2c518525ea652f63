# train_gpt --compare (cmake -P, TRAIN = the program): trains five frontier points of a
# small GPT on 4 local devices and prints predicted vs measured peak memory per point.
# Checks: five rows; every row meets the memory target (measured within -10 % .. +5 %
# of predicted); the exit status agrees with the table (0 when every row is met,
# non-zero when one is MISSED), so a script can rely on it.
execute_process(COMMAND ${TRAIN} --compare --steps 2 --model gpt:layers=2,hidden=32,heads=4,seq=16,vocab=64,batch=8
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
string(REGEX MATCHALL "\n#[0-9]+ [^\n]*" rows "${out}")
list(LENGTH rows n)
string(REGEX MATCHALL "\n#[0-9]+ [^\n]* met  [^\n]*" met "${out}")
list(LENGTH met n_met)
string(REGEX MATCHALL "\n#[0-9]+ [^\n]* MISSED  [^\n]*" missed "${out}")
list(LENGTH missed n_missed)
if(NOT n EQUAL 5 OR NOT n_met EQUAL 5 OR NOT n_missed EQUAL 0)
  message(FATAL_ERROR "train_gpt --compare: ${n} rows, ${n_met} met, ${n_missed} missed (want 5 met):\n${out}\n${err}")
endif()
if((n_missed EQUAL 0 AND NOT rc EQUAL 0) OR (n_missed GREATER 0 AND rc EQUAL 0))
  message(FATAL_ERROR "train_gpt --compare exited ${rc} with ${n_missed} missed rows:\n${out}\n${err}")
endif()
message(STATUS "train_gpt --compare: 5 of 5 points met the memory target, exit ${rc}")
