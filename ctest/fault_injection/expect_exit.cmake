# cmake -DARG_COUNT=<n> -DARG0=<program> ... -DEXIT_CODE=<n> "-DMESSAGE=<regex>" -P expect_exit.cmake
#
# Runs ARG0 ARG1 ... (e.g. `cmake -E env LD_PRELOAD=... <probe>`) and passes only when it exits
# with EXIT_CODE and its output (stdout and stderr) matches MESSAGE. CTest's
# PASS_REGULAR_EXPRESSION alone ignores the exit code: a library that printed its refusal and then
# let the program run on would still pass.
foreach(variable ARG_COUNT EXIT_CODE MESSAGE)
  if(NOT DEFINED ${variable} OR "${${variable}}" STREQUAL "")
    message(FATAL_ERROR "expect_exit.cmake: -D${variable}=... is missing")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/../script_arguments.cmake")  # arguments

execute_process(COMMAND ${arguments} RESULT_VARIABLE exit_code OUTPUT_VARIABLE output
                ERROR_VARIABLE output)
message("${output}")
if(NOT exit_code STREQUAL "${EXIT_CODE}")
  message(FATAL_ERROR "expected exit code ${EXIT_CODE}, got ${exit_code}")
endif()
if(NOT output MATCHES "${MESSAGE}")
  message(FATAL_ERROR "exited with ${exit_code} as expected, but the output does not match "
                      "'${MESSAGE}'")
endif()
