# A test that a checker fails, and fails for the stated reason: both the exit status and the
# message are checked (a PASS_REGULAR_EXPRESSION alone would make CTest ignore the exit status,
# so a checker that printed the problem and still exited 0 would pass).
#
#   cmake -DARG_COUNT=<n> -DARG0=<program> -DARG1=<argument> ... -DMESSAGE=<text>
#         [-DEXIT_CODE=<n>] [-DSKIP_MESSAGE=<text>] -P expect_failure.cmake
#
# The command must exit with EXIT_CODE (default: any status but 0) and print MESSAGE (a plain
# substring, compared with runs of white space made single spaces, since CMake wraps its
# messages). With SKIP_MESSAGE, output holding that text is printed and the test ends without a
# verdict of its own: register the test with SKIP_REGULAR_EXPRESSION matching it, so that CTest
# shows it as Skipped (a checker that cannot run here, e.g. without matplotlib).
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED ARG_COUNT OR ARG_COUNT LESS 1 OR NOT DEFINED MESSAGE)
  message(FATAL_ERROR "expect_failure.cmake: -DARG_COUNT, -DARG0... and -DMESSAGE are required")
endif()
set(command "")
math(EXPR last "${ARG_COUNT} - 1")
foreach(i RANGE ${last})
  list(APPEND command "${ARG${i}}")
endforeach()
execute_process(COMMAND ${command} RESULT_VARIABLE result OUTPUT_VARIABLE output
                ERROR_VARIABLE output)
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${output}")
string(REGEX REPLACE "[ \t\r\n]+" " " expected "${MESSAGE}")
if(DEFINED SKIP_MESSAGE AND NOT SKIP_MESSAGE STREQUAL "")
  string(FIND "${flat}" "${SKIP_MESSAGE}" skip_at)
  if(NOT skip_at EQUAL -1)
    message("${output}")
    return()
  endif()
endif()
string(FIND "${flat}" "${expected}" at)
if(DEFINED EXIT_CODE)
  set(status_ok FALSE)
  if(result STREQUAL "${EXIT_CODE}")
    set(status_ok TRUE)
  endif()
  set(wanted "exit status ${EXIT_CODE}")
else()
  set(status_ok TRUE)
  if(result STREQUAL "0")
    set(status_ok FALSE)
  endif()
  set(wanted "a non-zero exit status")
endif()
if(NOT status_ok OR at EQUAL -1)
  message(FATAL_ERROR "expected ${wanted} and the message `${MESSAGE}`; "
                      "got exit status ${result} and:\n${output}")
endif()
message(STATUS "failed as expected (exit status ${result}): ${MESSAGE}")
