# cmake -DSAMPLE=<exe> -DLAUNCHER=<gpu launcher> -DDRIVER_DIR=<dir of the stand-in libcuda.so.1>
#       -DDRIVER_VERSION=<x.y> -DBUILT_VERSION=<x.y> [-DNM=<nm>] [-DEXPECTED=<regex>]
#       [-DEXIT_CODE=<n>] [-DENVIRONMENT=<VAR=value;...>] [-DARG_COUNT=<n> -DARG0=<arg> ...]
#       -P expect_waived.cmake
#
# Passes only when <exe>, run through the GPU test launcher against the stand-in driver in
# DRIVER_DIR with every symbol bound at load time (LD_BIND_NOW=1, as Ubuntu's default `-z now`
# does), exits with 2 and says WAIVED naming both CUDA versions: a driver of an older major version
# than the toolkit's. CTest's PASS_REGULAR_EXPRESSION would ignore the exit code, hence a script.
# EXPECTED replaces that WAIVED line (a regular expression), EXIT_CODE the 2, ENVIRONMENT adds
# variables to the run and ARG0 ... ARG<n-1> are the sample's arguments: the tests against a
# driver of the toolkit's major version (memsamples_add_driver_test()) and
# 08_multicastReduce's stand-in of two multicast GPUs use them.
foreach(variable SAMPLE LAUNCHER DRIVER_DIR DRIVER_VERSION BUILT_VERSION)
  if(NOT ${variable})
    message(FATAL_ERROR "expect_waived.cmake: -D${variable}=... is missing")
  endif()
endforeach()
if(NOT DEFINED EXIT_CODE OR EXIT_CODE STREQUAL "")
  set(EXIT_CODE 2)
endif()
include("${CMAKE_CURRENT_LIST_DIR}/../script_arguments.cmake")  # arguments

# First a readable verdict on what the loader will do: a strong (U) import that the old driver
# lacks stops the process before main. Only these four exist in every driver and may stay strong;
# one strong import keeps libcuda.so.1 a needed library under `--as-needed`.
set(always_present cuInit cuDriverGetVersion cuGetErrorName cuGetErrorString)
if(NM)
  execute_process(COMMAND "${NM}" -D --undefined-only "${SAMPLE}" RESULT_VARIABLE nm_result
                  OUTPUT_VARIABLE imports ERROR_VARIABLE nm_error)
  if(NOT nm_result EQUAL 0)
    message(FATAL_ERROR "${NM} -D --undefined-only ${SAMPLE} failed: ${nm_error}")
  endif()
  string(REGEX MATCHALL "U cu[A-Z][A-Za-z0-9_]*" strong "${imports}")
  list(TRANSFORM strong REPLACE "^U " "")
  list(REMOVE_ITEM strong ${always_present})
  if(strong)
    list(JOIN strong ", " strong)
    message(FATAL_ERROR "${SAMPLE} imports these libcuda entry points strongly, so an older "
                        "driver without them stops it in the loader: ${strong}. Add them to "
                        "Common/support/weak_driver.hpp.")
  endif()
endif()

execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env "LD_LIBRARY_PATH=${DRIVER_DIR}:$ENV{LD_LIBRARY_PATH}"
          LD_BIND_NOW=1 ${ENVIRONMENT} "${LAUNCHER}" "${SAMPLE}" ${arguments}
  RESULT_VARIABLE exit_code OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
# A driver of an older major version: any driver of the toolkit's major version would do.
string(REPLACE "." "[.]" driver "${DRIVER_VERSION}")
string(REPLACE "." "[.]" built "${BUILT_VERSION}")
string(REGEX REPLACE "[.].*" "" built_major "${BUILT_VERSION}")
set(expected "WAIVED: the NVIDIA driver supports CUDA ${driver}, but this sample was built with "
             "CUDA ${built} and needs a driver for CUDA ${built_major}[.]0 or newer")
string(CONCAT expected ${expected})
if(EXPECTED)
  set(expected "${EXPECTED}")
endif()
if(NOT exit_code STREQUAL "${EXIT_CODE}")
  set(with "")
  if(ENVIRONMENT)
    string(REPLACE ";" " " with " with ${ENVIRONMENT}")
  endif()
  message(FATAL_ERROR "expected exit code ${EXIT_CODE} on a driver for CUDA ${DRIVER_VERSION}"
                      "${with}, got ${exit_code}")
endif()
if(NOT output MATCHES "${expected}")
  message(FATAL_ERROR "exit code ${EXIT_CODE}, but the output does not match '${expected}'")
endif()
