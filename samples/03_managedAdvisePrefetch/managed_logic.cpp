/**
 * @file managed_logic.cpp
 * @brief The CUDA-free rules of 03_managedAdvisePrefetch (see managed_logic.hpp). No cu* call
 *        here.
 */
#include "managed_logic.hpp"

#include <algorithm>
#include <sstream>

#include <unistd.h>

#include "memsamples.hpp"

namespace memsamples::managed {
namespace {

std::string str(std::size_t value) {
  return std::to_string(value);
}

std::string listOfDevices(std::vector<int> devices) {
  std::sort(devices.begin(), devices.end());
  std::string text = "{";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    text += (i ? ", " : "") + legacyLocationName(devices[i]);
  }
  return text + "}";
}

/// The entries of an ACCESSED_BY answer that name a processor (the driver pads with INVALID).
std::vector<int> validEntries(const std::vector<int>& answer) {
  std::vector<int> valid;
  for (int value : answer) {
    if (value != CU_DEVICE_INVALID)
      valid.push_back(value);
  }
  std::sort(valid.begin(), valid.end());
  return valid;
}

/// The legacy int the driver reports for a location: device ordinal, CU_DEVICE_CPU, or INVALID.
int legacyValueOf(const std::optional<CUmemLocation>& location) {
  if (!location)
    return CU_DEVICE_INVALID;
  if (location->type == CU_MEM_LOCATION_TYPE_DEVICE)
    return location->id;
  return CU_DEVICE_CPU;
}

/// Compares the legacy/type/id triple of one location-valued attribute family.
void compareLocation(const std::string& family, const std::optional<CUmemLocation>& expected,
                     int gotLegacy, CUmemLocationType gotType, int gotId,
                     std::vector<AttributeMismatch>& out) {
  const std::string prefix = "CU_MEM_RANGE_ATTRIBUTE_" + family;
  // The legacy int cannot name a NUMA node; what it returns for one is not documented.
  const bool legacyComparable = !expected || expected->type != CU_MEM_LOCATION_TYPE_HOST_NUMA;
  if (legacyComparable && gotLegacy != legacyValueOf(expected)) {
    out.push_back(
        {prefix, legacyLocationName(legacyValueOf(expected)), legacyLocationName(gotLegacy)});
  }
  const CUmemLocationType expectedType = expected ? expected->type : CU_MEM_LOCATION_TYPE_INVALID;
  const bool nodeExpected = expectedType == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  // The driver may answer a node with plain HOST: still the host, only the node is not named.
  const bool nodeAsHost = nodeExpected && gotType == CU_MEM_LOCATION_TYPE_HOST;
  if (gotType != expectedType && !nodeAsHost) {
    const std::string accepted =
        locationTypeName(expectedType) +
        (nodeExpected ? " or " + locationTypeName(CU_MEM_LOCATION_TYPE_HOST) : "");
    out.push_back({prefix + "_TYPE", accepted, locationTypeName(gotType)});
    return;  // the id means nothing when the type is already wrong
  }
  const bool idMeaningful =
      gotType == CU_MEM_LOCATION_TYPE_DEVICE || gotType == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  if (idMeaningful && gotId != expected->id) {
    out.push_back({prefix + "_ID", std::to_string(expected->id), std::to_string(gotId)});
  }
}

std::string describeTypedLocation(CUmemLocationType type, int id) {
  CUmemLocation location = {};
  location.type = type;
  location.id = id;
  return describeLocation(location);
}

bool knownLocationType(CUmemLocationType type) {
  switch (type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return true;
    default:
      return false;
  }
}

// Groups of the rules of prefetchBatchProblem: the count (rules 1 and 2), the ranges themselves
// (rule 6) and the stream (rule 8).

/// Rules 1 and 2: at least one range, and as many sizes as starts.
std::string countProblem(const std::vector<CUdeviceptr>& dptrs,
                         const std::vector<std::size_t>& sizes) {
  if (dptrs.empty() && sizes.empty())
    return "the batch is empty: count must be at least 1";
  if (dptrs.size() != sizes.size()) {
    return "dptrs has " + str(dptrs.size()) + " entries but sizes has " + str(sizes.size()) +
           ": both must have count entries";
  }
  return {};
}

/// Rule 6: every range has a non-null start, at least one byte, and does not wrap around.
/// Requires countProblem() to have found nothing.
std::string rangeContentProblem(const std::vector<CUdeviceptr>& dptrs,
                                const std::vector<std::size_t>& sizes) {
  for (std::size_t i = 0; i < dptrs.size(); ++i) {
    if (dptrs[i] == 0)
      return "dptrs[" + str(i) + "] is null: every range must start at a managed address";
    if (sizes[i] == 0)
      return "sizes[" + str(i) + "] is 0: every range must have at least one byte";
    if (sizes[i] - 1 > UINT64_MAX - dptrs[i]) {
      return "range " + str(i) + " (dptrs[" + str(i) + "] + sizes[" + str(i) +
             "]) wraps around the address space";
    }
  }
  return {};
}

std::string streamProblem(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY) {
    return "the legacy NULL stream is refused by the driver (CUDA_ERROR_INVALID_VALUE): enqueue "
           "the batch on a created stream";
  }
  return {};
}

}  // namespace

// -------------------------------------------------------------------------- support and sizes

std::string describeSupport(const ManagedSupport& s) {
  return "managed memory " + std::to_string(s.managedMemory) + ", concurrent managed access " +
         std::to_string(s.concurrentManagedAccess) + ", pageable memory access " +
         std::to_string(s.pageableMemoryAccess) +
         ", direct host access to GPU-resident managed memory " +
         std::to_string(s.directManagedAccessFromHost) + ", host NUMA id " +
         std::to_string(s.hostNumaId);
}

std::string waiverReason(const ManagedSupport& support, int ordinal) {
  if (!support.managedMemory) {
    return "device " + std::to_string(ordinal) +
           " cannot allocate managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 0)";
  }
  if (support.concurrentManagedAccess && support.firstDeviceWithoutConcurrentAccess < 0)
    return {};
  const int which =
      support.concurrentManagedAccess ? support.firstDeviceWithoutConcurrentAccess : ordinal;
  return "device " + std::to_string(which) +
         " has no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 0, "
         "e.g. Windows or an old GPU): prefetching to a GPU and cuMemPrefetchBatchAsync need it "
         "on every device";
}

bool coherentHostAccess(const ManagedSupport& s) {
  return s.pageableUsesHostPageTables != 0 || s.directManagedAccessFromHost != 0;
}

std::string pagingModel(const ManagedSupport& s) {
  if (coherentHostAccess(s)) {
    return "coherent host link (host page tables " + std::to_string(s.pageableUsesHostPageTables) +
           ", direct host access " + std::to_string(s.directManagedAccessFromHost) +
           ", e.g. Grace Hopper): the GPU may use host-resident pages where they are, over the "
           "link, instead of faulting them over, so (a) may not be fault-driven migration and (d) "
           "is not bounded by PCIe";
  }
  return "GPU behind PCIe, no coherent host access (host page tables 0, direct host access 0, "
         "e.g. x86 + H200): a GPU access to a host-resident page faults and the page migrates";
}

std::uint64_t hostPageBytes() {
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0)
    throw std::runtime_error("sysconf(_SC_PAGESIZE) did not return the host page size");
  return static_cast<std::uint64_t>(page);
}

void checkSizeOptions(const std::optional<std::uint64_t>& vectorBytes, std::uint64_t rangeBytes,
                      std::uint64_t pageBytes) {
  if (pageBytes == 0)
    throw std::invalid_argument("checkSizeOptions: the page size must be at least 1 byte");
  if (vectorBytes && *vectorBytes % sizeof(float) != 0) {
    throw UsageError("--size " + std::to_string(*vectorBytes) + " is not a multiple of " +
                     std::to_string(sizeof(float)) + " bytes (one element)");
  }
  if (rangeBytes % pageBytes != 0) {
    throw UsageError("--range-size " + std::to_string(rangeBytes) +
                     " is not a multiple of the host page size (" + formatBytes(pageBytes) +
                     "): the driver widens every range to whole pages, so the ranges would no "
                     "longer be separate");
  }
}

ManagedSizes planManagedSizes(const std::optional<std::uint64_t>& vectorBytes,
                              std::uint64_t defaultBytes, std::uint64_t minBytes,
                              std::uint64_t rangeBytes, const std::vector<int>& batchCounts,
                              std::uint64_t freeBytes, const HostMemory& host) {
  if (batchCounts.empty())
    throw std::invalid_argument("planManagedSizes: no batch counts");
  const int largestCount = *std::max_element(batchCounts.begin(), batchCounts.end());
  ManagedSizes sizes;
  sizes.spanBytes = static_cast<std::uint64_t>(largestCount) * 2 * rangeBytes;
  if (sizes.spanBytes >= freeBytes / 2) {
    throw UsageError("the batch benchmark span (" + std::to_string(largestCount) + " x 2 x " +
                     formatBytes(rangeBytes) + " = " + formatBytes(sizes.spanBytes) +
                     ") would take half of the " + formatBytes(freeBytes) +
                     " free; lower --range-size or --batch-counts");
  }
  sizes.vectorBytes =
      chooseBufferBytes(vectorBytes, defaultBytes, freeBytes - sizes.spanBytes, 6, sizeof(float));
  if (sizes.vectorBytes < minBytes) {
    throw std::runtime_error("only " + formatBytes(freeBytes) +
                             " of device memory is free: too little for six " +
                             formatBytes(minBytes) + " vectors");
  }
  sizes.vectorBytes = fitHostMemory(vectorBytes, sizes.vectorBytes, 4, sizeof(float), host);
  if (sizes.vectorBytes < minBytes) {
    throw std::runtime_error(host.limitedBy + " has only " + formatBytes(host.availableBytes) +
                             " free: too little for four " + formatBytes(minBytes) + " vectors");
  }
  return sizes;
}

std::string describeSizes(const ManagedSizes& sizes, std::uint64_t freeBytes,
                          std::uint64_t totalBytes) {
  return "Vectors: " + formatBytes(sizes.vectorBytes) + " each (3 managed + 3 cuMemAlloc), " +
         "batch span " + formatBytes(sizes.spanBytes) + "; " + formatBytes(freeBytes) + " of " +
         formatBytes(totalBytes) + " free";
}

// ------------------------------------------------------------------------------------ locations

CUmemLocation deviceLocation(int ordinal) {
  CUmemLocation location = {};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = ordinal;
  return location;
}

CUmemLocation hostLocation() {
  CUmemLocation location = {};
  location.type = CU_MEM_LOCATION_TYPE_HOST;
  location.id = 0;
  return location;
}

CUmemLocation hostNumaLocation(int node) {
  CUmemLocation location = {};
  location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  location.id = node;
  return location;
}

bool sameLocation(const CUmemLocation& a, const CUmemLocation& b) {
  if (a.type != b.type)
    return false;
  const bool idCounts =
      a.type == CU_MEM_LOCATION_TYPE_DEVICE || a.type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  return !idCounts || a.id == b.id;
}

std::string locationTypeName(CUmemLocationType type) {
  switch (type) {
    case CU_MEM_LOCATION_TYPE_INVALID:
      return "CU_MEM_LOCATION_TYPE_INVALID";
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return "CU_MEM_LOCATION_TYPE_DEVICE";
    case CU_MEM_LOCATION_TYPE_HOST:
      return "CU_MEM_LOCATION_TYPE_HOST";
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return "CU_MEM_LOCATION_TYPE_HOST_NUMA";
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return "CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT";
    default:
      return "CUmemLocationType " + std::to_string(static_cast<long long>(type));
  }
}

std::string describeLocation(const CUmemLocation& location) {
  switch (location.type) {
    case CU_MEM_LOCATION_TYPE_INVALID:
      return "invalid (none or mixed)";
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return "device " + std::to_string(location.id);
    case CU_MEM_LOCATION_TYPE_HOST:
      return "host";
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return "host NUMA node " + std::to_string(location.id);
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return "host NUMA node of the calling thread";
    default:
      return locationTypeName(location.type) + " id " + std::to_string(location.id);
  }
}

std::string legacyLocationName(int value) {
  if (value == CU_DEVICE_CPU)
    return "CU_DEVICE_CPU (host)";
  if (value == CU_DEVICE_INVALID)
    return "CU_DEVICE_INVALID (none or mixed)";
  if (value >= 0)
    return "device " + std::to_string(value);
  return "unknown location " + std::to_string(value);
}

// -------------------------------------------------------------------------------- batch prefetch

PrefetchBatchBuilder& PrefetchBatchBuilder::add(CUdeviceptr ptr, std::size_t bytes,
                                                const CUmemLocation& destination) {
  if (batch_.locations.empty() || !sameLocation(batch_.locations.back(), destination)) {
    batch_.locations.push_back(destination);
    batch_.locationStarts.push_back(batch_.dptrs.size());
  }
  batch_.dptrs.push_back(ptr);
  batch_.sizes.push_back(bytes);
  return *this;
}

std::string prefetchBatchProblem(const PrefetchBatch& batch, CUstream stream) {
  const std::size_t count = batch.dptrs.size();
  const std::size_t numLocations = batch.locationStarts.size();
  if (std::string problem = countProblem(batch.dptrs, batch.sizes); !problem.empty())
    return problem;
  if (batch.locations.size() != numLocations) {
    return "prefetchLocs has " + str(batch.locations.size()) + " entries but prefetchLocIdxs has " +
           str(numLocations) + ": both must have numPrefetchLocs entries";
  }
  if (numLocations == 0)
    return "no destination: numPrefetchLocs must be at least 1";
  if (numLocations > count) {
    return "numPrefetchLocs (" + str(numLocations) + ") is greater than count (" + str(count) +
           "): every location must apply to at least one range";
  }
  if (batch.locationStarts[0] != 0) {
    return "prefetchLocIdxs[0] is " + str(batch.locationStarts[0]) +
           ", must be 0: the first location applies from the first range on";
  }
  for (std::size_t k = 1; k < numLocations; ++k) {
    if (batch.locationStarts[k] <= batch.locationStarts[k - 1]) {
      return "prefetchLocIdxs[" + str(k) + "] = " + str(batch.locationStarts[k]) +
             " is not greater than prefetchLocIdxs[" + str(k - 1) +
             "] = " + str(batch.locationStarts[k - 1]) + ": the indices must strictly increase";
    }
  }
  if (batch.locationStarts.back() >= count) {
    return "prefetchLocIdxs[" + str(numLocations - 1) + "] = " + str(batch.locationStarts.back()) +
           " is not less than count (" + str(count) +
           "): the last location would apply to no range";
  }
  if (std::string problem = rangeContentProblem(batch.dptrs, batch.sizes); !problem.empty())
    return problem;
  for (std::size_t k = 0; k < numLocations; ++k) {
    const CUmemLocation& location = batch.locations[k];
    if (!knownLocationType(location.type)) {
      return "prefetchLocs[" + str(k) + "] has type " + locationTypeName(location.type) +
             ": a prefetch goes to a DEVICE, HOST, HOST_NUMA or HOST_NUMA_CURRENT location";
    }
    const bool needsId = location.type == CU_MEM_LOCATION_TYPE_DEVICE ||
                         location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
    if (needsId && location.id < 0) {
      return "prefetchLocs[" + str(k) + "] is " + locationTypeName(location.type) + " with id " +
             std::to_string(location.id) + ": the id must be a device ordinal or NUMA node >= 0";
    }
  }
  return streamProblem(stream);
}

void validatePrefetchBatch(const PrefetchBatch& batch, CUstream stream) {
  if (std::string problem = prefetchBatchProblem(batch, stream); !problem.empty())
    throw BatchPrefetchError("cuMemPrefetchBatchAsync: " + problem);
}

CUmemLocation destinationOf(const PrefetchBatch& batch, std::size_t range) {
  if (range >= batch.dptrs.size() || batch.locationStarts.empty()) {
    throw std::out_of_range("destinationOf: the batch has no range " + str(range) + " (" +
                            str(batch.dptrs.size()) + " ranges)");
  }
  // The last group that starts at or before the range holds it.
  const auto after =
      std::upper_bound(batch.locationStarts.begin(), batch.locationStarts.end(), range);
  return batch.locations.at(static_cast<std::size_t>(after - batch.locationStarts.begin()) - 1);
}

std::string describeBatch(const PrefetchBatch& batch) {
  std::string text = str(batch.dptrs.size()) + " ranges; prefetchLocs = {";
  for (std::size_t k = 0; k < batch.locations.size(); ++k)
    text += (k ? ", " : "") + describeLocation(batch.locations[k]);
  text += "}, prefetchLocIdxs = {";
  for (std::size_t k = 0; k < batch.locationStarts.size(); ++k)
    text += (k ? ", " : "") + str(batch.locationStarts[k]);
  return text + "}, numPrefetchLocs = " + str(batch.locations.size());
}

// ------------------------------------------------------------------------------ range attributes

RangeAttributeQuery rangeAttributeQuery(RangeAttributes& a, int accessedBySlots) {
  a.accessedBy.assign(static_cast<std::size_t>(accessedBySlots < 1 ? 1 : accessedBySlots),
                      CU_DEVICE_INVALID);
  RangeAttributeQuery query;
  const auto ask = [&query](CUmem_range_attribute attribute, void* data, std::size_t bytes) {
    query.data.push_back(data);
    query.sizes.push_back(bytes);
    query.asked.push_back(attribute);
  };
  ask(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, &a.readMostly, sizeof a.readMostly);
  ask(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, &a.preferredLocation, sizeof a.preferredLocation);
  ask(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, &a.preferredLocationType,
      sizeof a.preferredLocationType);
  ask(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, &a.preferredLocationId,
      sizeof a.preferredLocationId);
  ask(CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, a.accessedBy.data(), a.accessedBy.size() * sizeof(int));
  ask(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, &a.lastPrefetchLocation,
      sizeof a.lastPrefetchLocation);
  ask(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, &a.lastPrefetchLocationType,
      sizeof a.lastPrefetchLocationType);
  ask(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, &a.lastPrefetchLocationId,
      sizeof a.lastPrefetchLocationId);
  return query;
}

ExpectedRange prefetchedTo(const CUmemLocation& destination) {
  ExpectedRange expected;
  expected.lastPrefetch = destination;
  return expected;
}

std::string describeRangeAttributes(const RangeAttributes& a) {
  std::ostringstream text;
  text << "read-mostly " << a.readMostly << ", preferred "
       << describeTypedLocation(a.preferredLocationType, a.preferredLocationId) << " (legacy "
       << legacyLocationName(a.preferredLocation) << "), accessed-by "
       << listOfDevices(validEntries(a.accessedBy)) << ", last prefetch "
       << describeTypedLocation(a.lastPrefetchLocationType, a.lastPrefetchLocationId) << " (legacy "
       << legacyLocationName(a.lastPrefetchLocation) << ")";
  return text.str();
}

std::vector<AttributeMismatch> compareRangeAttributes(const ExpectedRange& expected,
                                                      const RangeAttributes& got) {
  std::vector<AttributeMismatch> out;
  const int expectedReadMostly = expected.readMostly ? 1 : 0;
  if (got.readMostly != expectedReadMostly) {
    out.push_back({"CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY", std::to_string(expectedReadMostly),
                   std::to_string(got.readMostly)});
  }
  compareLocation("PREFERRED_LOCATION", expected.preferred, got.preferredLocation,
                  got.preferredLocationType, got.preferredLocationId, out);
  std::vector<int> expectedAccessors = expected.accessedBy;
  std::sort(expectedAccessors.begin(), expectedAccessors.end());
  if (validEntries(got.accessedBy) != expectedAccessors) {
    out.push_back({"CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY", listOfDevices(expectedAccessors),
                   listOfDevices(validEntries(got.accessedBy))});
  }
  compareLocation("LAST_PREFETCH_LOCATION", expected.lastPrefetch, got.lastPrefetchLocation,
                  got.lastPrefetchLocationType, got.lastPrefetchLocationId, out);
  return out;
}

std::string hostNumaReadBack(const ExpectedRange& expected, const RangeAttributes& got) {
  if (!expected.preferred || expected.preferred->type != CU_MEM_LOCATION_TYPE_HOST_NUMA)
    return {};
  const std::string asked = "the driver reports " + describeLocation(*expected.preferred) + " as ";
  if (got.preferredLocationType == CU_MEM_LOCATION_TYPE_HOST)
    return asked + locationTypeName(CU_MEM_LOCATION_TYPE_HOST) + " (no node named)";
  return asked + locationTypeName(got.preferredLocationType) + " id " +
         std::to_string(got.preferredLocationId);
}

std::vector<AttributeMismatch> differingAttributes(const RangeAttributes& individually,
                                                   const RangeAttributes& atOnce) {
  std::vector<AttributeMismatch> out;
  const auto compare = [&out](const char* name, const std::string& a, const std::string& b) {
    if (a != b)
      out.push_back({std::string("CU_MEM_RANGE_ATTRIBUTE_") + name, a, b});
  };
  compare("READ_MOSTLY", std::to_string(individually.readMostly),
          std::to_string(atOnce.readMostly));
  compare("PREFERRED_LOCATION", legacyLocationName(individually.preferredLocation),
          legacyLocationName(atOnce.preferredLocation));
  compare("PREFERRED_LOCATION_TYPE", locationTypeName(individually.preferredLocationType),
          locationTypeName(atOnce.preferredLocationType));
  compare("PREFERRED_LOCATION_ID", std::to_string(individually.preferredLocationId),
          std::to_string(atOnce.preferredLocationId));
  compare("ACCESSED_BY", listOfDevices(validEntries(individually.accessedBy)),
          listOfDevices(validEntries(atOnce.accessedBy)));
  compare("LAST_PREFETCH_LOCATION", legacyLocationName(individually.lastPrefetchLocation),
          legacyLocationName(atOnce.lastPrefetchLocation));
  compare("LAST_PREFETCH_LOCATION_TYPE", locationTypeName(individually.lastPrefetchLocationType),
          locationTypeName(atOnce.lastPrefetchLocationType));
  compare("LAST_PREFETCH_LOCATION_ID", std::to_string(individually.lastPrefetchLocationId),
          std::to_string(atOnce.lastPrefetchLocationId));
  return out;
}

// --------------------------------------------------------------------------- pointer attributes

std::vector<AttributeMismatch> comparePointerAttributes(const PointerAttributes& got,
                                                        const PointerAttributes& inside,
                                                        CUdeviceptr ptr, std::size_t bytes,
                                                        int ordinal) {
  std::vector<AttributeMismatch> out;
  const auto expect = [&out](bool ok, const char* attribute, std::string expected,
                             std::string found) {
    if (!ok)
      out.push_back({attribute, std::move(expected), std::move(found)});
  };
  const auto span = [](CUdeviceptr start, std::size_t size) {
    return "[" + hex(start) + ", " + hex(start + size) + ")";
  };
  expect(got.isManaged == 1, "CU_POINTER_ATTRIBUTE_IS_MANAGED", "1", std::to_string(got.isManaged));
  expect(got.deviceOrdinal == ordinal, "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL",
         std::to_string(ordinal), std::to_string(got.deviceOrdinal));
  // The range the driver tracks must contain the whole allocation (for cuMemAllocManaged it is
  // the allocation itself).
  expect(got.rangeStart <= ptr && got.rangeStart + got.rangeSize >= ptr + bytes,
         "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/_SIZE", "a range containing " + span(ptr, bytes),
         span(got.rangeStart, got.rangeSize));
  expect(inside.rangeStart == got.rangeStart && inside.rangeSize == got.rangeSize,
         "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/_SIZE from inside",
         "the same range as from "
         "the start",
         span(inside.rangeStart, inside.rangeSize));
  expect(got.devicePointer == ptr, "CU_POINTER_ATTRIBUTE_DEVICE_POINTER", hex(ptr),
         hex(got.devicePointer));
  const auto hostAddress =
      static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(got.hostPointer));
  expect(hostAddress == ptr, "CU_POINTER_ATTRIBUTE_HOST_POINTER", hex(ptr), hex(hostAddress));
  return out;
}

std::string describePointerAttributes(const PointerAttributes& got, const PointerAttributes& inside,
                                      CUdeviceptr insideAddress, CUcontext sampleContext) {
  std::ostringstream text;
  text << "  memory type      " << memoryTypeName(got.memoryType)
       << " (for managed memory this says nothing about where the pages are)\n"
       << "  is managed       " << got.isManaged << '\n'
       << "  device ordinal   " << got.deviceOrdinal << " (the device of the allocating context)\n"
       << "  range            start " << hex(got.rangeStart) << ", size " << got.rangeSize
       << " bytes\n"
       << "  device pointer   " << hex(got.devicePointer) << ", host pointer "
       << hex(reinterpret_cast<std::uintptr_t>(got.hostPointer)) << " (one address everywhere)\n"
       << "  context          "
       << (got.context == sampleContext ? "the sample's context" : "another context") << '\n'
       << "  from " << hex(insideAddress) << " (inside): range start " << hex(inside.rangeStart)
       << ", size " << inside.rangeSize << " bytes\n";
  return text.str();
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

std::string hex(std::uint64_t value) {
  std::ostringstream text;
  text << "0x" << std::hex << value;
  return text.str();
}

// ------------------------------------------------------------------------------------- checklist

bool Checklist::expect(bool ok, const std::string& what, const std::string& expected,
                       const std::string& got) {
  ++checks_;
  if (!ok)
    failures_.push_back(what + ": expected " + expected + ", got " + got);
  return ok;
}

bool Checklist::expectAttributes(const std::string& context,
                                 const std::vector<AttributeMismatch>& found, std::size_t checked) {
  checks_ += checked;
  for (const AttributeMismatch& mismatch : found) {
    failures_.push_back(context + ": " + mismatch.attribute + ": expected " + mismatch.expected +
                        ", got " + mismatch.got);
  }
  return found.empty();
}

// ------------------------------------------------------------------------------------- splitting

std::vector<ByteRange> splitIntoChunks(std::uint64_t totalBytes, std::size_t chunks,
                                       std::uint64_t alignment) {
  if (chunks == 0)
    throw std::invalid_argument("splitIntoChunks: the number of chunks must be at least 1");
  if (alignment == 0)
    throw std::invalid_argument("splitIntoChunks: the alignment must be at least 1 byte");
  if (totalBytes / chunks < alignment) {
    throw std::invalid_argument("splitIntoChunks: " + std::to_string(totalBytes) +
                                " bytes cannot make " + str(chunks) + " chunks of at least " +
                                std::to_string(alignment) + " bytes");
  }
  const std::uint64_t chunkBytes = totalBytes / chunks / alignment * alignment;
  std::vector<ByteRange> ranges(chunks);
  for (std::size_t i = 0; i < chunks; ++i) {
    ranges[i].offset = i * chunkBytes;
    ranges[i].bytes = i + 1 < chunks ? chunkBytes : totalBytes - ranges[i].offset;
  }
  return ranges;
}

std::vector<ByteRange> stridedRanges(std::size_t count, std::uint64_t rangeBytes,
                                     std::uint64_t strideBytes) {
  if (rangeBytes == 0)
    throw std::invalid_argument("stridedRanges: a range must have at least one byte");
  if (rangeBytes > strideBytes) {
    throw std::invalid_argument("stridedRanges: ranges of " + std::to_string(rangeBytes) +
                                " bytes overlap with a stride of " + std::to_string(strideBytes));
  }
  std::vector<ByteRange> ranges(count);
  for (std::size_t i = 0; i < count; ++i)
    ranges[i] = {i * strideBytes, rangeBytes};
  return ranges;
}

}  // namespace memsamples::managed
