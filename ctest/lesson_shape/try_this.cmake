# Reads the experiments of a sample README's `## Try this` section (CONVENTIONS, "README / page
# shape"): every bullet that starts "- `./build/bin/" holds one whole command in that code span,
# e.g.
#
#   - `./build/bin/vectorAddMMAP --stripes 64`: what to watch, and why.
#
# memsamples_add_try_tests() (cmake/MemorySamples.cmake) registers each one as the CTest test
# <executable>.try.<N>, so that no experiment a page suggests goes stale.
#
#   memsamples_read_try_this(<readme> <executable> <prefix>)
#
# sets <prefix>_COUNT (0 without a `## Try this` section) and, for each command N = 1..COUNT,
# <prefix>_ARGS_<N> (its arguments, a list) and <prefix>_LINE_<N> (its README line). A command
# that names another program than ./build/bin/<executable>, holds shell syntax (quotes,
# redirections, pipes, variables, globs, `;`, `&`...: the test runs the program itself, without a
# shell), or whose code span does not close on its line, is a configure error naming the README
# line. Bullets that do not start "- `./build/bin/" are left to the lessonShape.page check.
#
# Run as a script, it prints what it reads (the try-this test runs it so):
#   cmake -DREADME=<README.md> -DEXECUTABLE=<name> -P try_this.cmake
include_guard(GLOBAL)

function(memsamples_read_try_this readme executable prefix)
  file(READ "${readme}" text)
  set(prefix_text "- `./build/bin/")
  string(LENGTH "${prefix_text}" prefix_length)
  set(count 0)
  set(line_number 0)
  set(in_section FALSE)
  set(fenced FALSE)
  while(NOT text STREQUAL "")
    string(FIND "${text}" "\n" eol)
    if(eol EQUAL -1)
      set(line "${text}")
      set(text "")
    else()
      string(SUBSTRING "${text}" 0 ${eol} line)
      math(EXPR eol "${eol} + 1")
      string(SUBSTRING "${text}" ${eol} -1 text)
    endif()
    math(EXPR line_number "${line_number} + 1")
    string(REGEX REPLACE "[ \t\r]+$" "" line "${line}")
    if(line MATCHES "^[ \t]*(```|~~~)")
      if(fenced)
        set(fenced FALSE)
      else()
        set(fenced TRUE)
      endif()
      continue()
    endif()
    if(fenced)
      continue()
    endif()
    if(line MATCHES "^##? ")
      if(line STREQUAL "## Try this")
        set(in_section TRUE)
      else()
        set(in_section FALSE)
      endif()
      continue()
    endif()
    string(FIND "${line}" "${prefix_text}" at)
    if(NOT in_section OR NOT at EQUAL 0)
      continue()
    endif()
    set(where "${readme}:${line_number}")
    math(EXPR span_start "${prefix_length} - 12")  # at "./build/bin/"
    string(SUBSTRING "${line}" ${span_start} -1 rest)
    string(FIND "${rest}" "`" close)
    if(close EQUAL -1)
      message(FATAL_ERROR "${where}: the `## Try this` command's code span does not close on "
                          "its line; write the whole command in one code span: ${line}")
    endif()
    string(SUBSTRING "${rest}" 0 ${close} command)
    if(command MATCHES "([^A-Za-z0-9_.,:=/+%@ -])")
      message(FATAL_ERROR "${where}: the `## Try this` command `${command}` holds "
                          "`${CMAKE_MATCH_1}`, shell syntax or a character a test cannot pass "
                          "as it is (the build runs the program itself, without a shell): "
                          "write plain arguments only")
    endif()
    string(REGEX MATCHALL "[^ ]+" words "${command}")
    list(POP_FRONT words program)
    if(NOT program STREQUAL "./build/bin/${executable}")
      message(FATAL_ERROR "${where}: the `## Try this` command runs ${program}, but this README's "
                          "experiments run this sample, ./build/bin/${executable}")
    endif()
    math(EXPR count "${count} + 1")
    set(${prefix}_ARGS_${count} "${words}" PARENT_SCOPE)
    set(${prefix}_LINE_${count} ${line_number} PARENT_SCOPE)
  endwhile()
  set(${prefix}_COUNT ${count} PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE AND DEFINED README)
  memsamples_read_try_this("${README}" "${EXECUTABLE}" try)
  message("try this: ${try_COUNT} command(s)")
  if(try_COUNT GREATER 0)
    foreach(i RANGE 1 ${try_COUNT})
      string(REPLACE ";" " " arguments "${try_ARGS_${i}}")
      message("${i} (line ${try_LINE_${i}}): ${arguments}")
    endforeach()
  endif()
endif()
