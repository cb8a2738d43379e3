/**
 * @file host_numa_allocation.cpp
 * @brief cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA), mapped and opened to the device and the
 *        CPU, in one constructor; see host_numa_allocation.hpp.
 */
#include "host_numa_allocation.hpp"

#include "memsamples.hpp"
#include "support/devices.hpp"

namespace ms = memsamples;

// [HostNumaAllocation]
HostNumaAllocation::HostNumaAllocation(int deviceOrdinal, int node, std::size_t bytes) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop.location.id = node;
  ms::check(cuMemGetAllocationGranularity(&minimum_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity");
  ms::check(
      cuMemGetAllocationGranularity(&recommended_, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
      "cuMemGetAllocationGranularity");
  // The recommended unit is faster, but would pad a small request: ms::allocationGranularity.
  granularity_ = ms::allocationGranularity(bytes, minimum_, recommended_);
  size_ = (bytes + granularity_ - 1) / granularity_ * granularity_;
  try {
    ms::check(cuMemAddressReserve(&address_, size_, granularity_, 0, 0), "cuMemAddressReserve");
    CUmemGenericAllocationHandle handle = 0;
    ms::check(cuMemCreate(&handle, size_, &prop, 0), "cuMemCreate");
    const CUresult mapped = cuMemMap(address_, size_, 0, handle, 0);
    // The handle goes at once, mapped or not: a mapping holds its own reference, so unmapping
    // then frees the memory, with nothing else to track.
    const CUresult released = cuMemRelease(handle);
    mapped_ = mapped == CUDA_SUCCESS;
    if (!mapped_ && released != CUDA_SUCCESS) {
      throw ms::CudaError(
          mapped,
          ms::formatCallFailure("cuMemMap", __FILE__, __LINE__, ms::describeResult(mapped)) +
              "; cuMemRelease of its handle failed too: " + ms::describeResult(released));
    }
    ms::check(mapped, "cuMemMap");
    ms::check(released, "cuMemRelease");
    CUmemAccessDesc access[2] = {};
    access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[0].location.id = deviceOrdinal;
    access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;  // the CPU; the id is ignored
    access[1].location.id = node;
    access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ms::check(cuMemSetAccess(address_, size_, access, 2), "cuMemSetAccess");
  } catch (...) {
    // Undo what was built; a failure here would only hide the error that is on its way.
    (void)unmapAndFree();
    throw;
  }
}
// [HostNumaAllocation]

HostNumaAllocation::~HostNumaAllocation() {
  (void)unmapAndFree();
}

void HostNumaAllocation::release() {
  const auto [unmapped, freed] = unmapAndFree();
  ms::check(unmapped, "cuMemUnmap");
  ms::check(freed, "cuMemAddressFree");
}

// Both calls are made even when the first fails, so that the addresses never leak.
std::pair<CUresult, CUresult> HostNumaAllocation::unmapAndFree() noexcept {
  const CUresult unmapped =
      std::exchange(mapped_, false) ? cuMemUnmap(address_, size_) : CUDA_SUCCESS;
  const CUresult freed =
      address_ != 0 ? cuMemAddressFree(std::exchange(address_, 0), size_) : CUDA_SUCCESS;
  return {unmapped, freed};
}
