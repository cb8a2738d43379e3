# lessonShapeFixture.assemblePages: docs/assemble_pages.cmake on the checker's test data.
#   cmake -DMEMSAMPLES_ROOT=<testdata> -DPAGES_DIR=<scratch> -DEXPECTED=<page.md> -P this file
# - the page of samples/02_demo is exactly EXPECTED: its README with the core copy replaced by
#   `\snippet{lineno} 02_demo/demo.cpp core` and its picture and plot by `\image html`, then
#   docs/samples/02_demo.md, then the links; the two SVGs are in PAGES_DIR/images;
# - on samples/03_broken another comment that starts `<!-- core` is kept as it is;
# - a core line without a code block after it, or naming a file the folder lacks, stops the
#   docs build with a message naming the README.
cmake_minimum_required(VERSION 3.25)
set(assemble "${CMAKE_CURRENT_LIST_DIR}/../../docs/assemble_pages.cmake")

function(assemble root pages result_var output_var)
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DMEMSAMPLES_ROOT=${root}" "-DPAGES_DIR=${pages}"
                          -P "${assemble}"
                  RESULT_VARIABLE result ERROR_VARIABLE output OUTPUT_VARIABLE output)
  set(${result_var} "${result}" PARENT_SCOPE)
  set(${output_var} "${output}" PARENT_SCOPE)
endfunction()

assemble("${MEMSAMPLES_ROOT}" "${PAGES_DIR}" result output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "assemble_pages.cmake failed on the test data:\n${output}")
endif()
file(READ "${PAGES_DIR}/02_demo.md" page)
file(READ "${EXPECTED}" expected)
if(NOT page STREQUAL expected)
  message(FATAL_ERROR "${PAGES_DIR}/02_demo.md differs from ${EXPECTED}:\n${page}")
endif()
foreach(image picture_02_demo.svg 02_demo.svg)
  if(NOT EXISTS "${PAGES_DIR}/images/${image}")
    message(FATAL_ERROR "${PAGES_DIR}/images/${image}: not copied there for Doxygen")
  endif()
endforeach()
file(READ "${PAGES_DIR}/03_broken.md" broken)
foreach(kept "\n<!-- core-notes: not a core line, kept as it is -->\n"
             "\n\\snippet{lineno} 03_broken/broken.cpp core\n\n## Flow\n")
  string(FIND "${broken}" "${kept}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${PAGES_DIR}/03_broken.md lacks `${kept}`:\n${broken}")
  endif()
endforeach()

# Broken core lines stop the build.
set(bad "${PAGES_DIR}-bad")
file(REMOVE_RECURSE "${bad}")
file(WRITE "${bad}/samples/09_bad/bad.cpp" "//! [core]\nint a;\n//! [core]\n")
function(expect_failure name copy message)
  file(WRITE "${bad}/samples/09_bad/README.md" "# 09_bad — bad\n## The core\n${copy}")
  assemble("${bad}" "${bad}/pages" result output)
  string(REGEX REPLACE "[ \n]+" " " output "${output}")  # CMake wraps its messages
  string(FIND "${output}" "${message}" at)
  if(result EQUAL 0 OR at EQUAL -1 OR NOT output MATCHES "09_bad/README.md: ")
    message(FATAL_ERROR "${name}: expected a failure saying `${message}`, got (${result}):\n"
                        "${output}")
  endif()
endfunction()
expect_failure("no block" "<!-- core: bad.cpp -->\n\n```cpp\nint a;\n```\n"
               "must be followed directly by a fenced code block")
expect_failure("unclosed" "<!-- core: bad.cpp -->\n```cpp\nint a;\n" "is never closed")
expect_failure("no file" "<!-- core: gone.cpp -->\n```cpp\nint a;\n```\n"
               "names gone.cpp, which is not in samples/09_bad")
file(REMOVE_RECURSE "${bad}")
message(STATUS "assemble_pages.cmake: the core copies become \\snippet lines, broken ones stop it")
