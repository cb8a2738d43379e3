/**
 * @file managed_logic.hpp
 * @brief The CUDA-free rules of 03_managedAdvisePrefetch: what the device must support, how
 *        large the buffers may be, batch-prefetch validation, location names, what a range or
 *        pointer attribute should read back, and how buffers are cut into ranges.
 *
 * Nothing declared here calls the driver (cuda.h is included for its types only): the lesson,
 * managedAdvisePrefetch.cpp, writes every call and hands the answers to these functions, so every
 * rule and every message is unit tested on machines without a GPU
 * (ctest/unit/managedAdvisePrefetch).
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "support/host_memory.hpp"  // HostMemory

/// Managed-memory helpers of the CUDA Memory Samples (03_managedAdvisePrefetch, reused by 06).
namespace memsamples::managed {

// ------------------------------------------------------------------------------------------------
/// @name What the device supports, and how large the buffers may be
/// @{

/// The device attributes about managed memory that the sample reads (cuDeviceGetAttribute).
struct ManagedSupport {
  int managedMemory = 0;                ///< CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY.
  int concurrentManagedAccess = 0;      ///< CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS.
  int pageableMemoryAccess = 0;         ///< CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS.
  int directManagedAccessFromHost = 0;  ///< ..._DIRECT_MANAGED_MEM_ACCESS_FROM_HOST.
  int pageableUsesHostPageTables = 0;   ///< ..._PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES.
  int hostNumaId = -1;                  ///< CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (-1: none).
  int deviceCount = 0;                  ///< cuDeviceGetCount.
  /// The first device of the system without concurrent managed access, or -1.
  int firstDeviceWithoutConcurrentAccess = -1;
};

/// The attributes as one line for people: "managed memory 1, concurrent managed access 1, ...".
std::string describeSupport(const ManagedSupport& support);

/**
 * Why device @p ordinal cannot run the sample, or an empty string: it needs managed memory, and
 * concurrent managed access on every device (prefetching to a GPU, most advice and
 * cuMemPrefetchBatchAsync need it).
 */
std::string waiverReason(const ManagedSupport& support, int ordinal);

/**
 * True when the GPU reaches host memory coherently: it walks the host's page tables
 * (PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES) or the host reads GPU-resident managed memory
 * without migrating it (DIRECT_MANAGED_MEM_ACCESS_FROM_HOST), as on Grace Hopper over NVLink-C2C.
 */
bool coherentHostAccess(const ManagedSupport& support);

/**
 * Which kind of machine the demand-paging figures describe, for people: on a GPU behind PCIe
 * a GPU access to a host-resident page faults and the page migrates; on a coherent system the GPU
 * may use the page where it is, over the link, so the same kernel measures something else.
 */
std::string pagingModel(const ManagedSupport& support);

/// The host's page size, sysconf(_SC_PAGESIZE): 4 KiB on x86-64, 4, 16 or 64 KiB on arm64.
/// @throws std::runtime_error when sysconf cannot say.
std::uint64_t hostPageBytes();

/**
 * Checks what the command line can get wrong before the driver is asked anything, so that a
 * mistake is reported (exit 1) before any waiver: the vector size must be a whole number of
 * floats, and a benchmark range a whole number of host pages of @p pageBytes (the driver widens
 * every range to whole pages, so the ranges would no longer be separate).
 * @throws UsageError naming the option; std::invalid_argument when @p pageBytes is 0.
 */
void checkSizeOptions(const std::optional<std::uint64_t>& vectorBytes, std::uint64_t rangeBytes,
                      std::uint64_t pageBytes = hostPageBytes());

/// The sizes of one run.
struct ManagedSizes {
  std::uint64_t vectorBytes = 0;  ///< Bytes per vector (A, B, C and the cuMemAlloc references).
  std::uint64_t spanBytes = 0;    ///< The managed span of the batch-vs-single benchmark.
};

/**
 * The sizes of one run, never more than the device has free: six vectors (three managed, three
 * cuMemAlloc for the reference) and the benchmark span (the largest of @p batchCounts ranges of
 * @p rangeBytes, one every 2 x @p rangeBytes) must fit in @p freeBytes together. cuMemGetInfo
 * counts managed pages only once they are on the GPU, so the sum is checked here, once, before
 * anything is allocated: an over-subscribed GPU evicts pages and can stall every process on it.
 * @param vectorBytes `--size`, if given (else @p defaultBytes, reduced to fit).
 * @param defaultBytes the benchmark size per vector.
 * @param minBytes the smallest vector the steps can cut into their chunks.
 * @param rangeBytes `--range-size`.
 * @param batchCounts `--batch-counts` (not empty).
 * @param freeBytes cuMemGetInfo's free memory.
 * @param host host memory (hostMemoryAvailable()): it must hold four vectors, A, B and C while
 *        their pages are on the host and the pinned vector of the prefetch benchmark; checked
 *        after the device, whose over-subscription is the dangerous one.
 * @throws UsageError for a size or span that does not fit ("--size 1.00 TiB needs 6 buffers but
 *         the device has only ..."), std::runtime_error when even @p minBytes does not fit.
 */
ManagedSizes planManagedSizes(const std::optional<std::uint64_t>& vectorBytes,
                              std::uint64_t defaultBytes, std::uint64_t minBytes,
                              std::uint64_t rangeBytes, const std::vector<int>& batchCounts,
                              std::uint64_t freeBytes, const HostMemory& host);

/// "Vectors: 1.00 GiB each (3 managed + 3 cuMemAlloc), batch span 512 MiB; 139 GiB of 140 GiB
/// free".
std::string describeSizes(const ManagedSizes& sizes, std::uint64_t freeBytes,
                          std::uint64_t totalBytes);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Locations
/// @{

/// CU_MEM_LOCATION_TYPE_DEVICE with the device ordinal @p ordinal.
CUmemLocation deviceLocation(int ordinal);
/// CU_MEM_LOCATION_TYPE_HOST (the id is ignored by the driver; it is set to 0).
CUmemLocation hostLocation();
/// CU_MEM_LOCATION_TYPE_HOST_NUMA on host NUMA node @p node.
CUmemLocation hostNumaLocation(int node);

/**
 * True when @p a and @p b name the same place. The id only counts where the driver reads it
 * (DEVICE and HOST_NUMA); for HOST and HOST_NUMA_CURRENT it is ignored.
 */
bool sameLocation(const CUmemLocation& a, const CUmemLocation& b);

/// "CU_MEM_LOCATION_TYPE_DEVICE", ..., or "CUmemLocationType 42" for an unknown value.
std::string locationTypeName(CUmemLocationType type);

/// For people: "device 0", "host", "host NUMA node 1", "host NUMA node of the calling thread",
/// "invalid (none or mixed)".
std::string describeLocation(const CUmemLocation& location);

/// A legacy (int) location as returned by CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION and
/// LAST_PREFETCH_LOCATION: "device 0", "CU_DEVICE_CPU (host)", "CU_DEVICE_INVALID (none or mixed)".
std::string legacyLocationName(int value);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Batch prefetch
/// @{

/// A batch that cuMemPrefetchBatchAsync would reject; what() says which rule and why.
class BatchPrefetchError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/**
 * The four arrays of one cuMemPrefetchBatchAsync call.
 *
 * Range i is [dptrs[i], dptrs[i] + sizes[i]). Location k, locations[k], applies to the ranges
 * locationStarts[k] .. locationStarts[k+1] - 1 (the last one up to the end of the batch): the
 * driver's `prefetchLocIdxs`. Ten ranges of which the first six go to the GPU and the last four
 * to the host are therefore `locations = {device, host}`, `locationStarts = {0, 6}`.
 */
struct PrefetchBatch {
  std::vector<CUdeviceptr> dptrs;        ///< Start of each range (`dptrs`).
  std::vector<std::size_t> sizes;        ///< Bytes of each range (`sizes`).
  std::vector<CUmemLocation> locations;  ///< Destinations (`prefetchLocs`).
  std::vector<std::size_t>
      locationStarts;  ///< First range of each destination (`prefetchLocIdxs`).
};

/**
 * Builds a PrefetchBatch one range at a time, so the index arrays are right by construction:
 * a range whose destination differs from the previous range's starts a new location entry.
 */
class PrefetchBatchBuilder {
 public:
  /// Appends the range [@p ptr, @p ptr + @p bytes) to be prefetched to @p destination.
  PrefetchBatchBuilder& add(CUdeviceptr ptr, std::size_t bytes, const CUmemLocation& destination);
  /// The batch built so far.
  const PrefetchBatch& batch() const noexcept { return batch_; }

 private:
  PrefetchBatch batch_;
};

/**
 * Why cuMemPrefetchBatchAsync would reject @p batch on @p stream, or an empty string.
 *
 * The rules, checked in this order (the first broken one is reported):
 * 1. at least one range (count > 0);
 * 2. `dptrs` and `sizes` have the same length (count);
 * 3. `prefetchLocs` and `prefetchLocIdxs` have the same length (numPrefetchLocs);
 * 4. at least one location, and numPrefetchLocs <= count;
 * 5. `prefetchLocIdxs[0] == 0`, the indices strictly increase, and the last one is < count;
 * 6. every range has a non-null start, at least one byte, and does not wrap around;
 * 7. every location is DEVICE (id >= 0), HOST, HOST_NUMA (id >= 0) or HOST_NUMA_CURRENT;
 * 8. the stream is a created one: the legacy NULL stream (0 or CU_STREAM_LEGACY) is refused by
 *    the driver with CUDA_ERROR_INVALID_VALUE.
 */
std::string prefetchBatchProblem(const PrefetchBatch& batch, CUstream stream);

/// Throws BatchPrefetchError("cuMemPrefetchBatchAsync: <problem>") when prefetchBatchProblem()
/// finds one.
void validatePrefetchBatch(const PrefetchBatch& batch, CUstream stream);

/// The destination of range @p range of a valid @p batch: the location whose group holds it.
/// @throws std::out_of_range when the batch has no such range.
CUmemLocation destinationOf(const PrefetchBatch& batch, std::size_t range);

/// The arrays for people: "30 ranges; prefetchLocs = {device 0, host}, prefetchLocIdxs =
/// {0, 18}, numPrefetchLocs = 2".
std::string describeBatch(const PrefetchBatch& batch);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Range attributes: what was read, what was expected
/// @{

/// Every CU_MEM_RANGE_ATTRIBUTE_* of one managed range, as the driver returned them.
struct RangeAttributes {
  int readMostly = 0;  ///< READ_MOSTLY: 1 when every page is read-duplicated.
  int preferredLocation = CU_DEVICE_INVALID;  ///< PREFERRED_LOCATION (legacy int).
  CUmemLocationType preferredLocationType = CU_MEM_LOCATION_TYPE_INVALID;  ///< ..._TYPE
  int preferredLocationId = 0;  ///< PREFERRED_LOCATION_ID (meaningful for DEVICE, HOST_NUMA).
  std::vector<int> accessedBy;  ///< ACCESSED_BY, padded with CU_DEVICE_INVALID by the driver.
  int lastPrefetchLocation = CU_DEVICE_INVALID;  ///< LAST_PREFETCH_LOCATION (legacy int).
  CUmemLocationType lastPrefetchLocationType = CU_MEM_LOCATION_TYPE_INVALID;  ///< ..._TYPE
  int lastPrefetchLocationId = 0;  ///< LAST_PREFETCH_LOCATION_ID.
};

/// Number of attributes a RangeAttributes holds (each comparison counts as one check).
inline constexpr std::size_t kRangeAttributeCount = 8;

/**
 * The arguments of cuMemRangeGetAttributes for all of a RangeAttributes, three parallel arrays;
 * entry i also gives cuMemRangeGetAttribute's (data, dataSize, attribute) for one attribute.
 */
struct RangeAttributeQuery {
  std::vector<void*> data;                   ///< Where each answer goes (inside the target).
  std::vector<std::size_t> sizes;            ///< Its size in bytes, as the driver requires.
  std::vector<CUmem_range_attribute> asked;  ///< Which attribute.
};

/**
 * The query that fills @p target, every attribute in the order of its members. ACCESSED_BY gets
 * @p accessedBySlots entries (at least 1): room for every processor the answer may list.
 * Sizes are what cuMemRangeGetAttribute requires: 4 bytes for the ints, sizeof the enum for the
 * _TYPE attributes, a non-zero multiple of 4 for ACCESSED_BY. @p target must outlive the query
 * and must not be changed while it is used.
 */
RangeAttributeQuery rangeAttributeQuery(RangeAttributes& target, int accessedBySlots);

/// One line for people, e.g. "read-mostly 0, preferred device 0 (legacy 0), accessed-by {0},
/// last prefetch host (legacy CU_DEVICE_CPU (host))".
std::string describeRangeAttributes(const RangeAttributes& attributes);

/// What a program that set some advice should read back for a whole range.
struct ExpectedRange {
  bool readMostly = false;                    ///< SET_READ_MOSTLY on every page.
  std::optional<CUmemLocation> preferred;     ///< Same preferred location on every page, or none.
  std::vector<int> accessedBy;                ///< Devices with SET_ACCESSED_BY on every page.
  std::optional<CUmemLocation> lastPrefetch;  ///< Same last prefetch target on every page, or none.
};

/// A range without advice whose last prefetch went to @p destination.
ExpectedRange prefetchedTo(const CUmemLocation& destination);

/// One attribute that did not read back as expected.
struct AttributeMismatch {
  std::string attribute;  ///< e.g. "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE".
  std::string expected;   ///< What the advice (or its absence) implies.
  std::string got;        ///< What the driver returned.
};

/**
 * Compares what the driver returned with what the advice implies, by the rules documented for
 * cuMemRangeGetAttribute:
 * - READ_MOSTLY is 1 only when every page is read-mostly;
 * - PREFERRED_LOCATION(_TYPE/_ID) name the location when all pages share it, else INVALID
 *   (CU_DEVICE_INVALID for the legacy value, which is not compared for HOST_NUMA since the
 *   legacy int cannot express a node); the _ID is compared only for DEVICE and HOST_NUMA;
 * - a HOST_NUMA location may come back as HOST_NUMA with the same node or as plain HOST (the
 *   driver need not name the node: the H200 VM, one node online, driver 580, says HOST); any
 *   other type, or HOST_NUMA with another node, is a mismatch;
 * - ACCESSED_BY lists exactly the devices advised for the whole range, the rest of the array
 *   being CU_DEVICE_INVALID;
 * - LAST_PREFETCH_LOCATION(_TYPE/_ID) follow the same rules as the preferred location.
 * @return one entry per attribute that differs; empty when everything matches.
 */
std::vector<AttributeMismatch> compareRangeAttributes(const ExpectedRange& expected,
                                                      const RangeAttributes& got);

/**
 * For a range whose expected preferred location is a host NUMA node: which of the two accepted
 * answers the driver gave, e.g. "the driver reports host NUMA node 1 as
 * CU_MEM_LOCATION_TYPE_HOST (no node named)". Empty for any other expectation.
 */
std::string hostNumaReadBack(const ExpectedRange& expected, const RangeAttributes& got);

/// The attributes (by name) in which two reads of the same range differ, e.g. one
/// cuMemRangeGetAttributes call against eight cuMemRangeGetAttribute calls.
std::vector<AttributeMismatch> differingAttributes(const RangeAttributes& individually,
                                                   const RangeAttributes& atOnce);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Pointer attributes
/// @{

/// What cuPointerGetAttributes says about an address.
struct PointerAttributes {
  unsigned int memoryType = 0;    ///< CU_POINTER_ATTRIBUTE_MEMORY_TYPE (a CUmemorytype).
  int isManaged = 0;              ///< CU_POINTER_ATTRIBUTE_IS_MANAGED.
  int deviceOrdinal = -1;         ///< CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL.
  CUdeviceptr rangeStart = 0;     ///< CU_POINTER_ATTRIBUTE_RANGE_START_ADDR.
  std::size_t rangeSize = 0;      ///< CU_POINTER_ATTRIBUTE_RANGE_SIZE.
  CUdeviceptr devicePointer = 0;  ///< CU_POINTER_ATTRIBUTE_DEVICE_POINTER.
  void* hostPointer = nullptr;    ///< CU_POINTER_ATTRIBUTE_HOST_POINTER.
  CUcontext context = nullptr;    ///< CU_POINTER_ATTRIBUTE_CONTEXT.
};

/// Number of checks comparePointerAttributes() makes.
inline constexpr std::size_t kPointerAttributeChecks = 6;

/**
 * Compares what cuPointerGetAttributes said about a managed allocation [@p ptr, @p ptr +
 * @p bytes) made in a context of device @p ordinal (@p got) and about an address inside it
 * (@p inside) with what it must say: managed, that device, a range that contains the allocation
 * (for cuMemAllocManaged, the allocation itself) and is the same from inside, and one address for
 * the device and the host. @return one entry per check that failed.
 */
std::vector<AttributeMismatch> comparePointerAttributes(const PointerAttributes& got,
                                                        const PointerAttributes& inside,
                                                        CUdeviceptr ptr, std::size_t bytes,
                                                        int ordinal);

/// Several lines for people (each indented by two spaces and ended by a newline), from what was
/// read at the allocation's start (@p got) and in its middle (@p inside, at @p insideAddress);
/// @p sampleContext is the context the sample created.
std::string describePointerAttributes(const PointerAttributes& got, const PointerAttributes& inside,
                                      CUdeviceptr insideAddress, CUcontext sampleContext);

/// "CU_MEMORYTYPE_DEVICE", ..., or "unknown CUmemorytype".
const char* memoryTypeName(unsigned int memoryType);

/// "0x7f4742000000".
std::string hex(std::uint64_t value);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Verdict bookkeeping
/// @{

/**
 * Collects the sample's assertions. Every failed one becomes a line naming what was checked,
 * what was expected and what was found; the verdict is PASS only when there is none.
 */
class Checklist {
 public:
  /// Records one check; when @p ok is false it adds "<what>: expected <expected>, got <got>".
  bool expect(bool ok, const std::string& what, const std::string& expected,
              const std::string& got);
  /// Records @p checked checks (one per attribute compared); each mismatch adds
  /// "<context>: <attribute>: expected <expected>, got <got>". @return true when none.
  bool expectAttributes(const std::string& context, const std::vector<AttributeMismatch>& found,
                        std::size_t checked = kRangeAttributeCount);
  /// How many checks were recorded.
  std::size_t checks() const noexcept { return checks_; }
  /// The failure lines, in the order they happened.
  const std::vector<std::string>& failures() const noexcept { return failures_; }
  /// True when no check failed.
  bool passed() const noexcept { return failures_.empty(); }

 private:
  std::size_t checks_ = 0;
  std::vector<std::string> failures_;
};

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Cutting buffers into ranges
/// @{

/// A byte range inside a buffer.
struct ByteRange {
  std::uint64_t offset = 0;  ///< First byte, from the start of the buffer.
  std::uint64_t bytes = 0;   ///< Length in bytes (never 0).
};

/**
 * Cuts @p totalBytes into @p chunks consecutive, non-empty ranges whose boundaries are multiples
 * of @p alignment; the last chunk takes the remainder. Aligned boundaries keep advice and
 * prefetch exact: the driver widens every range to whole CPU pages.
 * @throws std::invalid_argument when @p chunks or @p alignment is 0, or @p totalBytes is smaller
 *         than @p chunks x @p alignment.
 */
std::vector<ByteRange> splitIntoChunks(std::uint64_t totalBytes, std::size_t chunks,
                                       std::uint64_t alignment);

/**
 * @p count ranges of @p rangeBytes, one every @p strideBytes: [0, r), [s, s + r), ... With a
 * stride larger than the range the ranges never touch, so the driver cannot merge neighbours and
 * each one is a separate piece of work, as in a real scattered working set.
 * @throws std::invalid_argument when @p rangeBytes is 0 or larger than @p strideBytes.
 */
std::vector<ByteRange> stridedRanges(std::size_t count, std::uint64_t rangeBytes,
                                     std::uint64_t strideBytes);

/// @}

}  // namespace memsamples::managed
