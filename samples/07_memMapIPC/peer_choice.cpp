/**
 * @file peer_choice.cpp
 * @brief Where the memMapIPC sample's last worker runs (see peer_choice.hpp).
 */
#include "peer_choice.hpp"

#include "support/devices.hpp"

namespace memsamples::ipc {

PeerChoice choosePeer(int owner, const std::vector<PeerCandidate>& others, std::size_t workers) {
  PeerChoice choice;
  if (workers < 2) {
    choice.whyNot = "one worker only; needs 2 with a second GPU";
    return choice;
  }
  const std::string ownerName = "device " + std::to_string(owner);
  std::string leftOut;
  for (const PeerCandidate& other : others) {
    if (!other.canAccess || other.ordinal == owner)
      continue;
    const std::string name = "device " + std::to_string(other.ordinal);
    std::string problem;
    if (!other.vmm)
      problem = name + " can access " + ownerName + " but has no virtual memory management";
    else
      problem = computeModeProblem(other.ordinal, other.computeMode, DeviceUse::SeveralProcesses);
    if (problem.empty()) {
      choice.ordinal = other.ordinal;
      return choice;
    }
    leftOut += (leftOut.empty() ? "" : "; ") + problem;
  }
  choice.whyNot = leftOut.empty() ? "no other GPU can access " + ownerName
                                  : leftOut + " (the cross-GPU import is optional: left out)";
  return choice;
}

}  // namespace memsamples::ipc
