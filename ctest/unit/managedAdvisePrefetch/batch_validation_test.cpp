// cuMemPrefetchBatchAsync argument validation: every rule, its message, and addRange.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "managed_logic.hpp"

namespace mm = memsamples::managed;

namespace {

/// Locations as the sample writes them: {type, id}.
CUmemLocation deviceLocation(int ordinal) {
  return {CU_MEM_LOCATION_TYPE_DEVICE, ordinal};
}
CUmemLocation hostLocation() {
  return {CU_MEM_LOCATION_TYPE_HOST, 0};
}
CUmemLocation hostNumaLocation(int node) {
  return {CU_MEM_LOCATION_TYPE_HOST_NUMA, node};
}

// Any non-null stream other than CU_STREAM_LEGACY stands for a created stream; never used.
CUstream createdStream() {
  return reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x1000));
}

constexpr CUdeviceptr kBase = 0x7f0000000000ull;
constexpr std::size_t kRange = 64 << 10;

/// The seed's example: ten ranges, the first six to the GPU, the last four to the host.
mm::PrefetchBatch tenRangesSixAndFour() {
  mm::PrefetchBatch batch;
  for (std::size_t i = 0; i < 10; ++i) {
    mm::addRange(batch, kBase + i * kRange, kRange, i < 6 ? deviceLocation(0) : hostLocation());
  }
  return batch;
}

/// The problem validatePrefetchBatch throws, without its "cuMemPrefetchBatchAsync: " prefix
/// (which every message must start with), or "" when it accepts the batch.
std::string problemOf(const mm::PrefetchBatch& batch, CUstream stream = createdStream()) {
  const std::string prefix = "cuMemPrefetchBatchAsync: ";
  try {
    mm::validatePrefetchBatch(batch, stream);
  } catch (const mm::BatchPrefetchError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
    EXPECT_GT(message.size(), prefix.size()) << "a refusal that names no rule";
    return message.substr(std::min(prefix.size(), message.size()));
  }
  return {};
}

}  // namespace

TEST(AddRange, GroupsConsecutiveRangesByDestination) {
  const mm::PrefetchBatch batch = tenRangesSixAndFour();
  ASSERT_EQ(batch.dptrs.size(), 10u);
  ASSERT_EQ(batch.sizes.size(), 10u);
  ASSERT_EQ(batch.prefetchLocs.size(), 2u);
  EXPECT_EQ(batch.prefetchLocIdxs, (std::vector<std::size_t>{0, 6}));
  EXPECT_EQ(batch.prefetchLocs[0].type, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(batch.prefetchLocs[0].id, 0);
  EXPECT_EQ(batch.prefetchLocs[1].type, CU_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(batch.dptrs[3], kBase + 3 * kRange);
  EXPECT_EQ(problemOf(batch), "");
}

TEST(AddRange, ReturningToAnEarlierDestinationStartsANewEntry) {
  mm::PrefetchBatch batch;
  mm::addRange(batch, kBase, kRange, deviceLocation(1));
  mm::addRange(batch, kBase + kRange, kRange, deviceLocation(1));
  mm::addRange(batch, kBase + 2 * kRange, kRange, hostLocation());
  mm::addRange(batch, kBase + 3 * kRange, kRange, deviceLocation(1));
  mm::addRange(batch, kBase + 4 * kRange, kRange, deviceLocation(0));
  EXPECT_EQ(batch.prefetchLocIdxs, (std::vector<std::size_t>{0, 2, 3, 4}));
  EXPECT_EQ(problemOf(batch), "");
}

TEST(AddRange, HostIdsDoNotSplitAGroup) {
  CUmemLocation hostWithId = hostLocation();
  hostWithId.id = 5;  // ignored by the driver for HOST
  mm::PrefetchBatch batch;
  mm::addRange(batch, kBase, kRange, hostLocation());
  mm::addRange(batch, kBase + kRange, kRange, hostWithId);
  EXPECT_EQ(batch.prefetchLocs.size(), 1u);
}

TEST(PrefetchBatchValidation, OneRangeOneLocationIsValid) {
  mm::PrefetchBatch batch;
  mm::addRange(batch, kBase, 1, hostNumaLocation(0));
  EXPECT_EQ(problemOf(batch), "");
}

TEST(PrefetchBatchValidation, EmptyBatch) {
  EXPECT_EQ(problemOf(mm::PrefetchBatch{}), "the batch is empty: count must be at least 1");
}

TEST(PrefetchBatchValidation, PointerAndSizeArraysMustHaveTheSameLength) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.sizes.pop_back();
  EXPECT_EQ(problemOf(batch), "dptrs has 10 entries but sizes has 9: both must have count entries");
  batch = tenRangesSixAndFour();
  batch.dptrs.clear();
  EXPECT_EQ(problemOf(batch), "dptrs has 0 entries but sizes has 10: both must have count entries");
}

TEST(PrefetchBatchValidation, LocationArraysMustHaveTheSameLength) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.prefetchLocIdxs.push_back(8);
  EXPECT_EQ(problemOf(batch),
            "prefetchLocs has 2 entries but prefetchLocIdxs has 3: both must have "
            "numPrefetchLocs entries");
}

TEST(PrefetchBatchValidation, AtLeastOneLocation) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.prefetchLocs.clear();
  batch.prefetchLocIdxs.clear();
  EXPECT_EQ(problemOf(batch), "no destination: numPrefetchLocs must be at least 1");
}

TEST(PrefetchBatchValidation, NoMoreLocationsThanRanges) {
  mm::PrefetchBatch batch;
  batch.dptrs = {kBase, kBase + kRange};
  batch.sizes = {kRange, kRange};
  batch.prefetchLocs = {deviceLocation(0), hostLocation(), deviceLocation(0)};
  batch.prefetchLocIdxs = {0, 1, 2};
  EXPECT_EQ(problemOf(batch),
            "numPrefetchLocs (3) is greater than count (2): every location must apply to at "
            "least one range");
}

TEST(PrefetchBatchValidation, FirstIndexMustBeZero) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.prefetchLocIdxs = {1, 6};
  EXPECT_EQ(problemOf(batch),
            "prefetchLocIdxs[0] is 1, must be 0: the first location applies from the first range "
            "on");
}

TEST(PrefetchBatchValidation, IndicesMustStrictlyIncrease) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.prefetchLocs.push_back(deviceLocation(0));
  batch.prefetchLocIdxs = {0, 6, 6};
  EXPECT_EQ(problemOf(batch),
            "prefetchLocIdxs[2] = 6 is not greater than prefetchLocIdxs[1] = 6: the indices must "
            "strictly increase");
  batch.prefetchLocIdxs = {0, 6, 4};
  EXPECT_EQ(problemOf(batch),
            "prefetchLocIdxs[2] = 4 is not greater than prefetchLocIdxs[1] = 6: the indices must "
            "strictly increase");
}

TEST(PrefetchBatchValidation, LastIndexMustBeBelowCount) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.prefetchLocIdxs = {0, 10};
  EXPECT_EQ(problemOf(batch),
            "prefetchLocIdxs[1] = 10 is not less than count (10): the last location would apply "
            "to no range");
  batch.prefetchLocIdxs = {0, 9};  // the last range alone goes to the host: fine
  EXPECT_EQ(problemOf(batch), "");
}

TEST(PrefetchBatchValidation, SizesMustBePositive) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.sizes[7] = 0;
  EXPECT_EQ(problemOf(batch), "sizes[7] is 0: every range must have at least one byte");
}

TEST(PrefetchBatchValidation, PointersMustNotBeNull) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.dptrs[0] = 0;
  EXPECT_EQ(problemOf(batch), "dptrs[0] is null: every range must start at a managed address");
}

TEST(PrefetchBatchValidation, RangesMustNotWrapAround) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.dptrs[2] = ~0ull - 100;
  batch.sizes[2] = 101;  // ends exactly at the top of the address space: fine
  EXPECT_EQ(problemOf(batch), "");
  batch.sizes[2] = 102;
  EXPECT_EQ(problemOf(batch), "range 2 (dptrs[2] + sizes[2]) wraps around the address space");
}

TEST(PrefetchBatchValidation, LocationTypesAndIds) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.prefetchLocs[1].type = CU_MEM_LOCATION_TYPE_INVALID;
  EXPECT_EQ(problemOf(batch),
            "prefetchLocs[1] has type CU_MEM_LOCATION_TYPE_INVALID: a prefetch goes to a DEVICE, "
            "HOST, HOST_NUMA or HOST_NUMA_CURRENT location");
  batch.prefetchLocs[1] = deviceLocation(-1);
  EXPECT_EQ(problemOf(batch),
            "prefetchLocs[1] is CU_MEM_LOCATION_TYPE_DEVICE with id -1: the id must be a device "
            "ordinal or NUMA node >= 0");
  batch.prefetchLocs[1] = hostNumaLocation(-1);
  EXPECT_EQ(problemOf(batch),
            "prefetchLocs[1] is CU_MEM_LOCATION_TYPE_HOST_NUMA with id -1: the id must be a device "
            "ordinal or NUMA node >= 0");
  batch.prefetchLocs[1].type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;  // id ignored
  EXPECT_EQ(problemOf(batch), "");
  batch.prefetchLocs[1].type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(problemOf(batch), "");
}

TEST(PrefetchBatchValidation, LegacyNullStreamIsRefused) {
  const std::string expected =
      "the legacy NULL stream is refused by the driver (CUDA_ERROR_INVALID_VALUE): enqueue the "
      "batch on a created stream";
  EXPECT_EQ(problemOf(tenRangesSixAndFour(), nullptr), expected);
  EXPECT_EQ(problemOf(tenRangesSixAndFour(), CU_STREAM_LEGACY), expected);
  EXPECT_EQ(problemOf(tenRangesSixAndFour(), CU_STREAM_PER_THREAD), "");
}

TEST(PrefetchBatchValidation, TheFirstBrokenRuleIsReported) {
  mm::PrefetchBatch batch = tenRangesSixAndFour();
  batch.sizes[0] = 0;
  batch.prefetchLocIdxs = {2, 6};
  EXPECT_EQ(problemOf(batch, nullptr),
            "prefetchLocIdxs[0] is 2, must be 0: the first location applies from the first range "
            "on");
}

TEST(PrefetchBatchDestinations, EachRangeBelongsToTheLastGroupStartingAtOrBeforeIt) {
  const mm::PrefetchBatch batch = tenRangesSixAndFour();
  for (std::size_t i = 0; i < 10; ++i) {
    const CUmemLocation expected = i < 6 ? deviceLocation(0) : hostLocation();
    EXPECT_TRUE(mm::sameLocation(mm::destinationOf(batch, i), expected)) << i;
  }
  mm::PrefetchBatch mixed;
  mm::addRange(mixed, kBase, kRange, deviceLocation(1));
  mm::addRange(mixed, kBase + kRange, kRange, hostLocation());
  mm::addRange(mixed, kBase + 2 * kRange, kRange, deviceLocation(1));
  EXPECT_EQ(mm::destinationOf(mixed, 0).id, 1);
  EXPECT_EQ(mm::destinationOf(mixed, 1).type, CU_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(mm::destinationOf(mixed, 2).type, CU_MEM_LOCATION_TYPE_DEVICE);
}

TEST(PrefetchBatchDestinations, ARangeOutsideTheBatchIsAnError) {
  try {
    mm::destinationOf(tenRangesSixAndFour(), 10);
    FAIL() << "range 10 of 10 accepted";
  } catch (const std::out_of_range& error) {
    EXPECT_STREQ(error.what(), "destinationOf: the batch has no range 10 (10 ranges)");
  }
  EXPECT_THROW(mm::destinationOf(mm::PrefetchBatch{}, 0), std::out_of_range);
}

TEST(DescribeBatch, NamesTheFourArrays) {
  EXPECT_EQ(mm::describeBatch(tenRangesSixAndFour()),
            "10 ranges; prefetchLocs = {device 0, host}, prefetchLocIdxs = {0, 6}, "
            "numPrefetchLocs = 2");
  EXPECT_EQ(mm::describeBatch(mm::PrefetchBatch{}),
            "0 ranges; prefetchLocs = {}, prefetchLocIdxs = {}, numPrefetchLocs = 0");
}

// Step 6's batch as the lesson's core writes it: chunkRanges() for dptrs and sizes, the two
// location arrays literal, {gpu, host} and {0, firstHostRange} with firstHostRange = 3 * 6 (18),
// then validatePrefetchBatch().
namespace {
mm::PrefetchBatch lessonBatch(const std::vector<CUdeviceptr>& abc, std::uint64_t bytes,
                              CUstream stream) {
  mm::PrefetchBatch batch = mm::chunkRanges(abc, bytes);
  const std::size_t firstHostRange = 3 * 6;  // 3 vectors x 6 chunks (0-5) for the GPU come first
  batch.prefetchLocs = {deviceLocation(0), hostLocation()};
  batch.prefetchLocIdxs = {0, firstHostRange};
  mm::validatePrefetchBatch(batch, stream);
  return batch;
}
}  // namespace

// Ten 64 KiB-aligned chunks per vector, 0-5 of each first, then 6-9 of each: so the lesson's
// {0, 3 * 6} is right, its second location starting at range 18, A's chunk 6, after the GPU's
// 3 x 6 ranges. A change of the split (another chunk count for the GPU) fails here.
TEST(ChunkBatch, SixChunksOfEachVectorToTheGpuThenFourToTheHost) {
  constexpr std::uint64_t kBytes = 1ull << 20;
  const std::vector<CUdeviceptr> abc = {kBase, kBase + kBytes, kBase + 2 * kBytes};
  const mm::PrefetchBatch ranges = mm::chunkRanges(abc, kBytes);
  EXPECT_TRUE(ranges.prefetchLocs.empty());  // the lesson writes the location arrays
  EXPECT_TRUE(ranges.prefetchLocIdxs.empty());
  const mm::PrefetchBatch batch = lessonBatch(abc, kBytes, createdStream());
  ASSERT_EQ(batch.dptrs.size(), 30u);
  EXPECT_EQ(batch.dptrs, ranges.dptrs);
  EXPECT_EQ(batch.sizes, ranges.sizes);
  EXPECT_EQ(mm::describeBatch(batch),
            "30 ranges; prefetchLocs = {device 0, host}, prefetchLocIdxs = {0, 18}, "
            "numPrefetchLocs = 2");
  const std::uint64_t chunk = 65536;  // 1 MiB / 10 = 102.4 KiB, down to a whole 64 KiB
  EXPECT_EQ(batch.dptrs[0], kBase);
  EXPECT_EQ(batch.dptrs[6], kBase + kBytes);          // B's chunk 0
  EXPECT_EQ(batch.dptrs[17], kBase + 2 * kBytes + 5 * chunk);  // C's chunk 5, the GPU's last
  EXPECT_EQ(batch.dptrs[18], kBase + 6 * chunk);      // A's chunk 6, the first to the host
  EXPECT_EQ(batch.dptrs[29], kBase + 2 * kBytes + 9 * chunk);  // C's chunk 9
  EXPECT_EQ(batch.sizes[29], kBytes - 9 * chunk);     // the last chunk takes the remainder
  // Every range lies in the part of its vector that its destination's side adds in step 6: the
  // GPU's ranges below gpuPartBytes(), the host's from there on.
  const std::uint64_t gpuPart = mm::gpuPartBytes(kBytes);
  for (std::size_t i = 0; i < 30; ++i) {
    const std::uint64_t offset = (batch.dptrs[i] - kBase) % kBytes;
    const bool toGpu = mm::destinationOf(batch, i).type == CU_MEM_LOCATION_TYPE_DEVICE;
    EXPECT_EQ(toGpu, i < 18) << i;
    if (toGpu)
      EXPECT_LE(offset + batch.sizes[i], gpuPart) << i;
    else
      EXPECT_GE(offset, gpuPart) << i;
  }
  // Checked before the call: the NULL stream is refused; a vector too small has no ten chunks.
  EXPECT_THROW(lessonBatch(abc, kBytes, nullptr), mm::BatchPrefetchError);
  EXPECT_THROW(mm::chunkRanges(abc, 10 * 65536 - 1), std::invalid_argument);
}

TEST(ChunkBatch, TheGpuPartEndsWhereTheFirstHostChunkStarts) {
  // Step 6's kernel adds the first gpuPartBytes() of each vector and the CPU the rest: that split
  // must be the batch's, or one side would work on pages prefetched to the other.
  constexpr std::uint64_t kBytes = 1ull << 20;
  const std::vector<CUdeviceptr> abc = {kBase, kBase + kBytes, kBase + 2 * kBytes};
  const mm::PrefetchBatch batch = lessonBatch(abc, kBytes, createdStream());
  const std::uint64_t gpuPart = mm::gpuPartBytes(kBytes);
  EXPECT_EQ(batch.dptrs[batch.prefetchLocIdxs[1]], kBase + gpuPart);
  EXPECT_EQ(gpuPart, 6u * 65536u);
  // 64 MiB, the default: 6 x 102 x 64 KiB, just under 60 %.
  EXPECT_EQ(mm::gpuPartBytes(64ull << 20), 6u * 6684672u);
  EXPECT_THROW(mm::gpuPartBytes(10 * 65536 - 1), std::invalid_argument);
}
