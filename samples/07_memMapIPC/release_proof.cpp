/**
 * @file release_proof.cpp
 * @brief The memMapIPC parent's question about its own addresses, and its decision that a
 *        path's memory is released (see release_proof.hpp).
 */
#include "release_proof.hpp"

#include <sstream>

namespace memsamples::ipc {

// [release-decision]
AddressAnswer askDriverAbout(CUdeviceptr pointer) noexcept {
  AddressAnswer answer;  // all 0: an attribute the driver leaves unanswered stays so
  CUpointer_attribute asked[] = {CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* answers[] = {&answer.mapped, &answer.base, &answer.size};
  answer.result = cuPointerGetAttributes(3, asked, answers, pointer);
  return answer;
}

std::vector<std::string> releaseProblems(const ReleaseEvidence& evidence) {
  // Known: answered, mapped, and within the range the driver names (where it names one).
  const auto knows = [](const AddressAnswer& answer, CUdeviceptr pointer) {
    const bool inRange =
        answer.size == 0 || (answer.base <= pointer && pointer - answer.base < answer.size);
    return answer.result == CUDA_SUCCESS && answer.mapped != 0 && inRange;
  };
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < evidence.allocations.size(); ++i) {
    const AllocationProbe& probe = evidence.allocations[i];
    std::ostringstream name;
    name << "allocation " << i << " (0x" << std::hex << probe.pointer << ")";
    if (!knows(probe.before, probe.pointer)) {
      problems.push_back(name.str() + ": cuPointerGetAttributes did not find it mapped even " +
                         "before its release (CUresult " + std::to_string(probe.before.result) +
                         ", MAPPED " + std::to_string(probe.before.mapped) +
                         "), so its release cannot be proved");
    } else if (probe.after.result != CUDA_SUCCESS) {
      problems.push_back(name.str() + ": cuPointerGetAttributes could not answer after the " +
                         "release (CUresult " + std::to_string(probe.after.result) +
                         "), so nothing is proved");
    } else if (knows(probe.after, probe.pointer)) {
      problems.push_back(name.str() + ": cuPointerGetAttributes still finds it mapped after the " +
                         "release");
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
