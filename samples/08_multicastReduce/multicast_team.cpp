// The per-device half of a multicast buffer (see multicast_team.hpp).
#include "multicast_team.hpp"

namespace memsamples::multicast {

// [bind-and-map]
void bindAndMapMembers(const BufferLayout& layout, std::vector<Member>& members,
                       TeamMemory& memory) {
  const std::size_t bytes = layout.allocationBytes;
  // Owners are only added, never moved once made: reserve room for all of them.
  memory.copies.reserve(members.size());
  memory.bindings.reserve(members.size());
  memory.ranges.reserve(2 * members.size());
  memory.mappings.reserve(2 * members.size());
  std::vector<CUmemAccessDesc> everyMember;  // the unicast copies are read by every GPU
  for (const Member& member : members)
    everyMember.push_back(
        {{CU_MEM_LOCATION_TYPE_DEVICE, member.ordinal}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE});

  for (Member& member : members) {
    const ScopedContext current(member.context);
    // 1. This GPU's copy: ordinary VMM memory on the device.
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, member.ordinal};
    OwnedAllocationHandle& handle = memory.copies.emplace_back();
    check(cuMemCreate(handle.out(), bytes, &prop, 0), "cuMemCreate");

    // 2. Bound to the multicast object: from now on a multimem access reaches this copy too.
    check(cuMulticastBindMem(memory.object.get(), 0, handle.get(), 0, bytes, 0),
          "cuMulticastBindMem");
    memory.bindings.emplace_back().bound(memory.object.get(), member.device, 0, bytes);

    // 3. The unicast mapping: this copy alone, for every member (own loads, peers' loads).
    check(cuMemAddressReserve(&member.unicast, bytes, layout.granularity, 0, 0),
          "cuMemAddressReserve");
    memory.ranges.emplace_back().reserved(member.unicast, bytes);
    check(cuMemMap(member.unicast, bytes, 0, handle.get(), 0), "cuMemMap");
    memory.mappings.emplace_back().mapped(member.unicast, bytes);
    check(cuMemSetAccess(member.unicast, bytes, everyMember.data(), everyMember.size()),
          "cuMemSetAccess");

    // 4. The multicast mapping: the multicast object itself mapped like memory, for this GPU.
    check(cuMemAddressReserve(&member.multicast, bytes, layout.granularity, 0, 0),
          "cuMemAddressReserve");
    memory.ranges.emplace_back().reserved(member.multicast, bytes);
    check(cuMemMap(member.multicast, bytes, 0, memory.object.get(), 0), "cuMemMap");
    memory.mappings.emplace_back().mapped(member.multicast, bytes);
    const CUmemAccessDesc self = {prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    check(cuMemSetAccess(member.multicast, bytes, &self, 1), "cuMemSetAccess");
  }
}
// [bind-and-map]

}  // namespace memsamples::multicast
