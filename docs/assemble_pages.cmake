# Assembles one Doxygen page per sample (run by the `docs` target before Doxygen, so the site
# always shows the READMEs as they are now):
#
#   <PAGES_DIR>/NN_name.md = samples/NN_name/README.md      (the page: what and why, picture, flow,
#                                                              core, run it, try this, going deeper,
#                                                              API list)
#                          + docs/samples/NN_name.md         ("The code": \snippet blocks pulled
#                                                              from the sample's sources, diagrams)
#                          + links to the previous and the next lesson
#   <PAGES_DIR>/lessons.md = the page `lessons`: every sample page as a \subpage, in folder order
#   <PAGES_DIR>/mainpage.md = docs/mainpage.md, its pictures placed as below
#   <PAGES_DIR>/images/      = every picture and plot the pages show (Doxygen's IMAGE_PATH)
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
# Pictures: a line that is only a picture link to a committed SVG under docs/images,
#   ![alt](../../docs/images/NAME.svg)         (a concept picture, drawn by hand)
#   ![alt](../../docs/images/plots/NAME.svg)   (a plot that docs/plots/plot_data.py drew from
#                                               docs/data and that is committed there)
# (from docs/samples/*.md `../images/...`, from docs/mainpage.md `images/...`) becomes
# `\image html FILE "caption"`. GitHub shows the link as it is, with the alt text. Doxygen looks
# images up by file name alone, and a concept picture and a plot may share one
# (02_vectorAddMMAP.svg), so each is copied into <PAGES_DIR>/images under a name of its own: a
# plot as NAME.svg, a concept picture as picture_NAME.svg. A concept picture's caption is its alt
# text. A plot comes from PLOTS_DIR (default docs/images/plots) with the caption plot_data.py
# wrote beside it, NAME.txt (what the plot shows, and which data file from which machine), so the
# course always names the data behind it. A link to a missing file stops the build; for a plot,
# saying how to draw it.
#
#   cmake -DMEMSAMPLES_ROOT=<repo> -DPAGES_DIR=<dir> [-DPLOTS_DIR=<dir>] -P assemble_pages.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var MEMSAMPLES_ROOT PAGES_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "assemble_pages.cmake: -D${var}=... is required")
  endif()
endforeach()

if(NOT PLOTS_DIR)
  set(PLOTS_DIR "${MEMSAMPLES_ROOT}/docs/images/plots")
endif()
set(IMAGES_DIR "${PAGES_DIR}/images")
set(refresh_plots "python3 docs/plots/plot_data.py --data docs/data --out docs/images/plots")

# Moves @p rest_var up to the next line that starts with @p prefix: the text before it is appended
# to @p done_var, the line (without its newline) set in @p line_var, and @p rest_var keeps what
# follows it ("" or "\n..."). Without such a line, @p line_var is "" and nothing moves.
function(take_line_starting prefix rest_var done_var line_var)
  set(text "${${rest_var}}")
  string(FIND "${text}" "\n${prefix}" at)
  if(at EQUAL -1)
    set(${line_var} "" PARENT_SCOPE)
    return()
  endif()
  math(EXPR at "${at} + 1")
  string(SUBSTRING "${text}" 0 ${at} before)
  string(SUBSTRING "${text}" ${at} -1 text)
  string(FIND "${text}" "\n" eol)
  if(eol EQUAL -1)
    set(found "${text}")
    set(text "")
  else()
    string(SUBSTRING "${text}" 0 ${eol} found)
    string(SUBSTRING "${text}" ${eol} -1 text)
  endif()
  set(${done_var} "${${done_var}}${before}" PARENT_SCOPE)
  set(${line_var} "${found}" PARENT_SCOPE)
  set(${rest_var} "${text}" PARENT_SCOPE)
endfunction()

# In @p page_var (the text of @p source), every line that is only a picture link to docs/images
# (see above) becomes `\image html FILE "caption"`, its SVG copied to IMAGES_DIR.
function(place_pictures source page_var)
  set(rest "${${page_var}}")
  set(done "")
  while(TRUE)
    take_line_starting("![" rest done line)
    if(line STREQUAL "")
      break()
    endif()
    set(picture "^!\\[([^]]*)\\]\\(((\\.\\./)*(docs/)?images/)(plots/)?([A-Za-z0-9_.-]+)\\.svg\\)[ \t\r]*$")
    if(NOT line MATCHES "${picture}")
      string(APPEND done "${line}")  # another picture (a URL): Doxygen's
      continue()
    endif()
    set(caption "${CMAKE_MATCH_1}")
    set(kind "${CMAKE_MATCH_5}")
    set(name "${CMAKE_MATCH_6}")
    if(kind STREQUAL "plots/")
      if(NOT EXISTS "${PLOTS_DIR}/${name}.svg" OR NOT EXISTS "${PLOTS_DIR}/${name}.txt")
        message(FATAL_ERROR "${source}: a page shows the plot ${name}, but ${PLOTS_DIR} has no "
                            "${name}.svg with its caption ${name}.txt (draw and commit it: "
                            "${refresh_plots})")
      endif()
      set(file "${PLOTS_DIR}/${name}.svg")
      file(READ "${PLOTS_DIR}/${name}.txt" caption)
      string(STRIP "${caption}" caption)
      set(staged "${name}.svg")
    else()
      set(file "${MEMSAMPLES_ROOT}/docs/images/${name}.svg")
      if(NOT EXISTS "${file}")
        message(FATAL_ERROR "${source}: `${line}` shows ${file}, which does not exist (commit "
                            "the SVG there)")
      endif()
      set(staged "picture_${name}.svg")
    endif()
    file(COPY_FILE "${file}" "${IMAGES_DIR}/${staged}")
    string(REPLACE "\"" "'" caption "${caption}")
    string(APPEND done "\\image html ${staged} \"${caption}\"")
  endwhile()
  set(${page_var} "${done}${rest}" PARENT_SCOPE)
endfunction()

# In @p page_var (the README of the sample @p name, read from @p readme), every core copy becomes
# a \snippet of the region it copies.
function(snippet_core_copies name readme page_var)
  set(rest "${${page_var}}")
  set(done "")
  while(TRUE)
    take_line_starting("<!-- core" rest done line)
    if(line STREQUAL "")
      break()
    endif()
    if(NOT line MATCHES "^<!-- (core|core-b): ([^ \t]+) -->[ \t\r]*$")
      string(APPEND done "${line}")  # another comment: kept as it is
      continue()
    endif()
    set(tag "${CMAKE_MATCH_1}")
    set(file "${CMAKE_MATCH_2}")
    set(after "")
    if(NOT rest STREQUAL "")
      string(SUBSTRING "${rest}" 1 -1 after)
    endif()
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
file(MAKE_DIRECTORY "${PAGES_DIR}" "${IMAGES_DIR}")
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
  place_pictures("${readme} (or docs/samples/${name}.md)" page)

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

# The main page, its pictures placed.
if(EXISTS "${MEMSAMPLES_ROOT}/docs/mainpage.md")
  file(READ "${MEMSAMPLES_ROOT}/docs/mainpage.md" page)
  place_pictures("${MEMSAMPLES_ROOT}/docs/mainpage.md" page)
  file(WRITE "${PAGES_DIR}/mainpage.md" "${page}")
endif()

# The lessons as one ordered tree (Related Pages, and the path shown above each lesson's title).
file(WRITE "${PAGES_DIR}/lessons.md" "# The lessons, in order {#lessons}

The main page says what each lesson teaches and what it changes from the one before. Each page
below is the sample's README followed, where it has one, by **The code**: its key parts, shown
from the source files themselves.

${lessons}")
