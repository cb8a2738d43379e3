# cmake -DLAUNCHER=<gpu launcher> -DSAMPLE=<exe> -DARG_COUNT=<n> -DARG0=<arg> ... -DARG<n-1>=<arg>
#       "-DMESSAGE=<regex>" [-DRUNTIME_ERROR=ON] [-DALLOW_WAIVER=ON] -P expect_usage_error.cmake
#
# Bad input to a sample: passes only when <exe>, run through the GPU test launcher with the
# arguments ARG0 ... ARG<n-1>, exits with 1, its output matches MESSAGE and it is the kind of
# error expected: a usage error (runSample() adds "Run '<program> --help' for the options."), or
# with RUNTIME_ERROR one the run found ("<program>: error: ..."). CTest's
# PASS_REGULAR_EXPRESSION alone ignores the exit code, so a sample that printed the right words
# and then failed elsewhere, went on, or waived (exit 2) would pass. Where this machine cannot run
# CUDA programs (ctest/machine_waiver.cmake: no driver, no usable device, a driver of an older
# major version, a compute mode that admits no context), or with ALLOW_WAIVER where the sample
# waives, the output is passed on unchanged and the test's SKIP_REGULAR_EXPRESSION marks it
# Skipped.
include("${CMAKE_CURRENT_LIST_DIR}/machine_waiver.cmake")
foreach(variable LAUNCHER SAMPLE ARG_COUNT MESSAGE)
  if(NOT DEFINED ${variable} OR "${${variable}}" STREQUAL "")
    message(FATAL_ERROR "expect_usage_error.cmake: -D${variable}=... is missing")
  endif()
endforeach()

include("${CMAKE_CURRENT_LIST_DIR}/script_arguments.cmake")  # arguments
execute_process(COMMAND "${LAUNCHER}" "${SAMPLE}" ${arguments}
                RESULT_VARIABLE exit_code OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
if(exit_code STREQUAL "2" AND (output MATCHES "(^|\n)${MEMSAMPLES_MACHINE_WAIVER}" OR
                               (ALLOW_WAIVER AND output MATCHES "(^|\n)WAIVED: ")))
  return()  # nothing to judge it on: Skipped by the test's SKIP_REGULAR_EXPRESSION
endif()
string(REPLACE ";" " " command_line "${arguments}")
if(NOT exit_code STREQUAL "1")
  message(FATAL_ERROR "'${command_line}' is bad input: expected exit code 1, got ${exit_code}")
endif()
if(NOT output MATCHES "${MESSAGE}")
  message(FATAL_ERROR "'${command_line}' exited with 1, but the output does not match "
                      "'${MESSAGE}'")
endif()
if(RUNTIME_ERROR)
  if(NOT output MATCHES ": error: ")
    message(FATAL_ERROR "'${command_line}': expected an error of the run (': error: ...')")
  endif()
elseif(NOT output MATCHES "Run '[^']+ --help' for the options[.]")
  message(FATAL_ERROR "'${command_line}': expected a usage error (\"Run '... --help' for the "
                      "options.\"), but the sample failed another way")
endif()
