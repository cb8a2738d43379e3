/**
 * @file multicast_team.hpp
 * @brief The per-device half of a multicast buffer: each GPU's memory, bound to the multicast
 *        object, mapped twice (unicast and multicast). The lesson creates the object and adds the
 *        devices; bindAndMapMembers() does the rest, in one function.
 *
 * What it builds for a team of two (every box is allocationBytes long):
 *
 *     multicast object (cuMulticastCreate, cuMulticastAddDevice x 2)
 *          |  cuMulticastBindMem             |  cuMulticastBindMem
 *          v                                 v
 *     [GPU 0 memory] (cuMemCreate)      [GPU 1 memory] (cuMemCreate)
 *       ^        ^                        ^        ^
 *       |        '---- peer access -------+----.   |
 *     unicast 0 (VA, cuMemMap)          unicast 1 (VA, cuMemMap)
 *       access: GPU 0 and GPU 1           access: GPU 0 and GPU 1
 *
 *     multicast 0 (VA, cuMemMap of the    multicast 1 (VA, cuMemMap of the
 *       multicast object), access: GPU 0    multicast object), access: GPU 1
 *
 * A load or store through a unicast address touches one GPU's copy (its own, or a peer's over
 * NVLink); a multimem instruction through GPU g's multicast address touches every copy at once.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <vector>

#include "multicast_owners.hpp"
#include "multicast_plan.hpp"

namespace memsamples::multicast {

/// One GPU of the team, as the lesson and the measurements use it.
struct Member {
  int ordinal = -1;             ///< Its device ordinal.
  CUdevice device = 0;          ///< Its device handle.
  CUcontext context = nullptr;  ///< Its primary context (retained by the lesson).
  CUdeviceptr unicast = 0;      ///< Its copy, through a unicast mapping every member may access.
  CUdeviceptr multicast = 0;    ///< The multicast mapping, for this GPU's kernels.
};

/**
 * What the team's buffer is made of, released in the documented order: C++ destroys members in
 * reverse order of declaration, so the bindings go first, then the mappings, then the handles,
 * and the address ranges last. The lesson declares it after the contexts and before the streams,
 * whose owners wait for queued work first.
 */
struct TeamMemory {
  std::vector<AddressRange> ranges;           ///< 4. cuMemAddressFree
  OwnedAllocationHandle object;               ///< 3. cuMemRelease of the multicast object
  std::vector<OwnedAllocationHandle> copies;  ///< 3. cuMemRelease of each GPU's memory
  std::vector<Mapping> mappings;              ///< 2. cuMemUnmap of every mapping
  std::vector<MulticastBinding> bindings;     ///< 1. cuMulticastUnbind of each GPU's memory
};

/**
 * For every member, in order: cuMemCreate of allocationBytes on it, cuMulticastBindMem of that
 * memory to @p memory.object (offset 0, the whole size), a unicast mapping (cuMemAddressReserve,
 * cuMemMap, cuMemSetAccess for every member: the peer-load reference reads it from the others),
 * and a multicast mapping (cuMemAddressReserve, cuMemMap of the multicast object,
 * cuMemSetAccess for this member). Fills Member::unicast and Member::multicast; every step is
 * owned in @p memory as soon as it succeeds, so a failure leaves nothing behind once @p memory
 * goes.
 * Precondition: every member has been added to the object (cuMulticastAddDevice), else
 * cuMulticastBindMem and cuMemMap block until it is.
 * @throws CudaError naming the call that failed.
 */
void bindAndMapMembers(const BufferLayout& layout, std::vector<Member>& members,
                       TeamMemory& memory);

}  // namespace memsamples::multicast
