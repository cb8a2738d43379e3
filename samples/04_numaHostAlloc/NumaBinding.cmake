# 04_numaHostAlloc's NUMA binding library, numaHostAlloc_logic (the node, the mode, what an errno
# means, the placement report, the bound range; no CUDA call), for this sample and for others that
# reuse it (06_perDeviceResource), also when they are configured on their own:
#   include(${CMAKE_CURRENT_LIST_DIR}/../04_numaHostAlloc/NumaBinding.cmake)
#   if(TARGET numaHostAlloc_logic) ... endif()
# Without libnuma the target is not defined; each user says what it leaves out.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/MemorySamples.cmake)

find_path(NUMA_INCLUDE_DIR numa.h DOC "Folder of libnuma's numa.h")
find_library(NUMA_LIBRARY numa DOC "libnuma")
if(EXISTS "${NUMA_INCLUDE_DIR}/numa.h" AND EXISTS "${NUMA_LIBRARY}")
  add_library(numaHostAlloc_logic STATIC "${CMAKE_CURRENT_LIST_DIR}/numa_binding.cpp")
  target_include_directories(numaHostAlloc_logic PUBLIC "${CMAKE_CURRENT_LIST_DIR}"
                                                        "${NUMA_INCLUDE_DIR}")
  target_link_libraries(numaHostAlloc_logic PUBLIC memsamples::core "${NUMA_LIBRARY}")
  memsamples_warnings(numaHostAlloc_logic)
endif()
