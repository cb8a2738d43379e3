# Fails when a page or a comment says again something the code or cuda.h contradicts (issue 33).
#   cmake -DROOT=<repository> -P no_false_claims.cmake
# Each entry is FILES|PATTERN: the files (comma-separated, relative to ROOT) must not match the
# regular expression, read with line breaks and comment marks (`*`, `/`, `#`) folded into spaces.
# F1: not every timed sample holds its stream while it queues its repetitions (09's ways, 10's
#     latencies, 07's handoffs and 05's two-way copies are timed otherwise).
# F3: cuCtxCreate_v4 is a CUDA 12.5 entry point, not one a 12.x driver lacks; and only 03 and 09
#     ask for their newer entry points (requireEntryPoint), not "every sample that needs one".
# F4: cuda.h says cuMemFree "may perform implicit synchronization" (and none for pool memory); it
#     does not say cuMemFree waits for the whole device or for every kernel. R3: cuMemPoolTrimTo
#     may keep what it cannot safely release, so no page promises it holds nothing.
# Newcomer: "jobs": 0 in a build preset is an unbounded make -j; a page shows a temporary path.
set(pool_files "samples/10_streamOrderedPool/README.md,samples/10_streamOrderedPool/streamOrderedPool.cpp,samples/10_streamOrderedPool/streamOrderedPool_measure.hpp,samples/10_streamOrderedPool/streamOrderedPool_measure.cpp,docs/samples/10_streamOrderedPool.md")
set(claims
    "README.md|the host's launch time never enters even a short repetition"
    "README.md|\\(`cuCtxCreate_v4`, `cuMemPrefetchBatchAsync`"
    "Common/memsamples_cuda.cpp|binds to \\(cuCtxCreate_v4"
    "Common/support/weak_driver.hpp|a sample checks each of those it calls with requireEntryPoint"
    "Common/support/devices.hpp|a sample that calls a newer one checks for it"
    "${pool_files}|waits for the whole device"
    "${pool_files}|cuMemFree[^.]*waits for all"
    "${pool_files}|it waits for all of them"
    "${pool_files}|trim[^.]*holds nothing"
    "${pool_files}|check that it holds nothing"
    "CMakePresets.json|\"jobs\": *0")
set(found "")
foreach(entry IN LISTS claims)
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} files)
  math(EXPR from "${bar} + 1")
  string(SUBSTRING "${entry}" ${from} -1 claim)
  string(REPLACE "," ";" files "${files}")
  foreach(file IN LISTS files)
    if(NOT EXISTS "${ROOT}/${file}")
      message(FATAL_ERROR "no_false_claims: ${ROOT}/${file} is missing: nothing to check")
    endif()
    file(READ "${ROOT}/${file}" text)
    string(REPLACE "\n" " " text "${text}")
    string(REGEX REPLACE "[ */#]+" " " text "${text}")
    if(text MATCHES "${claim}")
      string(APPEND found "\n  ${file}: \"${CMAKE_MATCH_0}\"")
    endif()
  endforeach()
endforeach()

# Newcomer: output shown on a page comes from ./build/bin, never from a temporary build folder.
file(GLOB pages RELATIVE "${ROOT}" "${ROOT}/README.md" "${ROOT}/samples/*/README.md"
     "${ROOT}/docs/samples/*.md")
list(LENGTH pages page_count)
if(page_count LESS 12)
  message(FATAL_ERROR "no_false_claims: found ${page_count} pages under ${ROOT}: nothing to check")
endif()
foreach(page IN LISTS pages)
  file(STRINGS "${ROOT}/${page}" temporary REGEX "/tmp/cms-gpu-build")
  if(temporary)
    list(GET temporary 0 line)
    string(APPEND found "\n  ${page}: a temporary build path: ${line}")
  endif()
endforeach()
if(found)
  message(FATAL_ERROR "no_false_claims: the code or cuda.h says otherwise:${found}")
endif()
message(STATUS "no_false_claims: none of the retracted claims is back")
