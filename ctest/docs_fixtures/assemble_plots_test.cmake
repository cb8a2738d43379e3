# docs.assemblePlots: docs/assemble_pages.cmake puts the pictures and plots on the pages.
#   cmake -DSCRATCH=<dir> -P assemble_plots_test.cmake
# On a made-up project (written here, in SCRATCH) with a sample 01_demo, its course-page tail and
# a main page:
# - a line `![alt](../../docs/images/NAME.svg)` (from docs/samples `../images/`, from the main
#   page `images/`) becomes `\image html picture_NAME.svg "alt"`;
# - a line `![alt](../../docs/images/plots/01_demo.svg)` becomes `\image html 01_demo.svg
#   "caption"` from the committed docs/images/plots/01_demo.svg and its caption 01_demo.txt
#   (double quotes become single ones), or from PLOTS_DIR when given;
# - each SVG is copied to PAGES_DIR/images under that name, so a picture and a plot of one name do
#   not collide; a picture at a URL is left to Doxygen;
# - a plot or a picture that is not committed stops it, naming the file and how to draw a plot.
cmake_minimum_required(VERSION 3.25)
set(assemble "${CMAKE_CURRENT_LIST_DIR}/../../docs/assemble_pages.cmake")
file(REMOVE_RECURSE "${SCRATCH}")
set(root "${SCRATCH}/root")
set(pages "${SCRATCH}/pages")
file(WRITE "${root}/samples/01_demo/README.md"
     "# 01_demo — a fixture page\n\n![A \"demo\" picture](../../docs/images/01_demo.svg)\n\n"
     "## Run it\n```\nmade-up output\n```\n\n![The plot](../../docs/images/plots/01_demo.svg)\n\n"
     "Text after the plot.\n![A picture elsewhere](https://example.com/x.svg)\n")
file(WRITE "${root}/docs/samples/01_demo.md" "## The code\n![Tail picture](../images/tail.svg)\n")
file(WRITE "${root}/docs/mainpage.md" "# Main {#mainpage}\n\n![Where memory lives](images/map.svg)\n")
foreach(picture 01_demo tail map)
  file(WRITE "${root}/docs/images/${picture}.svg" "<svg xmlns=\"http://www.w3.org/2000/svg\"><!-- ${picture} --></svg>\n")
endforeach()
file(WRITE "${root}/docs/images/plots/01_demo.svg" "<svg xmlns=\"http://www.w3.org/2000/svg\"><!-- plot --></svg>\n")
file(WRITE "${root}/docs/images/plots/01_demo.txt" "What it \"shows\". Data: fixture.\n")
file(MAKE_DIRECTORY "${SCRATCH}/empty")

function(assemble result_var output_var)
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DMEMSAMPLES_ROOT=${root}" "-DPAGES_DIR=${pages}"
                          ${ARGN} -P "${assemble}"
                  RESULT_VARIABLE result ERROR_VARIABLE output OUTPUT_VARIABLE output)
  set(${result_var} "${result}" PARENT_SCOPE)
  string(REGEX REPLACE "[ \n]+" " " output "${output}")  # CMake wraps its messages
  set(${output_var} "${output}" PARENT_SCOPE)
endfunction()

function(expect_in file text what)
  file(READ "${file}" page)
  string(FIND "${page}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: ${file} lacks `${text}`:\n${page}")
  endif()
endfunction()

function(expect_same_file staged original)
  file(READ "${pages}/images/${staged}" a)
  file(READ "${original}" b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "${pages}/images/${staged} is not a copy of ${original}")
  endif()
endfunction()

assemble(result output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "assembling failed:\n${output}")
endif()
set(page "${pages}/01_demo.md")
expect_in("${page}" "\n\\image html picture_01_demo.svg \"A 'demo' picture\"\n\n## Run it" "picture")
expect_in("${page}" "```\n\n\\image html 01_demo.svg \"What it 'shows'. Data: fixture.\"\n\nText after"
          "plot link")
expect_in("${page}" "Text after the plot.\n![A picture elsewhere](https://example.com/x.svg)\n"
          "a picture at a URL")
expect_in("${page}" "## The code\n\\image html picture_tail.svg \"Tail picture\"\n" "tail picture")
expect_in("${pages}/mainpage.md" "\n\\image html picture_map.svg \"Where memory lives\"\n" "main page")
expect_same_file(picture_01_demo.svg "${root}/docs/images/01_demo.svg")
expect_same_file(01_demo.svg "${root}/docs/images/plots/01_demo.svg")
expect_same_file(picture_tail.svg "${root}/docs/images/tail.svg")
expect_same_file(picture_map.svg "${root}/docs/images/map.svg")

# PLOTS_DIR given: the plot comes from there.
file(WRITE "${SCRATCH}/plots/01_demo.svg" "<svg xmlns=\"http://www.w3.org/2000/svg\"><!-- other --></svg>\n")
file(WRITE "${SCRATCH}/plots/01_demo.txt" "Another caption.\n")
assemble(result output "-DPLOTS_DIR=${SCRATCH}/plots")
expect_in("${page}" "```\n\n\\image html 01_demo.svg \"Another caption.\"\n\nText after" "PLOTS_DIR")

# A plot that is not there stops it, saying how to draw it.
assemble(result output "-DPLOTS_DIR=${SCRATCH}/empty")
string(FIND "${output}" "a page shows the plot 01_demo, but ${SCRATCH}/empty has no 01_demo.svg" at)
string(FIND "${output}" "python3 docs/plots/plot_data.py --data docs/data --out docs/images/plots" how)
if(result EQUAL 0 OR at EQUAL -1 OR how EQUAL -1)
  message(FATAL_ERROR "a missing plot: expected a failure naming it, got (${result}):\n${output}")
endif()

# A picture that is not committed stops it, naming the README and the file.
file(REMOVE "${root}/docs/images/01_demo.svg")
assemble(result output)
string(FIND "${output}" "01_demo/README.md (or docs/samples/01_demo.md): `![A \"demo\" picture](../../docs/images/01_demo.svg)` shows ${root}/docs/images/01_demo.svg, which does not exist" at)
if(result EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "a missing picture: expected a failure naming it, got (${result}):\n${output}")
endif()
file(REMOVE_RECURSE "${SCRATCH}")
message(STATUS "assemble_pages.cmake: pictures and plots placed under names of their own, with "
               "their captions; a missing one stops it")
