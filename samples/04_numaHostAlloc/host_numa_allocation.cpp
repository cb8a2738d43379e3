/**
 * @file host_numa_allocation.cpp
 * @brief cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA), mapped, opened to the device and
 * the CPU, used, unmapped and freed: 04's CUDA-native path, step 8, the first section of
 * the README's Going deeper (see host_numa_allocation.hpp).
 */
#include "host_numa_allocation.hpp"

#include "memsamples.hpp"
#include "support/devices.hpp"
#include "support/vmm_owners.hpp"  // AddressRange, Mapping (shared with 05 and 08)

#include <string>

namespace ms = memsamples;

namespace {

// cuMemMap's answer, checked with cuMemRelease's beside it: the core releases the handle
// right after the map, mapped or not, so a failed map may come with a failed release,
// and the message names both, neither hiding the other. The compiler fills in @p file
// and @p line where it is called, as for ms::check().
void checkMapped(CUresult mapped, CUresult released, const char* file = __builtin_FILE(),
                 int line = __builtin_LINE()) {
  if (mapped == CUDA_SUCCESS)
    return;
  std::string message =
      ms::formatCallFailure("cuMemMap", file, line, ms::describeResult(mapped));
  if (released != CUDA_SUCCESS)
    message += "; cuMemRelease of its handle failed too: " + ms::describeResult(released);
  throw ms::CudaError(mapped, message);
}

}  // namespace

void useHostNumaAllocation(int deviceOrdinal, int node, std::size_t bytes,
                           const std::function<void(const HostNumaRange&)>& use) {
  //! [host-numa]
  // Pinned memory whose location is host NUMA node `node`: the driver places the pages
  // there, with no mbind, so this also works where a seccomp filter refuses the NUMA
  // system calls.
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop.location.id = node;

  // The recommended unit is faster, but would pad a small request
  // (ms::allocationGranularity).
  HostNumaRange range;
  ms::check(cuMemGetAllocationGranularity(&range.minimumGranularity, &prop,
                                          CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity");
  ms::check(cuMemGetAllocationGranularity(&range.recommendedGranularity, &prop,
                                          CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
            "cuMemGetAllocationGranularity");
  range.granularity = ms::allocationGranularity(bytes, range.minimumGranularity,
                                                range.recommendedGranularity);
  range.size = (bytes + range.granularity - 1) / range.granularity * range.granularity;

  // Addresses first, then the memory, then the memory mapped at those addresses.
  ms::AddressRange reserved(range.size);
  ms::check(cuMemAddressReserve(reserved.out(), range.size, range.granularity, 0, 0),
            "cuMemAddressReserve");
  CUmemGenericAllocationHandle handle = 0;
  ms::check(cuMemCreate(&handle, range.size, &prop, 0), "cuMemCreate");
  const CUresult mapped = cuMemMap(reserved.get(), range.size, 0, handle, 0);

  // The handle goes at once, mapped or not: a mapping holds its own reference, so
  // unmapping then frees the memory, with nothing else to track.
  const CUresult released = cuMemRelease(handle);
  checkMapped(mapped, released);
  ms::Mapping mapping(range.size, reserved.get());
  ms::check(released, "cuMemRelease");

  // One cuMemSetAccess for both: the device, and the CPU (a HOST_NUMA access location,
  // whose id is ignored). Without the second entry even the CPU may not touch its own
  // memory.
  CUmemAccessDesc access[2] = {};
  access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access[0].location.id = deviceOrdinal;
  access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  access[1].location.id = node;  // ignored by the driver; the node, for a reader
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ms::check(cuMemSetAccess(reserved.get(), range.size, access, 2), "cuMemSetAccess");

  range.address = reserved.get();
  use(range);

  // Unmapping frees the memory (the mapping held the last reference); then the
  // addresses go. Each owner lets go only after its call succeeded: were the unmap
  // to fail, `mapping` and `reserved` would still try to undo it.
  ms::check(cuMemUnmap(mapping.get(), range.size), "cuMemUnmap");
  mapping.release();
  ms::check(cuMemAddressFree(reserved.get(), range.size), "cuMemAddressFree");
  reserved.release();
  //! [host-numa]
}
