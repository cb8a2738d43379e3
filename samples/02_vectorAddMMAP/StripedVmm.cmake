# The striped VMM allocator of 02_vectorAddMMAP as two libraries, so that other samples can reuse
# it (05_p2pMemMap, 06_perDeviceResource) by including this file, also when they are configured
# on their own:
#   include(${CMAKE_CURRENT_LIST_DIR}/../02_vectorAddMMAP/StripedVmm.cmake)
#   target_link_libraries(<target> PRIVATE vectorAddMMAP_vmm)
#
#   vectorAddMMAP_logic  CUDA-free: planStripes, device roles, fault injection, the build-with-
#                        rollback algorithm against an abstract driver (unit tested on any machine)
#   vectorAddMMAP_vmm    the real driver: StripedVmmRange, granularity and topology queries
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/MemorySamples.cmake)

if(NOT TARGET vectorAddMMAP_logic)
  add_library(vectorAddMMAP_logic STATIC "${CMAKE_CURRENT_LIST_DIR}/striped_vmm_logic.cpp")
  target_include_directories(vectorAddMMAP_logic PUBLIC "${CMAKE_CURRENT_LIST_DIR}")
  # memsamples::core brings cuda.h (types only) and the error classes; no libcuda.
  target_link_libraries(vectorAddMMAP_logic PUBLIC memsamples::core)
  memsamples_warnings(vectorAddMMAP_logic)

  add_library(vectorAddMMAP_vmm STATIC "${CMAKE_CURRENT_LIST_DIR}/striped_vmm.cpp")
  target_link_libraries(vectorAddMMAP_vmm PUBLIC vectorAddMMAP_logic memsamples::common)
  memsamples_warnings(vectorAddMMAP_vmm)
endif()
