# docs.assemblePlots: docs/assemble_pages.cmake puts the plots on the pages.
#   cmake -DSCRATCH=<dir> -P assemble_plots_test.cmake
# On a made-up sample (written here, in SCRATCH) whose README shows `<!-- plot: 01_demo -->`:
# - with PLOTS_DIR holding 01_demo.svg and its caption 01_demo.txt, the line becomes
#   `\image html 01_demo.svg "caption"` (the caption's double quotes become single ones);
# - without PLOTS_DIR (no matplotlib), it becomes a sentence saying the plot is left out;
# - with PLOTS_DIR lacking the plot, assembling fails naming it.
cmake_minimum_required(VERSION 3.25)
set(assemble "${CMAKE_CURRENT_LIST_DIR}/../../docs/assemble_pages.cmake")
file(REMOVE_RECURSE "${SCRATCH}")
file(WRITE "${SCRATCH}/root/samples/01_demo/README.md"
     "# 01_demo — a fixture page\n\n## Run it\n```\nmade-up output\n```\n\n"
     "<!-- plot: 01_demo -->\n\nText after the plot.\n")
file(WRITE "${SCRATCH}/plots/01_demo.svg" "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n")
file(WRITE "${SCRATCH}/plots/01_demo.txt" "What it \"shows\". Data: fixture.\n")
file(MAKE_DIRECTORY "${SCRATCH}/empty")

function(assemble plots result_var page_var output_var)
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DMEMSAMPLES_ROOT=${SCRATCH}/root"
                          "-DPAGES_DIR=${SCRATCH}/pages" "-DPLOTS_DIR=${plots}" -P "${assemble}"
                  RESULT_VARIABLE result ERROR_VARIABLE output OUTPUT_VARIABLE output)
  set(page "")
  if(EXISTS "${SCRATCH}/pages/01_demo.md")
    file(READ "${SCRATCH}/pages/01_demo.md" page)
  endif()
  set(${result_var} "${result}" PARENT_SCOPE)
  set(${page_var} "${page}" PARENT_SCOPE)
  string(REGEX REPLACE "[ \n]+" " " output "${output}")  # CMake wraps its messages
  set(${output_var} "${output}" PARENT_SCOPE)
endfunction()

function(expect_in page text what)
  string(FIND "${page}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: the page lacks `${text}`:\n${page}")
  endif()
endfunction()

assemble("${SCRATCH}/plots" result page output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "with the plot: assembling failed:\n${output}")
endif()
expect_in("${page}" "```\n\n\\image html 01_demo.svg \"What it 'shows'. Data: fixture.\"\n\nText after"
          "with the plot")

assemble("" result page output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "without plots: assembling failed:\n${output}")
endif()
expect_in("${page}" "\n<em>(The plot 01_demo is left out of this build" "without plots")

assemble("${SCRATCH}/empty" result page output)
string(FIND "${output}" "a page shows the plot 01_demo, which docs/plots/plot_data.py did not draw" at)
if(result EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "a missing plot: expected a failure naming it, got (${result}):\n${output}")
endif()
file(REMOVE_RECURSE "${SCRATCH}")
message(STATUS "assemble_pages.cmake: plots placed with their captions, a left-out one said, a missing one stops it")
