/**
 * @file release_proof.cpp
 * @brief The memMapIPC parent's decision that a path's memory is released (see
 *        release_proof.hpp).
 */
#include "release_proof.hpp"

#include <sstream>

namespace memsamples::ipc {

// [release-decision]
std::vector<std::string> releaseProblems(const ReleaseEvidence& evidence) {
  const auto holds = [](const AddressAnswer& answer, CUdeviceptr pointer) {
    return answer.result == CUDA_SUCCESS && answer.base <= pointer &&
           pointer - answer.base < answer.size;
  };
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < evidence.allocations.size(); ++i) {
    const AllocationProbe& probe = evidence.allocations[i];
    std::ostringstream name;
    name << "allocation " << i << " (0x" << std::hex << probe.pointer << ")";
    const CUresult after = probe.after.result;
    if (!holds(probe.before, probe.pointer)) {
      problems.push_back(name.str() + ": cuMemGetAddressRange did not find it even before its " +
                         "release (CUresult " + std::to_string(probe.before.result) +
                         "), so its release cannot be proved");
    } else if (holds(probe.after, probe.pointer)) {
      problems.push_back(name.str() + ": cuMemGetAddressRange still finds it after the release");
    } else if (after != CUDA_SUCCESS && after != CUDA_ERROR_NOT_FOUND &&
               after != CUDA_ERROR_INVALID_VALUE) {
      problems.push_back(name.str() + ": cuMemGetAddressRange could not answer after the " +
                         "release (CUresult " + std::to_string(after) + "), so nothing is proved");
    }
  }
  if (evidence.poolBytesInUse && *evidence.poolBytesInUse != 0) {
    problems.push_back("the pool still counts " + std::to_string(*evidence.poolBytesInUse) +
                       " bytes in use (CU_MEMPOOL_ATTR_USED_MEM_CURRENT) after every free");
  }
  return problems;
}
// [release-decision]

}  // namespace memsamples::ipc
