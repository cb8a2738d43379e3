/**
 * @file managed_logic.hpp
 * @brief The CUDA-free rules of 03_managedAdvisePrefetch: batch-prefetch validation, location
 *        names, what a range attribute should read back after a given advice, and how buffers are
 *        cut into ranges.
 *
 * Nothing declared here calls the driver (cuda.h is included for its types only), so every rule
 * and every message is unit tested on machines without a GPU (ctest/unit/managedAdvisePrefetch).
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

/// Managed-memory helpers of the CUDA Memory Samples (03_managedAdvisePrefetch, reused by 06).
namespace memsamples::managed {

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

/// "CU_MEM_ADVISE_SET_READ_MOSTLY", ..., or "CUmem_advise 42".
std::string adviceName(CUmem_advise advice);

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

/**
 * Why cuMemDiscardBatchAsync would reject these ranges on @p stream, or an empty string: rules 1,
 * 2, 6 and 8 of prefetchBatchProblem() (a discard has no locations).
 */
std::string discardBatchProblem(const std::vector<CUdeviceptr>& dptrs,
                                const std::vector<std::size_t>& sizes, CUstream stream);

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
 * - ACCESSED_BY lists exactly the devices advised for the whole range, the rest of the array
 *   being CU_DEVICE_INVALID;
 * - LAST_PREFETCH_LOCATION(_TYPE/_ID) follow the same rules as the preferred location.
 * @return one entry per attribute that differs; empty when everything matches.
 */
std::vector<AttributeMismatch> compareRangeAttributes(const ExpectedRange& expected,
                                                      const RangeAttributes& got);

/// The attributes (by name) in which two reads of the same range differ, e.g. one
/// cuMemRangeGetAttributes call against eight cuMemRangeGetAttribute calls.
std::vector<AttributeMismatch> differingAttributes(const RangeAttributes& individually,
                                                   const RangeAttributes& atOnce);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Verdict bookkeeping
/// @{

/// Number of attributes compareRangeAttributes() inspects (each counts as one check).
inline constexpr std::size_t kRangeAttributeCount = 8;

/**
 * Collects the sample's assertions. Every failed one becomes a line naming what was checked,
 * what was expected and what was found; the verdict is PASS only when there is none.
 */
class Checklist {
 public:
  /// Records one check; when @p ok is false it adds "<what>: expected <expected>, got <got>".
  bool expect(bool ok, const std::string& what, const std::string& expected,
              const std::string& got);
  /// Records kRangeAttributeCount checks (one per attribute compared); each mismatch adds
  /// "<context>: <attribute>: expected <expected>, got <got>". @return true when none.
  bool expectAttributes(const std::string& context, const std::vector<AttributeMismatch>& found);
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
