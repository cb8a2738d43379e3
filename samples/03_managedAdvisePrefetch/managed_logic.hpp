/**
 * @file managed_logic.hpp
 * @brief The CUDA-free rules of 03_managedAdvisePrefetch: what the device must support, how large
 *        the buffers may be, the advice table, batch-prefetch arrays and their rules, what a range
 *        or pointer attribute must read back.
 *
 * Nothing here calls the driver (cuda.h is included for its types): the lesson writes every call
 * and hands the answers to these functions, which are unit tested on machines without a GPU
 * (ctest/unit/managedAdvisePrefetch).
 */
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "memsamples.hpp"            // UsageError
#include "support/byte_ranges.hpp"  // ByteRange, splitIntoChunks, stridedRanges
#include "support/checklist.hpp"    // AttributeMismatch, Checklist
#include "support/host_memory.hpp"  // HostMemory

/// Managed-memory helpers of 03_managedAdvisePrefetch.
namespace memsamples::managed {

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
  int firstDeviceWithoutConcurrentAccess = -1;  ///< The first such device of the system, or -1.
};

/// "managed memory 1, concurrent managed access 1, ...".
std::string describeSupport(const ManagedSupport& support);

/// Why device @p ordinal cannot run the sample, or "": it needs managed memory, and concurrent
/// managed access on every device (prefetch to a GPU and cuMemPrefetchBatchAsync need it).
std::string waiverReason(const ManagedSupport& support, int ordinal);

/// True on a hardware-coherent machine (Grace Hopper over NVLink-C2C), where the two
/// attributes go together: the GPU reaches pageable host memory through the host's page tables
/// (PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES), and the host reaches managed memory on the GPU
/// without migrating it (DIRECT_MANAGED_MEM_ACCESS_FROM_HOST). There a GPU access to a host page
/// need not migrate it either.
inline bool coherentHostAccess(const ManagedSupport& support) {
  return support.pageableUsesHostPageTables != 0 || support.directManagedAccessFromHost != 0;
}

/// Which kind of machine the demand-paging figures describe: PCIe (faults migrate pages) or a
/// coherent link (the GPU may use host pages where they are).
std::string pagingModel(const ManagedSupport& support);

/// sysconf(_SC_PAGESIZE). @throws std::runtime_error when sysconf cannot say.
std::uint64_t hostPageBytes();

/**
 * What the command line can get wrong, checked before the driver is asked (exit 1 before any
 * waiver): `--size` must be whole floats, `--range-size` whole host pages of @p pageBytes (the
 * driver widens ranges to whole pages, so they would no longer be separate).
 * @throws UsageError; std::invalid_argument when @p pageBytes is 0.
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
 * cuMemAlloc) and the benchmark span (the largest of @p batchCounts ranges of @p rangeBytes, one
 * every 2 x @p rangeBytes) must fit in @p freeBytes together, checked once before anything is
 * allocated (cuMemGetInfo counts managed pages only once they are on the GPU). Four vectors must
 * fit in @p host: A, B and C while their pages are there, and one host copy of the measurements.
 * @throws UsageError for a `--size` (@p vectorBytes) or span that does not fit,
 *         std::runtime_error when even @p minBytes does not.
 */
ManagedSizes planManagedSizes(const std::optional<std::uint64_t>& vectorBytes,
                              std::uint64_t defaultBytes, std::uint64_t minBytes,
                              std::uint64_t rangeBytes, const std::vector<int>& batchCounts,
                              std::uint64_t freeBytes, const HostMemory& host);

/// "Vectors: 1.00 GiB each (3 managed + 3 cuMemAlloc), batch span 512 MiB; 139 GiB of ... free".
std::string describeSizes(const ManagedSizes& sizes, std::uint64_t freeBytes,
                          std::uint64_t totalBytes);

/// @}
/// @name Locations
/// @{

/// Same place: the id counts only for DEVICE and HOST_NUMA.
bool sameLocation(const CUmemLocation& a, const CUmemLocation& b);

/// "CU_MEM_LOCATION_TYPE_DEVICE", ..., or "CUmemLocationType 42".
std::string locationTypeName(CUmemLocationType type);

/// "device 0", "host", "host NUMA node 1", "invalid (none or mixed)", ...
std::string describeLocation(const CUmemLocation& location);

/// A legacy int location: "device 0", "CU_DEVICE_CPU (host)", "CU_DEVICE_INVALID (none or mixed)".
std::string legacyLocationName(int value);

/// @}
/// @name Batch prefetch
/// @{

/// A batch that cuMemPrefetchBatchAsync would reject; what() names the rule.
class BatchPrefetchError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/**
 * The four arrays of one cuMemPrefetchBatchAsync call, named as its parameters. Range i is
 * [dptrs[i], dptrs[i] + sizes[i]); location k applies to ranges prefetchLocIdxs[k] ..
 * prefetchLocIdxs[k+1] - 1: six ranges to the GPU, then four to the host, are
 * `prefetchLocs = {device, host}`, `prefetchLocIdxs = {0, 6}`.
 */
struct PrefetchBatch {
  std::vector<CUdeviceptr> dptrs;             ///< Where each range starts.
  std::vector<std::size_t> sizes;             ///< Its bytes.
  std::vector<CUmemLocation> prefetchLocs;    ///< The destinations, one per run of ranges.
  std::vector<std::size_t> prefetchLocIdxs;   ///< The first range of each destination.
};

/// Appends [@p ptr, @p ptr + @p bytes) to @p batch, to be prefetched to @p destination, keeping
/// the index arrays right by construction: a range whose destination differs from the previous
/// one's starts a new location.
void addRange(PrefetchBatch& batch, CUdeviceptr ptr, std::size_t bytes,
              const CUmemLocation& destination);

/**
 * Checks @p batch on @p stream as cuMemPrefetchBatchAsync would, and names the first broken rule:
 * 1. count > 0; 2. dptrs and sizes of equal length; 3. prefetchLocs and prefetchLocIdxs of equal
 * length; 4. at least one location, no more than count; 5. prefetchLocIdxs[0] == 0, strictly
 * increasing, the last < count; 6. every range non-null, non-empty, not wrapping around; 7. every
 * location DEVICE (id >= 0), HOST, HOST_NUMA (id >= 0) or HOST_NUMA_CURRENT; 8. a created stream
 * (the driver refuses the legacy NULL stream with CUDA_ERROR_INVALID_VALUE).
 * @throws BatchPrefetchError, "cuMemPrefetchBatchAsync: " and the problem, when there is one.
 */
void validatePrefetchBatch(const PrefetchBatch& batch, CUstream stream);

/**
 * Step 6's ranges, the batch's dptrs and sizes: each of @p vectors (@p bytes each) cut into ten
 * 64 KiB-aligned chunks, chunks 0-5 of every vector first, then chunks 6-9 of every vector. For
 * A, B and C: ranges 0-17 are their chunks 0-5 (the GPU's part), ranges 18-29 their chunks 6-9,
 * so the lesson's two locations are `prefetchLocs = {gpu, host}`, `prefetchLocIdxs = {0, 18}`.
 * The location arrays are left empty: the lesson writes them. The GPU's part of each vector is
 * its first gpuPartBytes(@p bytes) bytes. @throws std::invalid_argument (vectors under 640 KiB).
 */
PrefetchBatch chunkRanges(const std::vector<CUdeviceptr>& vectors, std::uint64_t bytes);

/**
 * The bytes at the start of a vector of @p bytes that step 6 sends to the GPU: chunks 0-5 of
 * ten, about 60 %, where chunk 6 (the first one sent to the host) starts. Step 6's kernel adds
 * these elements, the CPU the rest. @throws std::invalid_argument (vectors under 640 KiB).
 */
std::uint64_t gpuPartBytes(std::uint64_t bytes);

/// The destination of range @p range. @throws std::out_of_range when there is no such range.
CUmemLocation destinationOf(const PrefetchBatch& batch, std::size_t range);

/// "30 ranges; prefetchLocs = {device 0, host}, prefetchLocIdxs = {0, 18}, numPrefetchLocs = 2".
std::string describeBatch(const PrefetchBatch& batch);

/// @}
/// @name Range attributes: asked, expected, compared
/// @{

/// Every CU_MEM_RANGE_ATTRIBUTE_* of one managed range, as the driver returned them.
struct RangeAttributes {
  int readMostly = 0;                         ///< READ_MOSTLY: 1 when every page is.
  int preferredLocation = CU_DEVICE_INVALID;  ///< PREFERRED_LOCATION (legacy int).
  CUmemLocationType preferredLocationType = CU_MEM_LOCATION_TYPE_INVALID;  ///< ..._TYPE
  int preferredLocationId = 0;                ///< ..._ID (meaningful for DEVICE, HOST_NUMA).
  std::vector<int> accessedBy;                ///< ACCESSED_BY, padded with CU_DEVICE_INVALID.
  int lastPrefetchLocation = CU_DEVICE_INVALID;  ///< LAST_PREFETCH_LOCATION (legacy int).
  CUmemLocationType lastPrefetchLocationType = CU_MEM_LOCATION_TYPE_INVALID;  ///< ..._TYPE
  int lastPrefetchLocationId = 0;             ///< ..._ID.
};

/// Attributes in a RangeAttributes (each comparison counts as one check).
inline constexpr std::size_t kRangeAttributeCount = 8;

/// cuMemRangeGetAttributes' three parallel arrays, filling `said`; entry i is also one
/// cuMemRangeGetAttribute call's (data, dataSize, attribute). In member order: 4 bytes per int,
/// sizeof the enum for _TYPE, `accessedBySlots` ints (at least 1) for ACCESSED_BY.
struct RangeAttributeQuery {
  /// The arrays for eight attributes, ACCESSED_BY with room for @p accessedBySlots devices.
  explicit RangeAttributeQuery(int accessedBySlots);
  RangeAttributeQuery(const RangeAttributeQuery&) = delete;  ///< data points into said.
  RangeAttributeQuery& operator=(const RangeAttributeQuery&) = delete;

  RangeAttributes said;                      ///< The answers.
  std::vector<void*> data;                   ///< Where each answer goes (inside said).
  std::vector<std::size_t> sizes;            ///< Its size in bytes, as the driver requires.
  std::vector<CUmem_range_attribute> asked;  ///< Which attribute.
};

/// "read-mostly 0, preferred device 0 (legacy device 0), accessed-by {0}, last prefetch ...".
std::string describeRangeAttributes(const RangeAttributes& attributes);

/// What a program that set some advice must read back for a whole range.
struct ExpectedRange {
  bool readMostly = false;                    ///< SET_READ_MOSTLY on every page.
  std::optional<CUmemLocation> preferred;     ///< Same preferred location on every page, or none.
  std::vector<int> accessedBy;                ///< Devices with SET_ACCESSED_BY on every page.
  std::optional<CUmemLocation> lastPrefetch;  ///< Same last prefetch target on every page, or none.
};

/// A range without advice whose last prefetch went to @p destination.
inline ExpectedRange prefetchedTo(const CUmemLocation& destination) {
  ExpectedRange expected;
  expected.lastPrefetch = destination;
  return expected;
}

/// A range advised SET_READ_MOSTLY and nothing else, whose last prefetch went to @p lastPrefetch,
/// or nowhere (std::nullopt: pages that a fault moved record no prefetch).
inline ExpectedRange readMostlyRange(const std::optional<CUmemLocation>& lastPrefetch) {
  ExpectedRange expected;
  expected.readMostly = true;
  expected.lastPrefetch = lastPrefetch;
  return expected;
}

/// A range kept in host memory for device @p ordinal: SET_PREFERRED_LOCATION the host and
/// SET_ACCESSED_BY the device (which maps its host pages), last prefetched to the host.
inline ExpectedRange keptOnHostFor(int ordinal) {
  ExpectedRange expected;
  expected.preferred = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0};
  expected.accessedBy = {ordinal};
  expected.lastPrefetch = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0};
  return expected;
}

/**
 * The attributes that differ from what the advice implies, by cuMemRangeGetAttribute's rules: a
 * value only when every page has it, else INVALID / 0 / not listed; the legacy int is not
 * compared for HOST_NUMA (it cannot name a node), the _ID only for DEVICE and HOST_NUMA, whose
 * _TYPE is wrong-type-first; a HOST_NUMA preference may read back as that node or as plain HOST
 * (the H200 VM, one node, driver 580, says HOST); ACCESSED_BY lists exactly the advised devices.
 */
std::vector<AttributeMismatch> compareRangeAttributes(const ExpectedRange& expected,
                                                      const RangeAttributes& got);

/// For an expected host NUMA preference, which accepted answer the driver gave ("the driver
/// reports host NUMA node 1 as CU_MEM_LOCATION_TYPE_HOST (no node named)"); else "".
std::string hostNumaReadBack(const ExpectedRange& expected, const RangeAttributes& got);

/// The attributes in which two reads of one range differ (one call against eight).
std::vector<AttributeMismatch> differingAttributes(const RangeAttributes& individually,
                                                   const RangeAttributes& atOnce);

/// One row of the advice table (step 8's further advice): an advice on part of A, then what a
/// read-back must say.
struct AdviceStep {
  std::string label;                      ///< Printed with the read-back.
  ByteRange range;                        ///< The bytes of A it applies to.
  std::optional<CUmem_advise> advice;     ///< None: only a read-back.
  CUmemLocation where{};                  ///< The advice's location.
  std::optional<ExpectedRange> expected;  ///< None: no read-back after this advice.
  bool mayBeRefused = false;              ///< A host NUMA node: not every system takes one.
};

/**
 * The advice table for a vector of @p bytes on device @p ordinal: each advice set, read back and
 * unset on all of A (preferred location device, host, host NUMA node @p hostNumaId unless it is
 * negative; accessed-by; read-mostly), then different advice on its two halves, each half and the
 * mixed whole read back, and everything unset again. Step 4 of the lesson writes the advice it
 * uses as calls (read-mostly on A and B, preferred location host and accessed-by the GPU on C);
 * step 8 runs this table on A for the locations, combinations and half ranges step 4 leaves out.
 * The expectations name no last prefetch location: the caller adds the one A has.
 */
std::vector<AdviceStep> adviceSteps(std::uint64_t bytes, int ordinal, int hostNumaId);

/// @}
/// @name Pointer attributes
/// @{

/// What cuPointerGetAttributes says about an address, and what it is asked.
struct PointerAttributes {
  unsigned int memoryType = 0;    ///< CU_POINTER_ATTRIBUTE_MEMORY_TYPE (a CUmemorytype).
  int isManaged = 0;              ///< CU_POINTER_ATTRIBUTE_IS_MANAGED (a bool, read into a zeroed int).
  int deviceOrdinal = -1;         ///< CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL.
  CUdeviceptr rangeStart = 0;     ///< CU_POINTER_ATTRIBUTE_RANGE_START_ADDR.
  std::size_t rangeSize = 0;      ///< CU_POINTER_ATTRIBUTE_RANGE_SIZE.
  CUdeviceptr devicePointer = 0;  ///< CU_POINTER_ATTRIBUTE_DEVICE_POINTER.
  void* hostPointer = nullptr;    ///< CU_POINTER_ATTRIBUTE_HOST_POINTER.
  CUcontext context = nullptr;    ///< CU_POINTER_ATTRIBUTE_CONTEXT.
};

/// One cuPointerGetAttributes call's arrays: what it asks, and where each answer lands (in said).
struct PointerAttributeQuery {
  PointerAttributeQuery() = default;
  PointerAttributeQuery(const PointerAttributeQuery&) = delete;  ///< answers point into said.
  PointerAttributeQuery& operator=(const PointerAttributeQuery&) = delete;

  PointerAttributes said;  ///< The answers.
  /// The attributes asked, in the order of PointerAttributes' members.
  CUpointer_attribute asked[8] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE,    CU_POINTER_ATTRIBUTE_IS_MANAGED,
      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
      CU_POINTER_ATTRIBUTE_RANGE_SIZE,     CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
      CU_POINTER_ATTRIBUTE_HOST_POINTER,   CU_POINTER_ATTRIBUTE_CONTEXT};
  /// Where cuPointerGetAttributes writes the answer to each of asked, in its order.
  void* answers[8] = {&said.memoryType,    &said.isManaged,     &said.deviceOrdinal,
                      &said.rangeStart,    &said.rangeSize,     &said.devicePointer,
                      &said.hostPointer,   &said.context};
};

/// Checks comparePointerAttributes() makes.
inline constexpr std::size_t kPointerAttributeChecks = 6;

/// What cuPointerGetAttributes must say about a managed allocation [@p ptr, @p ptr + @p bytes) of
/// device @p ordinal (@p got) and from an address inside it (@p inside): managed, that device, a
/// range containing the allocation and the same from inside, one address for device and host.
std::vector<AttributeMismatch> comparePointerAttributes(const PointerAttributes& got,
                                                        const PointerAttributes& inside,
                                                        CUdeviceptr ptr, std::size_t bytes,
                                                        int ordinal);

/// The answers for people, one indented line each; @p sampleContext is the sample's context.
std::string describePointerAttributes(const PointerAttributes& got, const PointerAttributes& inside,
                                      CUdeviceptr insideAddress, CUcontext sampleContext);

const char* memoryTypeName(unsigned int memoryType);  ///< "CU_MEMORYTYPE_DEVICE", ...

/// What cuPointerGetAttributes said about a managed allocation: at its first byte and inside it.
struct PointerAnswers {
  PointerAttributes atStart;  ///< About the allocation's first byte.
  PointerAttributes inside;   ///< About an address inside it.
  CUdeviceptr insideAddress = 0;  ///< That address.
};

/// What those answers must describe: a managed allocation [ptr, ptr + bytes) of device ordinal.
struct ManagedRange {
  CUdeviceptr ptr = 0;    ///< Its first byte.
  std::size_t bytes = 0;  ///< Its size.
  int ordinal = 0;        ///< The device of the context that allocated it.
};

/// @}
/// @name Judging an answer: one rule per kind of answer, for the lesson's checks.expect()
/// @{

/// An answer compared with what it must be.
struct Judgement {
  std::string said;                           ///< The answer, for people.
  std::vector<AttributeMismatch> mismatches;  ///< What differs (attribute "" for a plain value).
  std::size_t checks = 1;                     ///< How many checks the comparison counts.
};

/// A plain int answer (CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY): equal.
Judgement judge(int said, int expected);
/// A location read as _TYPE and _ID: the same place (sameLocation: the id counts for DEVICE and
/// HOST_NUMA only).
Judgement judge(const CUmemLocation& said, const CUmemLocation& expected);
/// An ACCESSED_BY answer (padded with CU_DEVICE_INVALID): exactly the devices of @p expected.
Judgement judge(const std::vector<int>& accessedBy, const std::vector<int>& expected);
/// All eight range attributes against what the advice and prefetches imply
/// (compareRangeAttributes; kRangeAttributeCount checks).
Judgement judge(const RangeAttributes& said, const ExpectedRange& expected);
/// Range i of @p batch, read back as @p said[i], must name its own destination as its last
/// prefetch location and carry no advice (kRangeAttributeCount checks per range).
Judgement judge(const std::vector<RangeAttributes>& said, const PrefetchBatch& batch);
/// Pointer attributes against the allocation (comparePointerAttributes; kPointerAttributeChecks).
Judgement judge(const PointerAnswers& said, const ManagedRange& expected);

/// A short line for a range's attributes, from their _TYPE/_ID forms: "read-mostly 1, preferred
/// device 0, accessed-by {device 0}, last prefetch none" (describeRangeAttributes() adds the
/// legacy ints).
std::string describeRangeBriefly(const RangeAttributes& attributes);

/// @}

}  // namespace memsamples::managed
