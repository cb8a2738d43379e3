# The course's copy of docs/entry_points.md (run by the `docs` target after assemble_pages.cmake):
# each link to a source line, written for GitHub as (../samples/NN_name/FILE.cpp#L82), becomes a
# link to the line on Doxygen's source page of that file (FILE_8cpp_source.html#l00082; the
# samples' and Common's file names are unique, so the name alone finds the page), and the link to
# the table of reasons, a file the course does not show, becomes its path.
#
#   cmake -DMEMSAMPLES_ROOT=<repo> -DPAGES_DIR=<dir> -P course_page.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var MEMSAMPLES_ROOT PAGES_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "course_page.cmake: -D${var}=... is required")
  endif()
endforeach()

file(READ "${MEMSAMPLES_ROOT}/docs/entry_points.md" page)
string(REGEX MATCHALL "\\(\\.\\./[A-Za-z0-9_./]+\\.(cpp|hpp|cu)#L[0-9]+\\)" links "${page}")
list(REMOVE_DUPLICATES links)
foreach(link IN LISTS links)
  string(REGEX REPLACE "^\\(\\.\\./.*/([A-Za-z0-9_]+)\\.(cpp|hpp|cu)#L([0-9]+)\\)$"
         "\\1;\\2;\\3" parts "${link}")
  list(GET parts 0 name)
  list(GET parts 1 extension)
  list(GET parts 2 line)
  # Doxygen's file page names: '_' doubled, '.' written as '_8'; its line anchors have 5 digits.
  string(REPLACE "_" "__" name "${name}")
  string(LENGTH "${line}" digits)
  while(digits LESS 5)
    string(PREPEND line "0")
    math(EXPR digits "${digits} + 1")
  endwhile()
  string(REPLACE "${link}" "(${name}_8${extension}_source.html#l${line})" page "${page}")
endforeach()
string(REPLACE "[the table of reasons](entry_points/not_called.txt)"
       "the table of reasons `docs/entry_points/not_called.txt`" page "${page}")
file(WRITE "${PAGES_DIR}/entry_points.md" "${page}")
