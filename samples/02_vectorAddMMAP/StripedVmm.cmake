# The striped VMM range of 02_vectorAddMMAP as a library, so that 06_perDeviceResource can reuse
# it as a resource kind by including this file, also when configured on its own:
#   include(${CMAKE_CURRENT_LIST_DIR}/../02_vectorAddMMAP/StripedVmm.cmake)
#   target_link_libraries(<target> PRIVATE vectorAddMMAP_vmm)
#
#   striped_vmm.cpp  the technique: mapStripedRange, unmapStripedRange, StripedVmmRange, planStripes
#   run_plan.cpp     the devices (roles, topology, granularity) and the size of a run
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/MemorySamples.cmake)

if(NOT TARGET vectorAddMMAP_vmm)
  add_library(vectorAddMMAP_vmm STATIC "${CMAKE_CURRENT_LIST_DIR}/striped_vmm.cpp"
                                       "${CMAKE_CURRENT_LIST_DIR}/run_plan.cpp")
  target_include_directories(vectorAddMMAP_vmm PUBLIC "${CMAKE_CURRENT_LIST_DIR}")
  target_link_libraries(vectorAddMMAP_vmm PUBLIC memsamples::common)
  memsamples_warnings(vectorAddMMAP_vmm)
endif()
