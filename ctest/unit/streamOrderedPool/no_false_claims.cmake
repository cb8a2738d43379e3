# Fails when a file of 10_streamOrderedPool's pages or code says something cuda.h contradicts.
#   cmake -DROOT=<repository> -P no_false_claims.cmake
# Issue 33 F4: cuda.h says cuMemFree "may perform implicit synchronization" (and none for pool
# memory); it does not say cuMemFree waits for the whole device or for every kernel. Issue 33 R3:
# cuMemPoolTrimTo may keep what it cannot safely release, so no page promises it holds nothing.
set(files
    samples/10_streamOrderedPool/README.md
    samples/10_streamOrderedPool/streamOrderedPool.cpp
    samples/10_streamOrderedPool/streamOrderedPool_measure.hpp
    samples/10_streamOrderedPool/streamOrderedPool_measure.cpp
    docs/samples/10_streamOrderedPool.md)
set(claims
    "waits for the whole device"
    "cuMemFree[^.]*waits for all"
    "it waits for all of them"
    "trim[^.]*holds nothing"
    "check that it holds nothing")
set(found "")
foreach(file IN LISTS files)
  if(NOT EXISTS "${ROOT}/${file}")
    message(FATAL_ERROR "no_false_claims: ${ROOT}/${file} is missing: nothing to check")
  endif()
  file(READ "${ROOT}/${file}" text)
  # One line per paragraph is not needed: the patterns stop at a full stop.
  string(REPLACE "\n" " " text "${text}")
  string(REGEX REPLACE "[ */#]+" " " text "${text}")
  foreach(claim IN LISTS claims)
    if(text MATCHES "${claim}")
      string(APPEND found "\n  ${file}: \"${CMAKE_MATCH_0}\" (pattern \"${claim}\")")
    endif()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "no_false_claims: cuda.h does not promise this:${found}")
endif()
message(STATUS "no_false_claims: every file is free of the claims")
