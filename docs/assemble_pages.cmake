# Assembles one Doxygen page per sample (run by the `docs` target before Doxygen, so the site
# always shows the READMEs as they are now):
#
#   <PAGES_DIR>/NN_name.md = samples/NN_name/README.md      (the core, run it, flow, details, API
#                                                              list)
#                          + docs/samples/NN_name.md         ("The code": \snippet blocks pulled
#                                                              from the sample's sources, diagrams)
#                          + links to the previous and the next lesson
#   <PAGES_DIR>/lessons.md = the page `lessons`: every sample page as a \subpage, in folder order
#
# The README's title line gets the page label `sample_NN_name` (the main page links to it), and a
# link to another sample's README becomes a link to that sample's page. The README's copy of its
# core, a line `<!-- core: FILE -->` (or `<!-- core-b: FILE -->`) and the fenced code block right
# after it, becomes `\snippet{lineno} NN_name/FILE core` (or `core-b`): the page shows the
# source itself, between its `//! [core]` marker lines, with the file's line numbers. (The
# lessonShape.core test keeps the README's copy identical to that region, for readers of the
# README on its own.)
# The READMEs themselves are excluded from Doxygen's INPUT, so each sample has exactly one page.
# (Doxygen's \includedoc would avoid this step, but up to at least 1.9.4 it drops headings and
# merges paragraphs of a markdown file.)
#
# A line `<!-- plot: NAME -->` (in a README, right after the measured output it illustrates, or in
# docs/samples/NN_name.md) becomes the plot docs/plots/plot_data.py drew from docs/data/, with the
# caption it wrote (what the plot shows, and which data file from which machine): it is
# `\image html NAME.svg "caption"`. Where this docs build draws no plots (PLOTS_DIR empty: no
# matplotlib), the line becomes a sentence saying so.
#
#   cmake -DMEMSAMPLES_ROOT=<repo> -DPAGES_DIR=<dir> [-DPLOTS_DIR=<dir>] -P assemble_pages.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var MEMSAMPLES_ROOT PAGES_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "assemble_pages.cmake: -D${var}=... is required")
  endif()
endforeach()

# In @p page_var, every `<!-- plot: NAME -->` line becomes the plot NAME with its caption.
function(place_plots page_var)
  set(page "${${page_var}}")
  string(REGEX MATCHALL "\n<!-- plot: [A-Za-z0-9_]+ -->[ \t\r]*\n" markers "\n${page}\n")
  foreach(marker IN LISTS markers)
    string(REGEX REPLACE "^\n<!-- plot: ([A-Za-z0-9_]+) -->.*" "\\1" name "${marker}")
    if(PLOTS_DIR AND EXISTS "${PLOTS_DIR}/${name}.svg")
      file(READ "${PLOTS_DIR}/${name}.txt" caption)
      string(STRIP "${caption}" caption)
      string(REPLACE "\"" "'" caption "${caption}")
      set(figure "\\image html ${name}.svg \"${caption}\"")
    elseif(PLOTS_DIR)
      message(FATAL_ERROR "assemble_pages.cmake: a page shows the plot ${name}, which "
                          "docs/plots/plot_data.py did not draw in ${PLOTS_DIR}")
    else()
      string(CONCAT figure "<em>(The plot ${name} is left out of this build: configure found "
                    "no Python with matplotlib.)</em>")
    endif()
    string(REGEX REPLACE "^\n(<!-- plot: [A-Za-z0-9_]+ -->)[^\n]*\n$" "\\1" line "${marker}")
    string(REPLACE "${line}" "${figure}" page "${page}")
  endforeach()
  set(${page_var} "${page}" PARENT_SCOPE)
endfunction()

# In @p page_var (the README of the sample @p name, read from @p readme), every core copy becomes
# a \snippet of the region it copies.
function(snippet_core_copies name readme page_var)
  set(rest "${${page_var}}")
  set(done "")
  while(TRUE)
    string(FIND "${rest}" "\n<!-- core" at)
    if(at EQUAL -1)
      break()
    endif()
    math(EXPR at "${at} + 1")
    string(SUBSTRING "${rest}" 0 ${at} before)
    string(APPEND done "${before}")
    string(SUBSTRING "${rest}" ${at} -1 rest)
    string(FIND "${rest}" "\n" eol)
    if(eol EQUAL -1)
      set(line "${rest}")
      set(after "")
    else()
      string(SUBSTRING "${rest}" 0 ${eol} line)
      math(EXPR eol "${eol} + 1")
      string(SUBSTRING "${rest}" ${eol} -1 after)
    endif()
    if(NOT line MATCHES "^<!-- (core|core-b): ([^ \t]+) -->[ \t\r]*$")
      string(APPEND done "${line}")  # another comment: kept as it is
      if(eol EQUAL -1)
        set(rest "")
      else()
        set(rest "\n${after}")
      endif()
      continue()
    endif()
    set(tag "${CMAKE_MATCH_1}")
    set(file "${CMAKE_MATCH_2}")
    if(NOT EXISTS "${MEMSAMPLES_ROOT}/samples/${name}/${file}")
      message(FATAL_ERROR "${readme}: `${line}` names ${file}, which is not in samples/${name}")
    endif()
    if(NOT after MATCHES "^```")
      message(FATAL_ERROR "${readme}: `${line}` must be followed directly by a fenced code block "
                          "(```cpp) holding the copy of the region")
    endif()
    # The copy runs to the next line that starts with ``` (its closing fence), which goes too.
    string(FIND "${after}" "\n```" close)
    if(close EQUAL -1)
      message(FATAL_ERROR "${readme}: the code block after `${line}` is never closed")
    endif()
    math(EXPR close "${close} + 1")
    string(SUBSTRING "${after}" ${close} -1 rest)
    string(FIND "${rest}" "\n" eol)
    if(eol EQUAL -1)
      set(rest "")
    else()
      string(SUBSTRING "${rest}" ${eol} -1 rest)
    endif()
    string(APPEND done "\\snippet{lineno} ${name}/${file} ${tag}")
  endwhile()
  set(${page_var} "${done}${rest}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${PAGES_DIR}")
file(MAKE_DIRECTORY "${PAGES_DIR}")
file(GLOB folders LIST_DIRECTORIES true "${MEMSAMPLES_ROOT}/samples/*")
list(SORT folders)
set(names "")
foreach(dir IN LISTS folders)
  if(IS_DIRECTORY "${dir}" AND EXISTS "${dir}/README.md")
    get_filename_component(name "${dir}" NAME)
    list(APPEND names "${name}")
  endif()
endforeach()

list(LENGTH names count)
set(index 0)
set(lessons "")
foreach(name IN LISTS names)
  set(readme "${MEMSAMPLES_ROOT}/samples/${name}/README.md")
  file(READ "${readme}" page)
  if(NOT page MATCHES "^# ")
    message(FATAL_ERROR "${readme}: the first line must be the title, `# ${name} — ...`")
  endif()
  string(REGEX REPLACE "^# ([^\n]*)" "# \\1 {#sample_${name}}" page "${page}")
  string(REGEX REPLACE "\\]\\(\\.\\./([0-9][0-9]_[A-Za-z0-9]+)/(README\\.md)?\\)"
         "](@ref sample_\\1)" page "${page}")
  snippet_core_copies(${name} "${readme}" page)
  set(code "${MEMSAMPLES_ROOT}/docs/samples/${name}.md")
  if(EXISTS "${code}")
    file(READ "${code}" code_part)
    string(APPEND page "\n${code_part}")
  endif()
  place_plots(page)

  # The course reads in order: every page ends with a link to the lessons before and after it.
  set(links "")
  if(index GREATER 0)
    math(EXPR before "${index} - 1")
    list(GET names ${before} previous)
    string(APPEND links "Previous lesson: @ref sample_${previous}")
  endif()
  math(EXPR after "${index} + 1")
  if(after LESS count)
    list(GET names ${after} next)
    if(links)
      string(APPEND links " <br>\n")
    endif()
    string(APPEND links "Next lesson: @ref sample_${next}")
  endif()
  string(APPEND page "\n<hr>\n${links} <br>\nAll lessons: @ref lessons\n")
  file(WRITE "${PAGES_DIR}/${name}.md" "${page}")
  math(EXPR index "${index} + 1")
  string(APPEND lessons "${index}. @subpage sample_${name}\n")
endforeach()

# The lessons as one ordered tree (Related Pages, and the path shown above each lesson's title).
file(WRITE "${PAGES_DIR}/lessons.md" "# The lessons, in order {#lessons}

The main page says what each lesson teaches and what it changes from the one before. Each page
below is the sample's README followed, where it has one, by **The code**: its key parts, shown
from the source files themselves.

${lessons}")
