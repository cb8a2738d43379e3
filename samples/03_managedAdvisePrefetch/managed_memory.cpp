// The managed-memory driver calls of 03_managedAdvisePrefetch (see managed_memory.hpp).
#include "managed_memory.hpp"

#include <iterator>
#include <string>

#include "memsamples.hpp"

namespace memsamples::managed {

CUresult tryAdvise(CUdeviceptr ptr, std::size_t bytes, CUmem_advise advice,
                   const CUmemLocation& location) {
  // cuda.h 13 maps cuMemAdvise to cuMemAdvise_v2, which takes a CUmemLocation (device, host,
  // host NUMA node) where the old form took a CUdevice.
  return cuMemAdvise(ptr, bytes, advice, location);
}

void advise(CUdeviceptr ptr, std::size_t bytes, CUmem_advise advice,
            const CUmemLocation& location) {
  const std::string call =
      "cuMemAdvise(" + adviceName(advice) + ", " + describeLocation(location) + ")";
  check(tryAdvise(ptr, bytes, advice, location), call.c_str());
}

void prefetchAsync(CUdeviceptr ptr, std::size_t bytes, const CUmemLocation& destination,
                   CUstream stream) {
  // cuMemPrefetchAsync_v2: a CUmemLocation and a flags word that must be 0 for now.
  check(cuMemPrefetchAsync(ptr, bytes, destination, 0, stream), "cuMemPrefetchAsync");
}

void prefetchBatchAsync(const PrefetchBatch& batch, CUstream stream) {
  validatePrefetchBatch(batch, stream);
  // The driver only reads these arrays; its prototype lacks the const.
  check(cuMemPrefetchBatchAsync(const_cast<CUdeviceptr*>(batch.dptrs.data()),
                                const_cast<std::size_t*>(batch.sizes.data()), batch.dptrs.size(),
                                const_cast<CUmemLocation*>(batch.locations.data()),
                                const_cast<std::size_t*>(batch.locationStarts.data()),
                                batch.locations.size(), 0, stream),
        "cuMemPrefetchBatchAsync");
}

void discardBatchAsync(const std::vector<CUdeviceptr>& dptrs, const std::vector<std::size_t>& sizes,
                       CUstream stream) {
  if (std::string problem = discardBatchProblem(dptrs, sizes, stream); !problem.empty())
    throw BatchPrefetchError("cuMemDiscardBatchAsync: " + problem);
  check(cuMemDiscardBatchAsync(const_cast<CUdeviceptr*>(dptrs.data()),
                               const_cast<std::size_t*>(sizes.data()), dptrs.size(), 0, stream),
        "cuMemDiscardBatchAsync");
}

namespace {

/// Where each attribute of a RangeAttributes lives, in the order of its members.
struct AttributeSlot {
  CUmem_range_attribute attribute;
  void* data;
  std::size_t bytes;
};

std::vector<AttributeSlot> slotsOf(RangeAttributes& a, int accessedBySlots) {
  a.accessedBy.assign(static_cast<std::size_t>(accessedBySlots < 1 ? 1 : accessedBySlots),
                      CU_DEVICE_INVALID);
  // Sizes as cuMemRangeGetAttribute requires them: 4 bytes for the ints, sizeof the enum for the
  // _TYPE attributes, and a non-zero multiple of 4 for ACCESSED_BY.
  return {
      {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, &a.readMostly, sizeof a.readMostly},
      {CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, &a.preferredLocation, sizeof a.preferredLocation},
      {CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, &a.preferredLocationType,
       sizeof a.preferredLocationType},
      {CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, &a.preferredLocationId,
       sizeof a.preferredLocationId},
      {CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, a.accessedBy.data(), a.accessedBy.size() * sizeof(int)},
      {CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, &a.lastPrefetchLocation,
       sizeof a.lastPrefetchLocation},
      {CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, &a.lastPrefetchLocationType,
       sizeof a.lastPrefetchLocationType},
      {CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, &a.lastPrefetchLocationId,
       sizeof a.lastPrefetchLocationId},
  };
}

}  // namespace

RangeAttributes readRangeAttributes(CUdeviceptr ptr, std::size_t bytes, int accessedBySlots) {
  RangeAttributes attributes;
  for (const AttributeSlot& slot : slotsOf(attributes, accessedBySlots)) {
    check(cuMemRangeGetAttribute(slot.data, slot.bytes, slot.attribute, ptr, bytes),
          "cuMemRangeGetAttribute");
  }
  return attributes;
}

RangeAttributes readRangeAttributesAtOnce(CUdeviceptr ptr, std::size_t bytes, int accessedBySlots) {
  RangeAttributes attributes;
  std::vector<CUmem_range_attribute> which;
  std::vector<void*> data;
  std::vector<std::size_t> sizes;
  for (const AttributeSlot& slot : slotsOf(attributes, accessedBySlots)) {
    which.push_back(slot.attribute);
    data.push_back(slot.data);
    sizes.push_back(slot.bytes);
  }
  check(cuMemRangeGetAttributes(data.data(), sizes.data(), which.data(), which.size(), ptr, bytes),
        "cuMemRangeGetAttributes");
  return attributes;
}

PointerAttributes readPointerAttributes(CUdeviceptr ptr) {
  PointerAttributes a;
  CUpointer_attribute which[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE,    CU_POINTER_ATTRIBUTE_IS_MANAGED,
      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
      CU_POINTER_ATTRIBUTE_RANGE_SIZE,     CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
      CU_POINTER_ATTRIBUTE_HOST_POINTER,   CU_POINTER_ATTRIBUTE_CONTEXT,
  };
  void* data[] = {&a.memoryType, &a.isManaged,     &a.deviceOrdinal, &a.rangeStart,
                  &a.rangeSize,  &a.devicePointer, &a.hostPointer,   &a.context};
  static_assert(std::size(which) == std::size(data));
  check(cuPointerGetAttributes(static_cast<unsigned int>(std::size(which)), which, data, ptr),
        "cuPointerGetAttributes");
  return a;
}

const char* memoryTypeName(unsigned int memoryType) {
  switch (memoryType) {
    case CU_MEMORYTYPE_HOST:
      return "CU_MEMORYTYPE_HOST";
    case CU_MEMORYTYPE_DEVICE:
      return "CU_MEMORYTYPE_DEVICE";
    case CU_MEMORYTYPE_ARRAY:
      return "CU_MEMORYTYPE_ARRAY";
    case CU_MEMORYTYPE_UNIFIED:
      return "CU_MEMORYTYPE_UNIFIED";
    default:
      return "unknown CUmemorytype";
  }
}

}  // namespace memsamples::managed
