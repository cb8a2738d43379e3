/**
 * @file peer_choice.hpp
 * @brief Where the memMapIPC sample's last worker runs: on another GPU that can import the
 *        parent's memory across the link, when there is one it can use, else beside the others.
 *
 * The cross-GPU import is optional: a second GPU that cannot take part is left out, and the run
 * says why. The decision is a function of plain data (what the driver says about each device),
 * so every machine shape is unit tested without a GPU (ctest/unit/memMapIPC/peer_choice_test.cpp).
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace memsamples::ipc {

/// What the driver says about one other device, for the last worker.
struct PeerCandidate {
  int ordinal = 0;         ///< Its ordinal.
  bool canAccess = false;  ///< cuDeviceCanAccessPeer(it, the parent's device).
  bool vmm = false;        ///< CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED.
  int computeMode = 0;     ///< CU_DEVICE_ATTRIBUTE_COMPUTE_MODE (a CUcomputemode).
};

/// The last worker's device: another one (ordinal >= 0), or none and why.
struct PeerChoice {
  int ordinal = -1;    ///< The chosen device, -1 when the last worker stays on the parent's.
  std::string whyNot;  ///< Why no other device was chosen ("" when one was).
};

/**
 * The first of @p others (the devices other than @p owner, in ordinal order) that can access
 * @p owner's memory, manages virtual memory, and whose compute mode admits the worker's context
 * beside the other processes (Common's computeModeProblem() with DeviceUse::SeveralProcesses:
 * PROHIBITED admits no context; EXCLUSIVE_PROCESS one process at a time, and another process may
 * hold it at any moment). With fewer than 2 @p workers none is chosen: worker 0 stays on the
 * parent's device for the kernel that is compared with the parent's own memory.
 * @return the choice; when none, whyNot names each device that could access @p owner and what
 *         left it out, or says that none can ("no other GPU can access device 0").
 */
PeerChoice choosePeer(int owner, const std::vector<PeerCandidate>& others, std::size_t workers);

}  // namespace memsamples::ipc
