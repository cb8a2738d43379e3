# Fails when the front door or Common says something the code or cuda.h contradicts (issue 33).
#   cmake -DROOT=<repository> -P no_false_claims.cmake
# F1: not every timed sample holds its stream while it queues its repetitions (09's ways, 10's
#     latencies, 07's handoffs and 05's two-way copies are timed otherwise).
# F3: cuCtxCreate_v4 is a CUDA 12.5 entry point, not one a 12.x driver lacks; and only 03 and 09
#     ask for their newer entry points (requireEntryPoint), not "every sample that needs one".
# Newcomer: "jobs": 0 in a build preset is an unbounded make -j; a page shows a temporary path.
set(claims
    "README.md|the host's launch time never enters even a short repetition"
    "README.md|\\(`cuCtxCreate_v4`, `cuMemPrefetchBatchAsync`"
    "Common/memsamples_cuda.cpp|binds to \\(cuCtxCreate_v4"
    "Common/support/weak_driver.hpp|a sample checks each of those it calls with requireEntryPoint"
    "Common/support/devices.hpp|a sample that calls a newer one checks for it"
    "CMakePresets.json|\"jobs\": *0")
set(found "")
foreach(entry IN LISTS claims)
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} file)
  math(EXPR from "${bar} + 1")
  string(SUBSTRING "${entry}" ${from} -1 claim)
  if(NOT EXISTS "${ROOT}/${file}")
    message(FATAL_ERROR "no_false_claims: ${ROOT}/${file} is missing: nothing to check")
  endif()
  file(READ "${ROOT}/${file}" text)
  string(REPLACE "\n" " " text "${text}")
  string(REGEX REPLACE "[ */]+" " " text "${text}")
  if(text MATCHES "${claim}")
    string(APPEND found "\n  ${file}: \"${CMAKE_MATCH_0}\"")
  endif()
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
