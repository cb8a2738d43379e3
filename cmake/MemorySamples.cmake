# Build support shared by the top-level project and by every sample configured on its own
# (`cmake -S samples/01_vectorAddDrv -B build-01`). Including it twice is harmless.
#
# It provides:
#   memsamples_add_fatbin(<kernel> [MIN_ARCHITECTURE <n>])
#                                              kernels/<kernel>.cu -> bin/<kernel>.fatbin
#   memsamples_add_sample(<name> SOURCES ... [KERNELS ...] [LIBRARIES ...])
#                                              (and its CPU test oldDriver.<name>)
#   memsamples_add_gpu_test(<test> TARGET <exe> [ARGS ...] [LABELS ...])
#   memsamples_add_usage_error_test(<test> TARGET <exe> ARGS ... MESSAGE <regex> [RUNTIME_ERROR]
#                                   [ALLOW_WAIVER] [LABELS ...])
#   memsamples_add_driver_test(<test> DRIVER <OLD_MAJOR|SAME_MAJOR> TARGET <exe> EXPECTED <regex>
#                              [EXIT_CODE <n>] [ARGS ...] [ENVIRONMENT <VAR=value>])
# and the targets memsamples::core (CUDA-free helpers, unit-testable on any machine),
# memsamples::common (core + CUDA driver helpers), memsamples_weak_driver (the weak driver imports,
# see below), memsamples_gpu_launcher and the stand-in drivers of ctest/old_driver.
include_guard(GLOBAL)

get_filename_component(MEMSAMPLES_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
include("${MEMSAMPLES_ROOT}/ctest/machine_waiver.cmake")  # MEMSAMPLES_MACHINE_WAIVER

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

# CI (which sets CI=true) treats every compiler warning as an error; people building the samples
# on other compilers are not stopped by a new warning.
if(DEFINED ENV{CI} AND NOT DEFINED CMAKE_COMPILE_WARNING_AS_ERROR)
  set(CMAKE_COMPILE_WARNING_AS_ERROR ON)
endif()

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)

include(GNUInstallDirs)
# Executables and the fatbins they load share one folder, so a sample finds its kernels next to
# itself in the build tree exactly as it does after `cmake --install`.
if(NOT CMAKE_RUNTIME_OUTPUT_DIRECTORY)
  set(CMAKE_RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin")
endif()
set(MEMSAMPLES_FATBIN_INSTALL_DIR "${CMAKE_INSTALL_DATADIR}/cuda-memory-samples"
    CACHE STRING "Install folder of the .fatbin files, relative to the prefix")
if(IS_ABSOLUTE "${MEMSAMPLES_FATBIN_INSTALL_DIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}")
  message(FATAL_ERROR "MEMSAMPLES_FATBIN_INSTALL_DIR and CMAKE_INSTALL_BINDIR must be relative "
                      "to the prefix, so that an installed sample can find its fatbins")
endif()
# The samples look for their fatbins relative to their own folder once installed.
cmake_path(RELATIVE_PATH MEMSAMPLES_FATBIN_INSTALL_DIR BASE_DIRECTORY "${CMAKE_INSTALL_BINDIR}"
           OUTPUT_VARIABLE MEMSAMPLES_FATBIN_FROM_BINDIR)

find_package(CUDAToolkit REQUIRED)

# The CUDA language is never enabled (host code is plain C++; kernels go through nvcc below), so
# CMake does not replace an unset CMAKE_CUDA_ARCHITECTURES with a compiler default: an unset or
# empty value means our default list, anything the user gives wins.
if(NOT CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "75;80;86;87;89;90;100;110;120"
      CACHE STRING "GPU architectures for the kernels (also native, all, all-major)" FORCE)
endif()

# Turns CMAKE_CUDA_ARCHITECTURES into nvcc flags: SASS for every listed architecture and PTX for
# the newest one only, so that a future GPU can JIT-compile the kernels. Entries ending in -real
# (SASS only) or -virtual (PTX only) are honoured as CMake documents them.
function(_memsamples_nvcc_arch_flags out_var archs)
  if(archs MATCHES "^(native|all|all-major)$")
    set(${out_var} "-arch=${archs}" PARENT_SCOPE)
    return()
  endif()
  set(flags "")
  set(newest "")
  set(newest_number 0)
  set(explicit_ptx FALSE)
  foreach(arch IN LISTS archs)
    if(NOT arch MATCHES "^([0-9]+)([a-z]?)(-real|-virtual)?$")
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES: cannot read '${arch}' "
                          "(expected e.g. 90, 90a, 90-real, 90-virtual, native)")
    endif()
    set(number "${CMAKE_MATCH_1}")
    set(name "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
    if(CMAKE_MATCH_3 STREQUAL "-virtual")
      list(APPEND flags "-gencode=arch=compute_${name},code=compute_${name}")
      set(explicit_ptx TRUE)
      continue()
    endif()
    list(APPEND flags "-gencode=arch=compute_${name},code=sm_${name}")
    # PTX of an arch-specific target (90a, 100a) runs only on that chip: the forward-compatible
    # PTX is the plain compute_<number>.
    if(NOT CMAKE_MATCH_3 STREQUAL "-real" AND number GREATER_EQUAL newest_number)
      set(newest_number ${number})
      set(newest ${number})
    endif()
  endforeach()
  if(NOT explicit_ptx AND newest)
    list(APPEND flags "-gencode=arch=compute_${newest},code=compute_${newest}")
  endif()
  set(${out_var} "${flags}" PARENT_SCOPE)
endfunction()

# The entries of CMAKE_CUDA_ARCHITECTURES that are @p minimum or newer (90a and 90-real count as
# 90), for kernels that use instructions older GPUs lack. When none is left, the list is just
# @p minimum, and configure says so: those kernels are then built for the oldest GPU that can run
# them. native, all and all-major are kept as they are (nvcc expands them); such kernels guard
# their bodies with __CUDA_ARCH__ so that they still compile for older GPUs there.
function(_memsamples_archs_from out_var minimum kernel)
  set(archs ${CMAKE_CUDA_ARCHITECTURES})
  if(archs MATCHES "^(native|all|all-major)$")
    set(${out_var} "${archs}" PARENT_SCOPE)
    return()
  endif()
  set(kept "")
  foreach(arch IN LISTS archs)
    if(arch MATCHES "^([0-9]+)" AND CMAKE_MATCH_1 GREATER_EQUAL minimum)
      list(APPEND kept "${arch}")
    endif()
  endforeach()
  if(NOT kept)
    message(STATUS "${kernel}.fatbin needs sm_${minimum} or newer, which CMAKE_CUDA_ARCHITECTURES "
                   "(${archs}) does not list: building it for ${minimum}")
    set(kept "${minimum}")
  endif()
  set(${out_var} "${kept}" PARENT_SCOPE)
endfunction()

# memsamples_add_fatbin(<kernel> [MIN_ARCHITECTURE <n>]): compiles kernels/<kernel>.cu into
# <kernel>.fatbin next to the executables and installs it. Target: memsamples_fatbin_<kernel>.
# Safe to call from many samples (the first call decides). With MIN_ARCHITECTURE, only the
# entries of CMAKE_CUDA_ARCHITECTURES from that architecture on are built (e.g. 90 for the
# multimem instructions of multicast_kernel.cu); the other kernels keep the whole list.
function(memsamples_add_fatbin kernel)
  if(TARGET memsamples_fatbin_${kernel})
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MIN_ARCHITECTURE" "")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "memsamples_add_fatbin: unexpected arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(DEFINED arg_MIN_ARCHITECTURE)
    if(NOT arg_MIN_ARCHITECTURE MATCHES "^[0-9]+$")
      message(FATAL_ERROR "memsamples_add_fatbin: MIN_ARCHITECTURE must be a number such as 90")
    endif()
    _memsamples_archs_from(archs ${arg_MIN_ARCHITECTURE} ${kernel})
  else()
    set(archs ${CMAKE_CUDA_ARCHITECTURES})
  endif()
  set(source "${MEMSAMPLES_ROOT}/kernels/${kernel}.cu")
  if(NOT EXISTS "${source}")
    message(FATAL_ERROR "memsamples_add_fatbin: ${source} does not exist")
  endif()
  set(output "${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${kernel}.fatbin")
  _memsamples_nvcc_arch_flags(arch_flags "${archs}")
  # A file that changes when the architecture list does, so that the fatbin is rebuilt then.
  set(stamp "${CMAKE_CURRENT_BINARY_DIR}/${kernel}.fatbin.flags")
  file(CONFIGURE OUTPUT "${stamp}" CONTENT "${arch_flags}\n")
  add_custom_command(
    OUTPUT "${output}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${CMAKE_RUNTIME_OUTPUT_DIRECTORY}"
    COMMAND "${CUDAToolkit_NVCC_EXECUTABLE}" -fatbin -std=c++17 -O3 -lineinfo ${arch_flags}
            -o "${output}" "${source}"
    DEPENDS "${source}" "${stamp}"
    COMMENT "Building ${kernel}.fatbin (${archs})"
    VERBATIM)
  add_custom_target(memsamples_fatbin_${kernel} ALL DEPENDS "${output}")
  install(FILES "${output}" DESTINATION "${MEMSAMPLES_FATBIN_INSTALL_DIR}")
endfunction()

# Sanitizers, e.g. -DMEMSAMPLES_SANITIZE=address,undefined or thread (see the sanitize and tsan
# presets). They apply to every target so that the libraries and their users agree; the CPU unit
# tests are what CI runs this way.
set(MEMSAMPLES_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list for all C++ code")
if(MEMSAMPLES_SANITIZE)
  add_compile_options(-fsanitize=${MEMSAMPLES_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${MEMSAMPLES_SANITIZE})
endif()

# The test tools (the GPU test launcher, the stand-in drivers of ctest/old_driver, the fatbin
# probe) are built by default only in the top-level build, which runs the tests. A sample
# configured on its own (`cmake -S samples/NN -B build-NN`) builds the sample and what it needs;
# its tests are still registered, and -DMEMSAMPLES_TEST_TOOLS=ON (or building the target
# memsamples_test_tools) builds what they run on.
if(CMAKE_SOURCE_DIR STREQUAL MEMSAMPLES_ROOT)
  set(_memsamples_tools_default ON)
else()
  set(_memsamples_tools_default OFF)
endif()
option(MEMSAMPLES_TEST_TOOLS "Build the GPU test launcher and the stand-in drivers with 'all'"
       ${_memsamples_tools_default})
if(NOT MEMSAMPLES_TEST_TOOLS)
  message(STATUS "The test tools are left out of this build: before ctest, build them with "
                 "'cmake --build <dir> --target memsamples_test_tools' (or configure with "
                 "-DMEMSAMPLES_TEST_TOOLS=ON)")
endif()

# Leaves @p target out of `all` unless MEMSAMPLES_TEST_TOOLS, and makes memsamples_test_tools
# build it.
function(_memsamples_test_tool target)
  if(NOT MEMSAMPLES_TEST_TOOLS)
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL TRUE)
  endif()
  if(NOT TARGET memsamples_test_tools)
    add_custom_target(memsamples_test_tools)
  endif()
  add_dependencies(memsamples_test_tools ${target})
endfunction()

function(memsamples_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                             -Wno-sign-conversion)
  endif()
endfunction()

# The Common helper: one header for lessons (Common/memsamples.hpp) and its support headers
# (Common/support/), two libraries so that the CUDA-free half can be unit tested on machines
# without a driver.
if(NOT TARGET memsamples_core)
  # Every file of every target that uses Common is compiled with Common/support/weak_driver.hpp
  # included first (-include): the driver entry points a driver older than the toolkit lacks are
  # then weak imports in every object file, as the linker requires for the import to stay weak,
  # so an old driver is waived by the sample instead of refused by the loader (LD_BIND_NOW, `-z
  # now`). No lesson has to include it; the oldDriver.* tests check the imports of every sample.
  add_library(memsamples_weak_driver INTERFACE)
  target_compile_options(memsamples_weak_driver INTERFACE
    "SHELL:-include \"${MEMSAMPLES_ROOT}/Common/support/weak_driver.hpp\"")
  target_link_libraries(memsamples_weak_driver INTERFACE CUDA::toolkit)

  add_library(memsamples_core STATIC
    "${MEMSAMPLES_ROOT}/Common/memsamples_core.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/byte_ranges.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/checklist.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/cli.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/device_matrix.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/devices.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/fatbin.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/host_memory.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/json.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/numa_node_info.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/numa_sysfs.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/text_format.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/timing.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/vector_add.cpp"
    "${MEMSAMPLES_ROOT}/Common/support/word_pattern.cpp")
  target_include_directories(memsamples_core PUBLIC "${MEMSAMPLES_ROOT}/Common")
  # cuda.h is needed for its types only; nothing here calls into libcuda.
  target_link_libraries(memsamples_core PUBLIC CUDA::toolkit memsamples_weak_driver)
  target_compile_definitions(memsamples_core
    PRIVATE MEMSAMPLES_FATBIN_FROM_BINDIR="${MEMSAMPLES_FATBIN_FROM_BINDIR}")
  memsamples_warnings(memsamples_core)
  add_library(memsamples::core ALIAS memsamples_core)

  # check() and describeResult() on their own, without libcuda: a unit test links a sample's
  # driver code with them against fake cu* functions (a link seam, see ctest/unit/vectorAddMMAP).
  add_library(memsamples_check STATIC "${MEMSAMPLES_ROOT}/Common/memsamples_check.cpp")
  target_link_libraries(memsamples_check PUBLIC memsamples_core)
  memsamples_warnings(memsamples_check)

  add_library(memsamples_common STATIC "${MEMSAMPLES_ROOT}/Common/memsamples_cuda.cpp")
  target_sources(memsamples_common PRIVATE "${MEMSAMPLES_ROOT}/Common/support/stage_timer.cpp")
  target_sources(memsamples_common PRIVATE "${MEMSAMPLES_ROOT}/Common/support/peer_topology.cpp")
  target_link_libraries(memsamples_common PUBLIC memsamples_check CUDA::cuda_driver)
  memsamples_warnings(memsamples_common)
  add_library(memsamples::common ALIAS memsamples_common)

  # Runs a GPU sample only when libcuda.so.1 can be loaded; otherwise reports WAIVED (exit 2) so
  # that CTest shows the test as Skipped with the reason instead of failing to start it.
  add_executable(memsamples_gpu_launcher "${MEMSAMPLES_ROOT}/ctest/gpu_test_launcher.cpp")
  set_target_properties(memsamples_gpu_launcher PROPERTIES
                        RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/ctest")
  target_link_libraries(memsamples_gpu_launcher PRIVATE ${CMAKE_DL_LIBS})
  memsamples_warnings(memsamples_gpu_launcher)
  _memsamples_test_tool(memsamples_gpu_launcher)

  # A stand-in libcuda.so.1 <target> of ctest/old_driver that reports CUDA <version>, built from
  # old_libcuda.cpp and <sources>, in a folder of its own (ctest/<folder>) so that pointing
  # LD_LIBRARY_PATH there replaces the real driver for one test only.
  function(_memsamples_add_stand_in_driver target folder version)
    add_library(${target} SHARED "${MEMSAMPLES_ROOT}/ctest/old_driver/old_libcuda.cpp" ${ARGN})
    target_include_directories(${target} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
    target_compile_definitions(${target} PRIVATE MEMSAMPLES_OLD_DRIVER_VERSION=${version})
    set_target_properties(${target} PROPERTIES
                          OUTPUT_NAME cuda SOVERSION 1
                          LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/ctest/${folder}")
    memsamples_warnings(${target})
    _memsamples_test_tool(${target})
  endfunction()

  # The driver of CUDA 12.4, an older major version than the toolkit's: every sample waives.
  set(MEMSAMPLES_OLD_DRIVER_VERSION 12040)
  _memsamples_add_stand_in_driver(memsamples_old_driver old_driver
                                  ${MEMSAMPLES_OLD_DRIVER_VERSION})

  # The libcuda.so.1 of a driver of the toolkit's major version but, where there is one, an older
  # minor version (13.0 for a 13.2 toolkit; 13.0 itself for 13.0), with fake devices and without
  # the newer entry points: NVIDIA's minor version compatibility runs the samples on it, and
  # memsamples_add_driver_test(... DRIVER SAME_MAJOR ...) shows what they do there.
  if(CUDAToolkit_VERSION_MINOR GREATER 0)
    math(EXPR same_major_version
         "${CUDAToolkit_VERSION_MAJOR} * 1000 + (${CUDAToolkit_VERSION_MINOR} - 1) * 10")
  else()
    math(EXPR same_major_version "${CUDAToolkit_VERSION_MAJOR} * 1000")
  endif()
  set(MEMSAMPLES_SAME_MAJOR_DRIVER_VERSION ${same_major_version} CACHE STRING
      "The CUDA version (1000 x major + 10 x minor) of the stand-in same-major driver")
  _memsamples_add_stand_in_driver(memsamples_same_major_driver same_major_driver
    ${MEMSAMPLES_SAME_MAJOR_DRIVER_VERSION}
    "${MEMSAMPLES_ROOT}/ctest/old_driver/same_major_libcuda.cpp")

  # Prints where locateFatbin() finds a fatbin: the same lookup as the samples, without the
  # driver, so that the install and symlink cases are tested on machines without a GPU too.
  add_executable(memsamples_fatbin_probe "${MEMSAMPLES_ROOT}/ctest/fatbin_probe.cpp")
  target_link_libraries(memsamples_fatbin_probe PRIVATE memsamples::core)
  memsamples_warnings(memsamples_fatbin_probe)
  _memsamples_test_tool(memsamples_fatbin_probe)
  if(MEMSAMPLES_TEST_TOOLS)
    install(TARGETS memsamples_fatbin_probe RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  endif()
endif()

# memsamples_add_sample(<name> SOURCES <files...> [KERNELS <kernel>...] [LIBRARIES <libs>...])
function(memsamples_add_sample name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;KERNELS;LIBRARIES")
  add_executable(${name} ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE memsamples::common ${arg_LIBRARIES})
  # Every symbol bound at load time, as Ubuntu's toolchain does by default: then every build shows
  # that a driver older than the toolkit is waived, not refused by the loader before main.
  target_link_options(${name} PRIVATE LINKER:-z,now)
  memsamples_warnings(${name})
  foreach(kernel IN LISTS arg_KERNELS)
    memsamples_add_fatbin(${kernel})
    add_dependencies(${name} memsamples_fatbin_${kernel})
  endforeach()
  install(TARGETS ${name} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

  # A CPU test: against the old driver the sample must say WAIVED with both versions, exit 2.
  _memsamples_cuda_version_text(old_version ${MEMSAMPLES_OLD_DRIVER_VERSION})
  add_test(NAME oldDriver.${name}
           COMMAND "${CMAKE_COMMAND}" -DSAMPLE=$<TARGET_FILE:${name}>
                   -DLAUNCHER=$<TARGET_FILE:memsamples_gpu_launcher>
                   -DDRIVER_DIR=$<TARGET_FILE_DIR:memsamples_old_driver>
                   -DDRIVER_VERSION=${old_version}
                   -DBUILT_VERSION=${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR}
                   -DNM=${CMAKE_NM} -P "${MEMSAMPLES_ROOT}/ctest/old_driver/expect_waived.cmake")
  set_tests_properties(oldDriver.${name} PROPERTIES LABELS unit TIMEOUT 60)

  memsamples_add_try_tests(${name})
endfunction()

# memsamples_add_try_tests(<name>): every experiment of the `## Try this` section of the README.md
# beside the calling CMakeLists.txt, a bullet "- `./build/bin/<name> ARGS`: ...", becomes the GPU
# test <name>.try.<N> (labels gpu and try), run like every memsamples_add_gpu_test: Skipped on
# exit 2 (WAIVED), failed on any other status but 0. So no command a page suggests goes stale.
# The README is read at configure time, and editing it configures again. A command that runs
# another program or holds shell syntax stops the configure, naming the README line
# (ctest/lesson_shape/try_this.cmake reads the section). memsamples_add_sample() calls this.
function(memsamples_add_try_tests name)
  set(readme "${CMAKE_CURRENT_SOURCE_DIR}/README.md")
  if(NOT EXISTS "${readme}")
    return()
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${readme}")
  include("${MEMSAMPLES_ROOT}/ctest/lesson_shape/try_this.cmake")
  memsamples_read_try_this("${readme}" ${name} try)
  if(try_COUNT EQUAL 0)
    return()
  endif()
  foreach(i RANGE 1 ${try_COUNT})
    memsamples_add_gpu_test(${name}.try.${i} TARGET ${name} ARGS ${try_ARGS_${i}} LABELS try)
  endforeach()
endfunction()

# The arguments of a sample for a checker script (ctest/script_arguments.cmake): -DARG_COUNT=<n>
# and one -DARG<i> per argument, since a list in one -D would not survive CTest's quoting.
function(_memsamples_numbered_args out_var)
  list(LENGTH ARGN count)
  set(numbered "-DARG_COUNT=${count}")
  set(i 0)
  foreach(argument IN LISTS ARGN)
    list(APPEND numbered "-DARG${i}=${argument}")
    math(EXPR i "${i} + 1")
  endforeach()
  set(${out_var} "${numbered}" PARENT_SCOPE)
endfunction()

# 12040 -> "12.4", as NVIDIA writes a CUDA version.
function(_memsamples_cuda_version_text out_var version)
  math(EXPR major "${version} / 1000")
  math(EXPR minor "${version} % 1000 / 10")
  set(${out_var} "${major}.${minor}" PARENT_SCOPE)
endfunction()

# memsamples_add_driver_test(<test> DRIVER <OLD_MAJOR|SAME_MAJOR> TARGET <exe> EXPECTED <regex>
#                            [EXIT_CODE <n>] [ARGS <args>...] [ENVIRONMENT <VAR=value>])
# A CPU test (label unit): <exe>, run against a stand-in libcuda.so.1 of ctest/old_driver, must
# exit with EXIT_CODE (default 2, WAIVED) and print what EXPECTED matches. OLD_MAJOR is the driver
# of CUDA 12.4 (old_libcuda.cpp); SAME_MAJOR the one of the toolkit's major version
# (same_major_libcuda.cpp: fake devices, none of the newer entry points, compute modes from
# MEMSAMPLES_FAKE_COMPUTE_MODES in ENVIRONMENT). E.g. a sample that calls cuMemPrefetchBatchAsync:
#   memsamples_add_driver_test(managedAdvisePrefetch.entryPointMissing DRIVER SAME_MAJOR
#     TARGET managedAdvisePrefetch EXPECTED "WAIVED: the NVIDIA driver [(]CUDA [0-9.]+[)] has no cuMemPrefetchBatchAsync")
function(memsamples_add_driver_test test)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DRIVER;TARGET;EXPECTED;EXIT_CODE;ENVIRONMENT" "ARGS")
  if(NOT arg_DRIVER MATCHES "^(OLD_MAJOR|SAME_MAJOR)$" OR NOT arg_TARGET OR NOT arg_EXPECTED OR
     arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "memsamples_add_driver_test(${test}): DRIVER (OLD_MAJOR or SAME_MAJOR), "
                        "TARGET and EXPECTED are required; not understood: "
                        "'${arg_UNPARSED_ARGUMENTS}'")
  endif()
  if(NOT DEFINED arg_EXIT_CODE)
    set(arg_EXIT_CODE 2)
  endif()
  if(arg_DRIVER STREQUAL "OLD_MAJOR")
    set(driver memsamples_old_driver)
    _memsamples_cuda_version_text(driver_version ${MEMSAMPLES_OLD_DRIVER_VERSION})
  else()
    set(driver memsamples_same_major_driver)
    _memsamples_cuda_version_text(driver_version ${MEMSAMPLES_SAME_MAJOR_DRIVER_VERSION})
  endif()
  _memsamples_numbered_args(numbered_args ${arg_ARGS})
  add_test(NAME ${test}
           COMMAND "${CMAKE_COMMAND}" -DSAMPLE=$<TARGET_FILE:${arg_TARGET}>
                   -DLAUNCHER=$<TARGET_FILE:memsamples_gpu_launcher>
                   -DDRIVER_DIR=$<TARGET_FILE_DIR:${driver}> -DDRIVER_VERSION=${driver_version}
                   -DBUILT_VERSION=${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR}
                   "-DEXPECTED=${arg_EXPECTED}" -DEXIT_CODE=${arg_EXIT_CODE}
                   "-DENVIRONMENT=${arg_ENVIRONMENT}" ${numbered_args}
                   -P "${MEMSAMPLES_ROOT}/ctest/old_driver/expect_waived.cmake")
  set_tests_properties(${test} PROPERTIES LABELS unit TIMEOUT 60)
endfunction()

# memsamples_add_gpu_test(<test> TARGET <exe> [ARGS <args>...] [LABELS <labels>...])
# Exit code 2 (WAIVED) is reported by CTest as Skipped, never as passed.
function(memsamples_add_gpu_test test)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TARGET" "ARGS;LABELS")
  add_test(NAME ${test}
           COMMAND memsamples_gpu_launcher $<TARGET_FILE:${arg_TARGET}> ${arg_ARGS})
  set_tests_properties(${test} PROPERTIES SKIP_RETURN_CODE 2 LABELS "gpu;${arg_LABELS}"
                                          TIMEOUT 600)
endfunction()

# memsamples_add_usage_error_test(<test> TARGET <exe> ARGS <args>... MESSAGE <regex>
#                                 [RUNTIME_ERROR] [ALLOW_WAIVER] [LABELS <labels>...])
# Bad input: the sample must exit with 1, say MESSAGE and, as a usage error does, point to
# --help (ctest/expect_usage_error.cmake checks all three). RUNTIME_ERROR: an error the run finds
# ("<program>: error: ..."), not a usage error. Skipped, with the reason, only where this machine
# cannot run CUDA programs (MEMSAMPLES_MACHINE_WAIVER: no driver, no usable device, a driver of an
# older major version, a compute mode without contexts); a sample that waives bad input instead of
# refusing it fails, unless ALLOW_WAIVER (input that only this machine's capabilities can judge,
# checked after them).
# Labels: gpu, usageError and LABELS.
function(memsamples_add_usage_error_test test)
  cmake_parse_arguments(PARSE_ARGV 1 arg "RUNTIME_ERROR;ALLOW_WAIVER" "TARGET;MESSAGE"
                        "ARGS;LABELS")
  if(NOT arg_TARGET OR NOT arg_MESSAGE OR arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "memsamples_add_usage_error_test(${test}): TARGET and MESSAGE are "
                        "required; not understood: '${arg_UNPARSED_ARGUMENTS}'")
  endif()
  _memsamples_numbered_args(numbered_args ${arg_ARGS})
  set(skip "${MEMSAMPLES_MACHINE_WAIVER}")
  if(arg_ALLOW_WAIVER)
    set(skip "WAIVED: ")
  endif()
  add_test(NAME ${test}
           COMMAND "${CMAKE_COMMAND}" -DLAUNCHER=$<TARGET_FILE:memsamples_gpu_launcher>
                   -DSAMPLE=$<TARGET_FILE:${arg_TARGET}> ${numbered_args}
                   "-DMESSAGE=${arg_MESSAGE}" -DRUNTIME_ERROR=${arg_RUNTIME_ERROR}
                   -DALLOW_WAIVER=${arg_ALLOW_WAIVER}
                   -P "${MEMSAMPLES_ROOT}/ctest/expect_usage_error.cmake")
  # Label usageError: bad input is refused before any GPU work, so CI runs these against the
  # stand-in driver of the toolkit's major version, where they must pass, not be Skipped.
  set_tests_properties(${test} PROPERTIES LABELS "gpu;usageError;${arg_LABELS}" TIMEOUT 120
                       SKIP_REGULAR_EXPRESSION "${skip}")
endfunction()
