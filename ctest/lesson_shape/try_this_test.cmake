# lessonShapeFixture.tryThis: try_this.cmake reads a README's `## Try this` commands.
#   cmake -DTESTDATA=<ctest/lesson_shape/testdata> -DSCRATCH=<dir> -P try_this_test.cmake
# - the test data's 02_demo: two commands, their arguments and README lines;
# - a README without the section: none; a command inside a code block or another section: none;
# - another program, shell syntax, or a code span that does not close: a configure error naming
#   the README line.
cmake_minimum_required(VERSION 3.25)
set(reader "${CMAKE_CURRENT_LIST_DIR}/try_this.cmake")
include("${reader}")

function(expect_equal what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: expected '${expected}', got '${actual}'")
  endif()
endfunction()

memsamples_read_try_this("${TESTDATA}/samples/02_demo/README.md" demo try)
expect_equal("02_demo: commands" "${try_COUNT}" 2)
expect_equal("02_demo: command 1" "${try_ARGS_1}" "--size;64M")
expect_equal("02_demo: line of command 1" "${try_LINE_1}" 50)
expect_equal("02_demo: command 2" "${try_ARGS_2}" "--size;4K;--iterations;3")
expect_equal("02_demo: line of command 2" "${try_LINE_2}" 52)

file(REMOVE_RECURSE "${SCRATCH}")
set(readme "${SCRATCH}/README.md")
function(read_readme text count_var)
  file(WRITE "${readme}" "${text}")
  memsamples_read_try_this("${readme}" demo found)
  set(${count_var} ${found_COUNT} PARENT_SCOPE)
  set(found_ARGS_1 "${found_ARGS_1}" PARENT_SCOPE)
endfunction()

read_readme("# 99_demo — x\n\n## Run it\n- `./build/bin/demo --x`: not an experiment\n" count)
expect_equal("no ## Try this" "${count}" 0)
string(CONCAT text "## Try this\n```sh\n- `./build/bin/other | x`\n```\n- Watch it.\n"
       "- `./build/bin/demo`: no arguments\n## Going deeper\n- `./build/bin/other`\n")
read_readme("${text}" count)
expect_equal("code blocks, other bullets and sections" "${count}" 1)
expect_equal("a command without arguments" "${found_ARGS_1}" "")

# Each broken command stops the configure, naming the README line and the reason.
function(expect_error name bullet message)
  file(WRITE "${readme}" "# 99_demo — x\n\n## Try this\n- `./build/bin/demo --size 4K`\n${bullet}\n")
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DREADME=${readme}" -DEXECUTABLE=demo -P "${reader}"
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  string(REGEX REPLACE "[ \n]+" " " flat "${output}")
  string(FIND "${flat}" "${message}" at)
  string(FIND "${flat}" "${readme}:5:" where)
  if(result EQUAL 0 OR at EQUAL -1 OR where EQUAL -1)
    message(FATAL_ERROR "${name}: expected a configure error at ${readme}:5 saying `${message}`, "
                        "got (${result}):\n${output}")
  endif()
endfunction()
expect_error("another program" "- `./build/bin/vectorAddDrv --size 4K`: x"
             "runs ./build/bin/vectorAddDrv, but this README's experiments run this sample, ./build/bin/demo")
expect_error("a pipe" "- `./build/bin/demo --size 4K | head`: x" "holds `|`, shell syntax")
expect_error("a redirection" "- `./build/bin/demo > out.txt`: x" "holds `>`, shell syntax")
expect_error("a variable" "- `./build/bin/demo --size $SIZE`: x" "holds `$`, shell syntax")
expect_error("a sequence" "- `./build/bin/demo; ./build/bin/demo`: x" "holds `;`, shell syntax")
expect_error("quotes" "- `./build/bin/demo --name \"a b\"`: x" "holds `\"`, shell syntax")
expect_error("unclosed" "- `./build/bin/demo --size 4K: x" "code span does not close on its line")

# And the script form prints what it read.
file(WRITE "${readme}" "## Try this\n- `./build/bin/demo --size 4K --iterations 3`: x\n")
execute_process(COMMAND "${CMAKE_COMMAND}" "-DREADME=${readme}" -DEXECUTABLE=demo -P "${reader}"
                RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
expect_equal("the script form" "${result}: ${output}"
             "0: try this: 1 command(s)\n1 (line 2): --size 4K --iterations 3\n")
file(REMOVE_RECURSE "${SCRATCH}")
message(STATUS "try_this.cmake: commands read with their lines; other programs, shell syntax and "
               "unclosed spans stop the configure")
