// Resource kinds, the per-device assignment, latency sizes and the latency table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memsamples.hpp"
#include "resource_plan.hpp"
#include "test_support.hpp"

namespace mr = memsamples::resource;
using memsamples::TimingStats;
using memsamples::test::messageOf;
using Kind = mr::ResourceKind;

namespace {

TimingStats median(double ms, int samples) {
  TimingStats stats;
  stats.medianMs = ms;
  stats.minMs = ms;
  stats.maxMs = ms;
  stats.samples = samples;
  return stats;
}

// A row with N = @p batchSize and @p batches batches; times in ms per allocation.
mr::LatencyRow row(const std::string& resource, std::uint64_t bytes, int batchSize, int batches,
                   double allocateMs, double allocateSyncMs, double freeMs, double freeSyncMs) {
  mr::LatencyRow r;
  r.resource = resource;
  r.bytes = bytes;
  r.batchSize = batchSize;
  r.allocate = median(allocateMs, batches);
  r.allocateSync = median(allocateSyncMs, batches);
  r.deallocate = median(freeMs, batches);
  r.deallocateSync = median(freeSyncMs, batches);
  return r;
}

}  // namespace

TEST(ResourceKinds, NamesAndOrder) {
  EXPECT_EQ(mr::allResourceKinds(),
            (std::vector<Kind>{Kind::Device, Kind::Managed, Kind::Pinned, Kind::Numa, Kind::Vmm}));
  EXPECT_STREQ(mr::kindName(Kind::Device), "device");
  EXPECT_STREQ(mr::kindName(Kind::Managed), "managed");
  EXPECT_STREQ(mr::kindName(Kind::Pinned), "pinned");
  EXPECT_STREQ(mr::kindName(Kind::Numa), "numa");
  EXPECT_STREQ(mr::kindName(Kind::Vmm), "vmm");
}

TEST(ParseResourceKinds, ReadsAListInTheGivenOrder) {
  EXPECT_EQ(mr::parseResourceKinds("vmm", "--resources"), (std::vector<Kind>{Kind::Vmm}));
  EXPECT_EQ(mr::parseResourceKinds("pinned,device,numa", "--resources"),
            (std::vector<Kind>{Kind::Pinned, Kind::Device, Kind::Numa}));
  EXPECT_EQ(mr::parseResourceKinds("device,managed,pinned,numa,vmm", "--resources"),
            mr::allResourceKinds());
}

TEST(ParseResourceKinds, MistakesAreUsageErrorsNamingTheOption) {
  using memsamples::UsageError;
  EXPECT_EQ(messageOf<UsageError>([] { mr::parseResourceKinds("", "--resources"); }),
            "--resources: the list of resources is empty");
  EXPECT_EQ(messageOf<UsageError>([] { mr::parseResourceKinds("device,", "--resources"); }),
            "--resources: empty entry in 'device,'");
  EXPECT_EQ(messageOf<UsageError>([] { mr::parseResourceKinds(",vmm", "--resources"); }),
            "--resources: empty entry in ',vmm'");
  EXPECT_EQ(messageOf<UsageError>([] { mr::parseResourceKinds("device,heap", "--resources"); }),
            "--resources: unknown resource 'heap' (expected one of device, managed, pinned, "
            "numa, vmm)");
  EXPECT_EQ(messageOf<UsageError>([] { mr::parseResourceKinds("Device", "--resources"); }),
            "--resources: unknown resource 'Device' (expected one of device, managed, pinned, "
            "numa, vmm)");
  EXPECT_EQ(messageOf<UsageError>([] { mr::parseResourceKinds("vmm,pinned,vmm", "--resources"); }),
            "--resources: 'vmm' is listed twice");
}

TEST(AssignKindsToDevices, NeighboursGetDifferentKinds) {
  const std::vector<Kind> kinds = mr::allResourceKinds();
  EXPECT_EQ(mr::assignKindsToDevices(kinds, 2), (std::vector<Kind>{Kind::Managed, Kind::Pinned}));
  EXPECT_EQ(mr::assignKindsToDevices({Kind::Device, Kind::Vmm}, 3),
            (std::vector<Kind>{Kind::Vmm, Kind::Device, Kind::Vmm}));
  EXPECT_EQ(mr::assignKindsToDevices({Kind::Pinned}, 2),
            (std::vector<Kind>{Kind::Pinned, Kind::Pinned}));
  const std::vector<Kind> six = mr::assignKindsToDevices(kinds, 6);
  for (std::size_t i = 1; i < six.size(); ++i)
    EXPECT_NE(six[i], six[i - 1]) << "devices " << i - 1 << " and " << i;
}

TEST(AssignKindsToDevices, RefusesNothingToAssign) {
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::assignKindsToDevices({}, 2); }),
            "assignKindsToDevices: no resource kinds to assign");
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::assignKindsToDevices({Kind::Vmm}, 0); }),
            "assignKindsToDevices: the device count must be at least 1 (got 0)");
}

TEST(LatencySizes, SmallSizesAndTheLargeOneAscending) {
  EXPECT_EQ(mr::latencySizes(64ull << 20), (std::vector<std::uint64_t>{4096, 65536, 64ull << 20}));
  EXPECT_EQ(mr::latencySizes(65536), (std::vector<std::uint64_t>{4096, 65536}));
  EXPECT_EQ(mr::latencySizes(100), (std::vector<std::uint64_t>{100, 4096, 65536}));
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::latencySizes(0); }),
            "latencySizes: the large size must be at least 1 byte");
}

TEST(LatencyRepetitions, TenTimesMoreForSmallSizes) {
  EXPECT_EQ(mr::latencyRepetitions(4096, 20), 200);
  EXPECT_EQ(mr::latencyRepetitions(1 << 20, 20), 200);
  EXPECT_EQ(mr::latencyRepetitions((1 << 20) + 1, 20), 20);
  EXPECT_EQ(mr::latencyRepetitions(64ull << 20, 3), 3);
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::latencyRepetitions(4096, 0); }),
            "latencyRepetitions: iterations must be in [1, 214748364] (got 0)");
  EXPECT_THROW(mr::latencyRepetitions(4096, 214748365), std::invalid_argument);
}

TEST(LatencyBatches, AboutFiveBatchesOfAtMostTen) {
  // The defaults of the sample: 200 repetitions up to 1 MiB, 20 above.
  const mr::LatencyBatches small = mr::planLatencyBatches(4096, 200);
  EXPECT_EQ(small.batchSize, 10);
  EXPECT_EQ(small.batches, 20);
  const mr::LatencyBatches large = mr::planLatencyBatches(64ull << 20, 20);
  EXPECT_EQ(large.batchSize, 4);
  EXPECT_EQ(large.batches, 5);
  // What CTest runs (--iterations 3): 30 small, 3 large.
  const mr::LatencyBatches quickSmall = mr::planLatencyBatches(65536, 30);
  EXPECT_EQ(quickSmall.batchSize, 6);
  EXPECT_EQ(quickSmall.batches, 5);
  const mr::LatencyBatches quickLarge = mr::planLatencyBatches(4ull << 20, 3);
  EXPECT_EQ(quickLarge.batchSize, 1);
  EXPECT_EQ(quickLarge.batches, 3);
  // Whole batches only: 23 repetitions -> 4 per batch, 5 batches (20 timed).
  const mr::LatencyBatches uneven = mr::planLatencyBatches(4096, 23);
  EXPECT_EQ(uneven.batchSize, 4);
  EXPECT_EQ(uneven.batches, 5);
}

TEST(LatencyBatches, ABatchHoldsAtMostTheByteLimitUnlessOneAllocationIsLarger) {
  // 20 x 512 MiB against 1 GiB: at most 2 alive at once.
  const mr::LatencyBatches two = mr::planLatencyBatches(512ull << 20, 20);
  EXPECT_EQ(two.batchSize, 2);
  EXPECT_EQ(two.batches, 10);
  const mr::LatencyBatches one = mr::planLatencyBatches(4ull << 30, 20);
  EXPECT_EQ(one.batchSize, 1);
  EXPECT_EQ(one.batches, 20);
  const mr::LatencyBatches limited = mr::planLatencyBatches(100, 200, 300);
  EXPECT_EQ(limited.batchSize, 3);
  EXPECT_EQ(limited.batches, 66);
}

TEST(LatencyBatches, RefusesNothingToMeasure) {
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::planLatencyBatches(0, 20); }),
            "planLatencyBatches: the allocation size must be at least 1 byte");
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::planLatencyBatches(4096, 0); }),
            "planLatencyBatches: at least 1 repetition is required (got 0)");
}

TEST(LatencyTable, RatiosCompareAllocatePlusSyncAtTheSameSize) {
  const std::vector<mr::LatencyRow> rows = {
      // The pool's calls only enqueue (0.001 ms); with the synchronize they take 0.004 ms.
      row("device pool", 4096, 10, 20, 0.001, 0.004, 0.001, 0.060),
      row("pinned host", 4096, 10, 20, 0.050, 0.052, 0.020, 0.021),
      row("pinned host", 1 << 20, 4, 5, 0.5, 0.5, 0.2, 0.2),
  };
  EXPECT_DOUBLE_EQ(*mr::allocateRatio(rows, rows[1], "device pool"), 13.0);
  EXPECT_DOUBLE_EQ(*mr::allocateRatio(rows, rows[0], "device pool"), 1.0);
  EXPECT_FALSE(mr::allocateRatio(rows, rows[2], "device pool"));  // no reference of that size
  EXPECT_FALSE(mr::allocateRatio(rows, rows[1], "missing"));
  // A reference whose enqueue is 0 but whose alloc+sync is not still gives a ratio.
  std::vector<mr::LatencyRow> enqueueZero = {row("device pool", 4096, 1, 1, 0.0, 0.002, 0, 0),
                                             row("managed", 4096, 1, 1, 0.01, 0.01, 0, 0)};
  EXPECT_DOUBLE_EQ(*mr::allocateRatio(enqueueZero, enqueueZero[1], "device pool"), 5.0);
  std::vector<mr::LatencyRow> zero = {row("device pool", 4096, 1, 1, 0.0, 0.0, 0.0, 0.0)};
  EXPECT_FALSE(mr::allocateRatio(zero, zero[0], "device pool"));
}

TEST(LatencyTable, OneLinePerRowPerAllocationInMicroseconds) {
  const std::vector<mr::LatencyRow> rows = {
      row("device pool", 4096, 10, 20, 0.001, 0.004, 0.001, 0.060),
      row("pinned host", 4096, 10, 20, 0.050, 0.052, 0.020, 0.021),
      row("pinned host", 1 << 20, 4, 5, 0.5, 0.5, 0.25, 0.3),
  };
  EXPECT_EQ(mr::formatLatencyTable(rows, "device pool"),
            "resource          size  N x batches   alloc us  +sync us   free us  +sync us   "
            "alloc+sync / device pool\n"
            "device pool   4.00 KiB      10 x 20        1.0       4.0       1.0      60.0   1.00x\n"
            "pinned host   4.00 KiB      10 x 20       50.0      52.0      20.0      21.0   "
            "13.00x\n"
            "pinned host   1.00 MiB        4 x 5      500.0     500.0     250.0     300.0   n/a\n");
}

TEST(SmallestFreeMemory, TheDeviceWithTheLeastFreeMemory) {
  const mr::DeviceFreeMemory smallest =
      mr::smallestFreeMemory({{0, 140ull << 30}, {1, 20ull << 30}, {2, 90ull << 30}});
  EXPECT_EQ(smallest.device, 1);
  EXPECT_EQ(smallest.freeBytes, 20ull << 30);
  const mr::DeviceFreeMemory tie = mr::smallestFreeMemory({{3, 5}, {1, 5}});
  EXPECT_EQ(tie.device, 3);  // the first one
  EXPECT_EQ(mr::smallestFreeMemory({{2, 7}}).device, 2);
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::smallestFreeMemory({}); }),
            "smallestFreeMemory: no devices");
}
