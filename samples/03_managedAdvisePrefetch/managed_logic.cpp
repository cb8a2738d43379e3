/**
 * @file managed_logic.cpp
 * @brief The CUDA-free rules of 03_managedAdvisePrefetch (see managed_logic.hpp); no cu* call.
 */
#include "managed_logic.hpp"

#include "support/text_format.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

#include <unistd.h>

namespace memsamples::managed {
namespace {

std::string str(std::uint64_t value) {
  return std::to_string(value);
}

/// The entries of an ACCESSED_BY answer that name a processor (the driver pads with INVALID).
std::vector<int> validEntries(std::vector<int> answer) {
  answer.erase(std::remove(answer.begin(), answer.end(), CU_DEVICE_INVALID), answer.end());
  std::sort(answer.begin(), answer.end());
  return answer;
}

std::string listOfDevices(const std::vector<int>& devices) {
  return "{" + joined(validEntries(devices), legacyLocationName) + "}";
}

/// The legacy int the driver reports for a location: device ordinal, CU_DEVICE_CPU, or INVALID.
int legacyValueOf(const std::optional<CUmemLocation>& where) {
  if (!where)
    return CU_DEVICE_INVALID;
  return where->type == CU_MEM_LOCATION_TYPE_DEVICE ? where->id : CU_DEVICE_CPU;
}

bool idCounts(CUmemLocationType type) {
  return type == CU_MEM_LOCATION_TYPE_DEVICE || type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
}

/// CU_MEM_LOCATION_TYPE_INVALID = 0 ... HOST_NUMA_CURRENT = 4: the types this file names.
bool knownType(CUmemLocationType type) {
  return type >= CU_MEM_LOCATION_TYPE_INVALID && type <= CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

/// The eight range attributes, in RangeAttributes' member order: the enum and its name.
constexpr std::pair<CUmem_range_attribute, const char*> kRangeAttributes[kRangeAttributeCount] = {
    {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, "READ_MOSTLY"},
    {CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, "PREFERRED_LOCATION"},
    {CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, "PREFERRED_LOCATION_TYPE"},
    {CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, "PREFERRED_LOCATION_ID"},
    {CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, "ACCESSED_BY"},
    {CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, "LAST_PREFETCH_LOCATION"},
    {CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, "LAST_PREFETCH_LOCATION_TYPE"},
    {CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, "LAST_PREFETCH_LOCATION_ID"}};

/// Compares the legacy/type/id triple of one location-valued attribute family.
void compareLocation(const std::string& family, const std::optional<CUmemLocation>& expected,
                     int gotLegacy, CUmemLocationType gotType, int gotId,
                     std::vector<AttributeMismatch>& out) {
  const std::string prefix = "CU_MEM_RANGE_ATTRIBUTE_" + family;
  const CUmemLocationType expectedType = expected ? expected->type : CU_MEM_LOCATION_TYPE_INVALID;
  const bool nodeExpected = expectedType == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  // The legacy int cannot name a NUMA node; what it returns for one is not documented.
  if (!nodeExpected && gotLegacy != legacyValueOf(expected))
    out.push_back({prefix, legacyLocationName(legacyValueOf(expected)), legacyLocationName(gotLegacy)});
  // The driver may answer a node with plain HOST: still the host, only the node is not named.
  if (gotType != expectedType && !(nodeExpected && gotType == CU_MEM_LOCATION_TYPE_HOST)) {
    const std::string orHost = nodeExpected ? " or " + locationTypeName(CU_MEM_LOCATION_TYPE_HOST) : "";
    out.push_back({prefix + "_TYPE", locationTypeName(expectedType) + orHost, locationTypeName(gotType)});
    return;  // the id means nothing when the type is already wrong
  }
  if (idCounts(gotType) && gotId != expected->id)
    out.push_back({prefix + "_ID", std::to_string(expected->id), std::to_string(gotId)});
}

}  // namespace

// ------------------------------------------------------------------------------ support and sizes

std::string describeSupport(const ManagedSupport& s) {
  return "managed memory " + str(s.managedMemory) + ", concurrent managed access " +
         str(s.concurrentManagedAccess) + ", pageable memory access " +
         str(s.pageableMemoryAccess) + ", direct host access to GPU-resident managed memory " +
         str(s.directManagedAccessFromHost) + ", host NUMA id " + std::to_string(s.hostNumaId);
}

std::string waiverReason(const ManagedSupport& support, int ordinal) {
  if (!support.managedMemory)
    return "device " + std::to_string(ordinal) +
           " cannot allocate managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 0)";
  if (support.concurrentManagedAccess && support.firstDeviceWithoutConcurrentAccess < 0)
    return {};
  const int which =
      support.concurrentManagedAccess ? support.firstDeviceWithoutConcurrentAccess : ordinal;
  return "device " + std::to_string(which) +
         " has no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 0, "
         "e.g. Windows or an old GPU): prefetching to a GPU and cuMemPrefetchBatchAsync need it "
         "on every device";
}

std::string pagingModel(const ManagedSupport& s) {
  if (coherentHostAccess(s))
    return "coherent host link (host page tables " + str(s.pageableUsesHostPageTables) +
           ", direct host access " + str(s.directManagedAccessFromHost) +
           ", e.g. Grace Hopper): the GPU may use host-resident pages where they are, over the "
           "link, instead of faulting them over, so (a) may not be fault-driven migration and (d) "
           "is not bounded by PCIe";
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
  if (vectorBytes && *vectorBytes % sizeof(float) != 0)
    throw UsageError(format("--size %s is not a multiple of %zu bytes (one element)",
                            str(*vectorBytes).c_str(), sizeof(float)));
  if (rangeBytes % pageBytes != 0)
    throw UsageError("--range-size " + str(rangeBytes) + " is not a multiple of the host page " +
                     "size (" + formatBytes(pageBytes) + "): the driver widens every range to " +
                     "whole pages, so the ranges would no longer be separate");
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
  if (sizes.spanBytes >= freeBytes / 2)
    throw UsageError(format("the batch benchmark span (%d x 2 x %s = %s) would take half of the %s "
                            "free; lower --range-size or --batch-counts", largestCount,
                            formatBytes(rangeBytes).c_str(), formatBytes(sizes.spanBytes).c_str(),
                            formatBytes(freeBytes).c_str()));
  sizes.vectorBytes =
      chooseBufferBytes(vectorBytes, defaultBytes, freeBytes - sizes.spanBytes, 6, sizeof(float));
  if (sizes.vectorBytes < minBytes) {
    throw std::runtime_error("only " + formatBytes(freeBytes) + " of device memory is free: " +
                             "too little for six " + formatBytes(minBytes) + " vectors");
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

bool sameLocation(const CUmemLocation& a, const CUmemLocation& b) {
  return a.type == b.type && (!idCounts(a.type) || a.id == b.id);
}

/// Each CUmemLocationType this file names, in the order of the enum (INVALID = 0 first): its
/// name after "CU_MEM_LOCATION_TYPE_", and its words (the id follows a device's or a node's).
constexpr std::pair<const char*, const char*> kLocationTypes[] = {
    {"INVALID", "invalid (none or mixed)"}, {"DEVICE", "device "}, {"HOST", "host"},
    {"HOST_NUMA", "host NUMA node "},
    {"HOST_NUMA_CURRENT", "host NUMA node of the calling thread"}};

std::string locationTypeName(CUmemLocationType type) {
  if (knownType(type))
    return std::string("CU_MEM_LOCATION_TYPE_") + kLocationTypes[type].first;
  return "CUmemLocationType " + std::to_string(static_cast<long long>(type));
}

std::string describeLocation(const CUmemLocation& where) {
  if (!knownType(where.type))
    return locationTypeName(where.type) + " id " + std::to_string(where.id);
  return kLocationTypes[where.type].second + (idCounts(where.type) ? std::to_string(where.id) : "");
}

std::string legacyLocationName(int value) {
  if (value == CU_DEVICE_CPU)
    return "CU_DEVICE_CPU (host)";
  if (value == CU_DEVICE_INVALID)
    return "CU_DEVICE_INVALID (none or mixed)";
  return (value >= 0 ? "device " : "unknown location ") + std::to_string(value);
}

// -------------------------------------------------------------------------------- batch prefetch

void addRange(PrefetchBatch& batch, CUdeviceptr ptr, std::size_t bytes,
              const CUmemLocation& destination) {
  if (batch.prefetchLocs.empty() || !sameLocation(batch.prefetchLocs.back(), destination)) {
    batch.prefetchLocs.push_back(destination);
    batch.prefetchLocIdxs.push_back(batch.dptrs.size());
  }
  batch.dptrs.push_back(ptr);
  batch.sizes.push_back(bytes);
}

void validatePrefetchBatch(const PrefetchBatch& batch, CUstream stream) {
  const auto refuse = [](const std::string& problem) {
    throw BatchPrefetchError("cuMemPrefetchBatchAsync: " + problem);
  };
  const std::size_t count = batch.dptrs.size();
  const std::size_t numLocations = batch.prefetchLocIdxs.size();
  const std::vector<std::size_t>& idx = batch.prefetchLocIdxs;
  if (count == 0 && batch.sizes.empty())
    refuse("the batch is empty: count must be at least 1");
  if (count != batch.sizes.size())
    refuse(format("dptrs has %zu entries but sizes has %zu: both must have count entries", count,
                  batch.sizes.size()));
  if (batch.prefetchLocs.size() != numLocations)
    refuse(format("prefetchLocs has %zu entries but prefetchLocIdxs has %zu: both must have "
                  "numPrefetchLocs entries", batch.prefetchLocs.size(), numLocations));
  if (numLocations == 0)
    refuse("no destination: numPrefetchLocs must be at least 1");
  if (numLocations > count)
    refuse(format("numPrefetchLocs (%zu) is greater than count (%zu): every location must apply "
                  "to at least one range", numLocations, count));
  if (idx[0] != 0)
    refuse(format("prefetchLocIdxs[0] is %zu, must be 0: the first location applies from the "
                  "first range on", idx[0]));
  for (std::size_t k = 1; k < numLocations; ++k) {
    if (idx[k] <= idx[k - 1])
      refuse(format("prefetchLocIdxs[%zu] = %zu is not greater than prefetchLocIdxs[%zu] = %zu: "
                    "the indices must strictly increase", k, idx[k], k - 1, idx[k - 1]));
  }
  if (idx.back() >= count)
    refuse(format("prefetchLocIdxs[%zu] = %zu is not less than count (%zu): the last location "
                  "would apply to no range", numLocations - 1, idx.back(), count));
  for (std::size_t i = 0; i < count; ++i) {
    if (batch.dptrs[i] == 0)
      refuse(format("dptrs[%zu] is null: every range must start at a managed address", i));
    if (batch.sizes[i] == 0)
      refuse(format("sizes[%zu] is 0: every range must have at least one byte", i));
    if (batch.sizes[i] - 1 > UINT64_MAX - batch.dptrs[i])
      refuse(format("range %zu (dptrs[%zu] + sizes[%zu]) wraps around the address space", i, i, i));
  }
  for (std::size_t k = 0; k < batch.prefetchLocs.size(); ++k) {
    const CUmemLocation& where = batch.prefetchLocs[k];
    if (!knownType(where.type) || where.type == CU_MEM_LOCATION_TYPE_INVALID)
      refuse(format("prefetchLocs[%zu] has type %s: a prefetch goes to a DEVICE, HOST, HOST_NUMA "
                    "or HOST_NUMA_CURRENT location", k, locationTypeName(where.type).c_str()));
    if (idCounts(where.type) && where.id < 0)
      refuse(format("prefetchLocs[%zu] is %s with id %d: the id must be a device ordinal or NUMA "
                    "node >= 0", k, locationTypeName(where.type).c_str(), where.id));
  }
  if (stream == nullptr || stream == CU_STREAM_LEGACY)
    refuse("the legacy NULL stream is refused by the driver (CUDA_ERROR_INVALID_VALUE): enqueue "
           "the batch on a created stream");
}


// [chunk-batch]
namespace {
constexpr std::size_t kChunks = 10;        // step 6 cuts each vector into ten chunks
constexpr std::size_t kDeviceChunks = 6;   // chunks 0-5 go to the GPU, 6-9 to the host
constexpr std::uint64_t kChunkAlignment = 64ull << 10;
}  // namespace

PrefetchBatch chunkRanges(const std::vector<CUdeviceptr>& vectors, std::uint64_t bytes) {
  const std::vector<ByteRange> chunks = splitIntoChunks(bytes, kChunks, kChunkAlignment);
  PrefetchBatch batch;
  // Chunks [first, last) of every vector, one vector after the other.
  const auto addChunks = [&](std::size_t first, std::size_t last) {
    for (const CUdeviceptr vector : vectors) {
      for (std::size_t i = first; i < last; ++i) {
        batch.dptrs.push_back(vector + chunks[i].offset);
        batch.sizes.push_back(chunks[i].bytes);
      }
    }
  };
  addChunks(0, kDeviceChunks);        // chunks 0-5: for A, B and C, ranges 0-17 (the GPU's part)
  addChunks(kDeviceChunks, kChunks);  // chunks 6-9: ranges 18-29 (the host's part)
  return batch;
}

std::uint64_t gpuPartBytes(std::uint64_t bytes) {
  return splitIntoChunks(bytes, kChunks, kChunkAlignment).at(kDeviceChunks).offset;
}
// [chunk-batch]

CUmemLocation destinationOf(const PrefetchBatch& batch, std::size_t range) {
  if (range >= batch.dptrs.size() || batch.prefetchLocIdxs.empty())
    throw std::out_of_range(
        format("destinationOf: the batch has no range %zu (%zu ranges)", range, batch.dptrs.size()));
  // The last group that starts at or before the range holds it.
  const auto after =
      std::upper_bound(batch.prefetchLocIdxs.begin(), batch.prefetchLocIdxs.end(), range);
  return batch.prefetchLocs.at(static_cast<std::size_t>(after - batch.prefetchLocIdxs.begin()) - 1);
}

std::string describeBatch(const PrefetchBatch& batch) {
  return str(batch.dptrs.size()) + " ranges; prefetchLocs = {" +
         joined(batch.prefetchLocs, describeLocation) + "}, prefetchLocIdxs = {" +
         joined(batch.prefetchLocIdxs, str) + "}, numPrefetchLocs = " + str(batch.prefetchLocs.size());
}

// ------------------------------------------------------------------------------ range attributes

RangeAttributeQuery::RangeAttributeQuery(int accessedBySlots) {
  RangeAttributes& a = said;
  a.accessedBy.assign(static_cast<std::size_t>(std::max(accessedBySlots, 1)), CU_DEVICE_INVALID);
  data = {&a.readMostly,         &a.preferredLocation,       &a.preferredLocationType,
          &a.preferredLocationId, a.accessedBy.data(),        &a.lastPrefetchLocation,
          &a.lastPrefetchLocationType, &a.lastPrefetchLocationId};
  sizes = {sizeof(int), sizeof(int), sizeof(CUmemLocationType), sizeof(int),
           a.accessedBy.size() * sizeof(int), sizeof(int), sizeof(CUmemLocationType), sizeof(int)};
  for (const auto& [attribute, name] : kRangeAttributes)
    asked.push_back(attribute);
}

std::string describeRangeAttributes(const RangeAttributes& a) {
  return "read-mostly " + std::to_string(a.readMostly) + ", preferred " +
         describeLocation({a.preferredLocationType, a.preferredLocationId}) +
         " (legacy " + legacyLocationName(a.preferredLocation) + "), accessed-by " +
         listOfDevices(a.accessedBy) + ", last prefetch " +
         describeLocation({a.lastPrefetchLocationType, a.lastPrefetchLocationId}) +
         " (legacy " + legacyLocationName(a.lastPrefetchLocation) + ")";
}

std::vector<AttributeMismatch> compareRangeAttributes(const ExpectedRange& expected,
                                                      const RangeAttributes& got) {
  std::vector<AttributeMismatch> out;
  const int expectedReadMostly = expected.readMostly ? 1 : 0;
  if (got.readMostly != expectedReadMostly)
    out.push_back({"CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY", std::to_string(expectedReadMostly),
                   std::to_string(got.readMostly)});
  compareLocation("PREFERRED_LOCATION", expected.preferred, got.preferredLocation,
                  got.preferredLocationType, got.preferredLocationId, out);
  if (validEntries(got.accessedBy) != validEntries(expected.accessedBy))
    out.push_back({"CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY", listOfDevices(expected.accessedBy),
                   listOfDevices(got.accessedBy)});
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
  // Each attribute as text, in the order of the members.
  const auto fields = [](const RangeAttributes& a) {
    return std::vector<std::string>{
        std::to_string(a.readMostly),       legacyLocationName(a.preferredLocation),
        locationTypeName(a.preferredLocationType), std::to_string(a.preferredLocationId),
        listOfDevices(a.accessedBy),        legacyLocationName(a.lastPrefetchLocation),
        locationTypeName(a.lastPrefetchLocationType), std::to_string(a.lastPrefetchLocationId)};
  };
  const std::vector<std::string> one = fields(individually);
  const std::vector<std::string> all = fields(atOnce);
  std::vector<AttributeMismatch> out;
  for (std::size_t i = 0; i < kRangeAttributeCount; ++i) {
    if (one[i] != all[i])
      out.push_back({std::string("CU_MEM_RANGE_ATTRIBUTE_") + kRangeAttributes[i].second, one[i],
                     all[i]});
  }
  return out;
}

// [advice-table]
std::vector<AdviceStep> adviceSteps(std::uint64_t bytes, int ordinal, int hostNumaId) {
  const CUmemLocation gpu = {CU_MEM_LOCATION_TYPE_DEVICE, ordinal};
  const CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};  // the id of HOST is ignored
  const CUmemLocation node = {CU_MEM_LOCATION_TYPE_HOST_NUMA, hostNumaId};
  const std::vector<ByteRange> halves = splitIntoChunks(bytes, 2, 64ull << 10);
  const ByteRange all{0, bytes};
  const std::string onGpu = describeLocation(gpu);
  // What a read-back must say: {read-mostly, preferred location, accessed-by, last prefetch}.
  const ExpectedRange none;
  const ExpectedRange prefersGpu{false, gpu, {}, {}};
  const ExpectedRange prefersHost{false, host, {}, {}};
  const ExpectedRange prefersNode{false, node, {}, {}};
  const ExpectedRange accessed{false, {}, {ordinal}, {}};
  const ExpectedRange readMostly{true, {}, {}, {}};
  const ExpectedRange firstHalf{true, gpu, {ordinal}, {}};  // its three pieces of advice
  // The location of a read-mostly advice is ignored; the device is given.
  std::vector<AdviceStep> steps = {
      {"no advice yet", all, std::nullopt, {}, none},
      {"SET_PREFERRED_LOCATION " + onGpu, all, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu, prefersGpu},
      {"SET_PREFERRED_LOCATION host", all, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host, prefersHost},
      {"SET_PREFERRED_LOCATION " + describeLocation(node), all,
       CU_MEM_ADVISE_SET_PREFERRED_LOCATION, node, prefersNode, true},
      {"UNSET_PREFERRED_LOCATION", all, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host, none},
      {"SET_ACCESSED_BY " + onGpu, all, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu, accessed},
      {"UNSET_ACCESSED_BY " + onGpu, all, CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu, none},
      {"SET_READ_MOSTLY", all, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu, readMostly},
      {"UNSET_READ_MOSTLY", all, CU_MEM_ADVISE_UNSET_READ_MOSTLY, gpu, none},
      // Different advice on the two halves: a query over both reports no single value.
      {"first half: preferred GPU", halves[0], CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu, {}},
      {"first half: read-mostly", halves[0], CU_MEM_ADVISE_SET_READ_MOSTLY, gpu, {}},
      {"first half: accessed-by", halves[0], CU_MEM_ADVISE_SET_ACCESSED_BY, gpu, {}},
      {"second half: preferred host", halves[1], CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host, {}},
      {"first half (GPU, read-mostly, accessed-by)", halves[0], std::nullopt, {}, firstHalf},
      {"second half (preferred host)", halves[1], std::nullopt, {}, prefersHost},
      {"whole range (mixed values)", all, std::nullopt, {}, none},
      {"unset preferred location", all, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, gpu, {}},
      {"unset read-mostly", all, CU_MEM_ADVISE_UNSET_READ_MOSTLY, gpu, {}},
      {"all advice unset again", all, CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu, none}};
  if (hostNumaId < 0)  // the device names no host NUMA node: there is none to advise
    steps.erase(steps.begin() + 3);
  return steps;
}
// [advice-table]

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
  const std::string range = "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/_SIZE";
  const auto hostAddress = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(got.hostPointer));
  expect(got.isManaged == 1, "CU_POINTER_ATTRIBUTE_IS_MANAGED", "1", std::to_string(got.isManaged));
  expect(got.deviceOrdinal == ordinal, "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL",
         std::to_string(ordinal), std::to_string(got.deviceOrdinal));
  // The range the driver tracks must contain the whole allocation (for cuMemAllocManaged it is
  // the allocation itself), and be the same from inside.
  expect(got.rangeStart <= ptr && got.rangeStart + got.rangeSize >= ptr + bytes, range.c_str(),
         "a range containing " + span(ptr, bytes), span(got.rangeStart, got.rangeSize));
  expect(inside.rangeStart == got.rangeStart && inside.rangeSize == got.rangeSize,
         (range + " from inside").c_str(), "the same range as from the start",
         span(inside.rangeStart, inside.rangeSize));
  expect(got.devicePointer == ptr, "CU_POINTER_ATTRIBUTE_DEVICE_POINTER", hex(ptr),
         hex(got.devicePointer));
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
  // CU_MEMORYTYPE_HOST = 1 ... CU_MEMORYTYPE_UNIFIED = 4, in this order.
  static const char* const kNames[] = {"CU_MEMORYTYPE_HOST", "CU_MEMORYTYPE_DEVICE",
                                       "CU_MEMORYTYPE_ARRAY", "CU_MEMORYTYPE_UNIFIED"};
  if (memoryType >= CU_MEMORYTYPE_HOST && memoryType <= CU_MEMORYTYPE_UNIFIED)
    return kNames[memoryType - CU_MEMORYTYPE_HOST];
  return "unknown CUmemorytype";
}

// ----------------------------------------------------------------------------- judging an answer

Judgement judge(int said, int expected) {
  Judgement j{std::to_string(said), {}, 1};
  if (said != expected)
    j.mismatches.push_back({"", std::to_string(expected), std::to_string(said)});
  return j;
}

Judgement judge(const CUmemLocation& said, const CUmemLocation& expected) {
  Judgement j{describeLocation(said), {}, 1};
  if (!sameLocation(said, expected))
    j.mismatches.push_back({"", describeLocation(expected), describeLocation(said)});
  return j;
}

Judgement judge(const std::vector<int>& accessedBy, const std::vector<int>& expected) {
  Judgement j{listOfDevices(accessedBy), {}, 1};
  if (validEntries(accessedBy) != validEntries(expected))
    j.mismatches.push_back({"", listOfDevices(expected), listOfDevices(accessedBy)});
  return j;
}

Judgement judge(const RangeAttributes& said, const ExpectedRange& expected) {
  Judgement j{describeRangeBriefly(said), compareRangeAttributes(expected, said),
              kRangeAttributeCount};
  // Both answers for a node are right; which one this driver gives is worth seeing.
  if (const std::string node = hostNumaReadBack(expected, said); !node.empty())
    j.said += " (" + node + ")";
  return j;
}

Judgement judge(const std::vector<RangeAttributes>& said, const PrefetchBatch& batch) {
  if (said.size() != batch.dptrs.size())
    throw std::invalid_argument(format("judge: %zu read-backs for a batch of %zu ranges",
                                       said.size(), batch.dptrs.size()));
  Judgement j{str(said.size()) + " ranges, each last prefetched to its own destination", {},
              kRangeAttributeCount * said.size()};
  for (std::size_t i = 0; i < said.size(); ++i) {
    const ExpectedRange expected = prefetchedTo(destinationOf(batch, i));
    for (AttributeMismatch m : compareRangeAttributes(expected, said[i])) {
      m.attribute = "range " + str(i) + ": " + m.attribute;
      j.mismatches.push_back(std::move(m));
    }
  }
  if (!j.mismatches.empty())
    j.said = str(j.mismatches.size()) + " attributes differ";
  return j;
}

Judgement judge(const PointerAnswers& said, const ManagedRange& expected) {
  Judgement j{"managed " + str(said.atStart.isManaged) + ", device " +
                  std::to_string(said.atStart.deviceOrdinal) + ", range " +
                  hex(said.atStart.rangeStart) + " + " + formatBytes(said.atStart.rangeSize),
              comparePointerAttributes(said.atStart, said.inside, expected.ptr, expected.bytes,
                                       expected.ordinal),
              kPointerAttributeChecks};
  return j;
}

std::string describeRangeBriefly(const RangeAttributes& a) {
  const auto place = [](CUmemLocationType type, int id) {
    if (type == CU_MEM_LOCATION_TYPE_INVALID)
      return std::string("none");
    return describeLocation({type, id});
  };
  return "read-mostly " + std::to_string(a.readMostly) + ", preferred " +
         place(a.preferredLocationType, a.preferredLocationId) + ", accessed-by " +
         listOfDevices(a.accessedBy) + ", last prefetch " +
         place(a.lastPrefetchLocationType, a.lastPrefetchLocationId);
}


}  // namespace memsamples::managed
