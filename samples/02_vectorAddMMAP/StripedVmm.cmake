# The striped VMM range of 02_vectorAddMMAP as libraries, so that 06_perDeviceResource can reuse
# it as a resource kind by including this file, also when configured on its own:
#   include(${CMAKE_CURRENT_LIST_DIR}/../02_vectorAddMMAP/StripedVmm.cmake)
#   target_link_libraries(<target> PRIVATE vectorAddMMAP_vmm)
#
#   vectorAddMMAP_roles  device_roles.cpp: which devices back and map a range (no driver calls)
#   vectorAddMMAP_vmm    striped_vmm.cpp: planStripes, mapStripedRange, StripedVmmRange, queries
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/MemorySamples.cmake)

if(NOT TARGET vectorAddMMAP_roles)
  add_library(vectorAddMMAP_roles STATIC "${CMAKE_CURRENT_LIST_DIR}/device_roles.cpp")
  target_include_directories(vectorAddMMAP_roles PUBLIC "${CMAKE_CURRENT_LIST_DIR}")
  target_link_libraries(vectorAddMMAP_roles PUBLIC memsamples::core)
  memsamples_warnings(vectorAddMMAP_roles)

  add_library(vectorAddMMAP_vmm STATIC "${CMAKE_CURRENT_LIST_DIR}/striped_vmm.cpp")
  target_link_libraries(vectorAddMMAP_vmm PUBLIC vectorAddMMAP_roles memsamples::common)
  memsamples_warnings(vectorAddMMAP_vmm)
endif()
