# Proves that a sample finds its fatbin however it is started: installed to a prefix, run from an
# unrelated working directory, and through a symlink in yet another folder.
# cmake -DBUILD_DIR=... -DLAUNCHER=... -DSAMPLE=vectorAddDrv -P fatbin_lookup_test.cmake
set(prefix "${BUILD_DIR}/fatbin-lookup-test")
file(REMOVE_RECURSE "${prefix}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}/install"
                RESULT_VARIABLE result OUTPUT_QUIET)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${result})")
endif()
if(EXISTS "${prefix}/install/bin/vectorAdd_kernel.fatbin")
  message(FATAL_ERROR "the fatbin was installed next to the executable; the test needs share/")
endif()
file(MAKE_DIRECTORY "${prefix}/links" "${prefix}/elsewhere")
file(CREATE_LINK "${prefix}/install/bin/${SAMPLE}" "${prefix}/links/${SAMPLE}" SYMBOLIC)

foreach(program "${prefix}/install/bin/${SAMPLE}" "${prefix}/links/${SAMPLE}")
  execute_process(COMMAND "${LAUNCHER}" "${program}" --size 1M --iterations 2
                  WORKING_DIRECTORY "${prefix}/elsewhere"
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  message("${program}:\n${output}${errors}")
  if(result EQUAL 2)
    # The test's SKIP_REGULAR_EXPRESSION turns this line into Skipped.
    message("WAIVED: the sample could not run here, so the lookup was not exercised")
    return()
  endif()
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${program} failed (${result})")
  endif()
  if(NOT output MATCHES "share/cuda-memory-samples/vectorAdd_kernel.fatbin")
    message(FATAL_ERROR "${program} did not load the installed fatbin")
  endif()
endforeach()
