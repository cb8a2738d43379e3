# cmake -DSAMPLE=<exe> -DLAUNCHER=<gpu launcher> -DDRIVER_DIR=<dir of the old libcuda.so.1>
#       -DDRIVER_VERSION=<x.y> -DBUILT_VERSION=<x.y> [-DNM=<nm>]
#       [-DEXPECTED=<regex>] [-DENVIRONMENT=<VAR=value;...>] -P expect_waived.cmake
#
# Passes only when <exe>, run through the GPU test launcher against the old driver in DRIVER_DIR
# with every symbol bound at load time (LD_BIND_NOW=1, as Ubuntu's default `-z now` does), exits
# with 2 and says WAIVED naming both CUDA versions. CTest's PASS_REGULAR_EXPRESSION would ignore
# the exit code, hence a script. EXPECTED replaces that WAIVED line (a regular expression), and
# ENVIRONMENT adds variables to the run: 08_multicastReduce uses both against a stand-in driver of
# two multicast GPUs, to show that it waives when multicast is turned off.
foreach(variable SAMPLE LAUNCHER DRIVER_DIR DRIVER_VERSION BUILT_VERSION)
  if(NOT ${variable})
    message(FATAL_ERROR "expect_waived.cmake: -D${variable}=... is missing")
  endif()
endforeach()

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
          LD_BIND_NOW=1 ${ENVIRONMENT} "${LAUNCHER}" "${SAMPLE}"
  RESULT_VARIABLE exit_code OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
string(REPLACE "." "[.]" driver "${DRIVER_VERSION}")
string(REPLACE "." "[.]" built "${BUILT_VERSION}")
set(expected "WAIVED: the NVIDIA driver supports CUDA ${driver}, but this sample was built with "
             "CUDA ${built} and needs a driver for CUDA ${built} or newer")
string(CONCAT expected ${expected})
if(EXPECTED)
  set(expected "${EXPECTED}")
endif()
if(NOT exit_code STREQUAL "2")
  set(with "")
  if(ENVIRONMENT)
    string(REPLACE ";" " " with " with ${ENVIRONMENT}")
  endif()
  message(FATAL_ERROR "expected exit code 2 (WAIVED) on a driver for CUDA ${DRIVER_VERSION}"
                      "${with}, got ${exit_code}")
endif()
if(NOT output MATCHES "${expected}")
  message(FATAL_ERROR "exit code 2, but the output does not match '${expected}'")
endif()
