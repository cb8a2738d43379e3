# cmake -DLAUNCHER=<gpu launcher> -DPROBE=<memoryQueryDrv> -P test_summary.cmake
#
# Run by CTest after every test run (CTEST_CUSTOM_POST_TEST, written by ctest/CMakeLists.txt into
# the build's CTestCustom.cmake), so that the default `ctest` output says once what the CPU tests
# cover and why the GPU tests (label gpu) were Skipped here, which CTest itself does not say.
# The reason is this machine's: 00_memoryQueryDrv, the quickest sample, run through the GPU test
# launcher. Always exits 0: it explains, it judges nothing.
message("CPU tests (label unit): Common's helpers, each sample's decisions and verdicts on fake "
        "drivers and fake machines, the samples under stand-in drivers, the lesson shape and docs.")
if(NOT EXISTS "${LAUNCHER}" OR NOT EXISTS "${PROBE}")
  return()
endif()
execute_process(COMMAND "${LAUNCHER}" "${PROBE}" --quiet RESULT_VARIABLE exit_code
                OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(exit_code STREQUAL "0")
  message("GPU tests (label gpu): this machine runs CUDA programs; a Skipped one waived on its "
          "own (ctest -L gpu -V shows each WAIVED line).")
elseif(output MATCHES "WAIVED: ([^\n]*)")
  message("GPU tests (label gpu) are Skipped here: ${CMAKE_MATCH_1} "
          "(ctest --preset gpu shows each test's reason).")
else()
  message("GPU tests (label gpu): memoryQueryDrv exited with ${exit_code} here; "
          "ctest --preset gpu shows each test's output.")
endif()
