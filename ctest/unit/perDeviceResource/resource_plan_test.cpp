// Resource kinds, the per-device assignment, latency sizes and the latency table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memsamples.hpp"
#include "resource_plan.hpp"

namespace mr = memsamples::resource;
using Kind = mr::ResourceKind;

namespace {

template <typename Exception, typename Call>
std::string messageOf(Call&& call) {
  try {
    call();
  } catch (const Exception& error) {
    return error.what();
  }
  return "(no exception)";
}

mr::LatencyRow row(const std::string& resource, std::uint64_t bytes, double allocateMs,
                   double freeMs, int samples) {
  mr::LatencyRow r;
  r.resource = resource;
  r.bytes = bytes;
  r.allocate.medianMs = allocateMs;
  r.allocate.samples = samples;
  r.deallocate.medianMs = freeMs;
  r.deallocate.samples = samples;
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

TEST(LatencyTable, RatiosAgainstTheReferenceAtTheSameSize) {
  const std::vector<mr::LatencyRow> rows = {
      row("device pool", 4096, 0.002, 0.001, 200),
      row("pinned host", 4096, 0.050, 0.020, 200),
      row("pinned host", 1 << 20, 0.5, 0.2, 20),
  };
  EXPECT_DOUBLE_EQ(*mr::allocateRatio(rows, rows[1], "device pool"), 25.0);
  EXPECT_DOUBLE_EQ(*mr::allocateRatio(rows, rows[0], "device pool"), 1.0);
  EXPECT_FALSE(mr::allocateRatio(rows, rows[2], "device pool"));  // no reference of that size
  EXPECT_FALSE(mr::allocateRatio(rows, rows[1], "missing"));
  std::vector<mr::LatencyRow> zero = {row("device pool", 4096, 0.0, 0.0, 1)};
  EXPECT_FALSE(mr::allocateRatio(zero, zero[0], "device pool"));
}

TEST(LatencyTable, OneLinePerRowInMicroseconds) {
  const std::vector<mr::LatencyRow> rows = {
      row("device pool", 4096, 0.002, 0.001, 200),
      row("pinned host", 4096, 0.050, 0.020, 200),
      row("pinned host", 1 << 20, 0.5, 0.25, 20),
  };
  EXPECT_EQ(mr::formatLatencyTable(rows, "device pool"),
            "resource          size   allocate us    free us  reps   allocate / device pool\n"
            "device pool   4.00 KiB           2.0        1.0   200   1.00x\n"
            "pinned host   4.00 KiB          50.0       20.0   200   25.00x\n"
            "pinned host   1.00 MiB         500.0      250.0    20   n/a\n");
}
