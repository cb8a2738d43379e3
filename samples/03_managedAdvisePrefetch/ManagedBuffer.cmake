# The managed-memory pieces of 03_managedAdvisePrefetch as two libraries, so that other samples can
# reuse ManagedBuffer (06_perDeviceResource) by including this file, also when configured alone:
#   include(${CMAKE_CURRENT_LIST_DIR}/../03_managedAdvisePrefetch/ManagedBuffer.cmake)
#   target_link_libraries(<target> PRIVATE managedAdvisePrefetch_buffer)
#
#   managedAdvisePrefetch_logic   CUDA-free: 03's rules (support, sizes, the advice table, batch
#                                 validation, attribute expectations, chunking) and ManagedBuffer's
#                                 guard and budget (unit tested on any machine)
#   managedAdvisePrefetch_buffer  the real driver: ManagedBuffer (cuMemAllocManaged / cuMemFree)
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/MemorySamples.cmake)

if(NOT TARGET managedAdvisePrefetch_logic)
  add_library(managedAdvisePrefetch_logic STATIC "${CMAKE_CURRENT_LIST_DIR}/managed_logic.cpp")
  target_include_directories(managedAdvisePrefetch_logic PUBLIC "${CMAKE_CURRENT_LIST_DIR}")
  target_link_libraries(managedAdvisePrefetch_logic PUBLIC memsamples::core)
  memsamples_warnings(managedAdvisePrefetch_logic)

  add_library(managedAdvisePrefetch_buffer STATIC "${CMAKE_CURRENT_LIST_DIR}/managed_buffer.cpp")
  target_link_libraries(managedAdvisePrefetch_buffer
                        PUBLIC managedAdvisePrefetch_logic memsamples::common)
  memsamples_warnings(managedAdvisePrefetch_buffer)
endif()
