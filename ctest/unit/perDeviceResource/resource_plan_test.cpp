// Resource kinds and --resources, the per-device assignment, and the device the vectors are
// sized for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memsamples.hpp"
#include "resource_plan.hpp"
#include "test_support.hpp"

namespace mr = memsamples::resource;
using memsamples::test::messageOf;
using Kind = mr::ResourceKind;

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

TEST(DescribeSizedFor, NamesTheDeviceOnlyWhenThereAreSeveral) {
  EXPECT_EQ(mr::describeSizedFor({0, 5}, 1), "the device");
  EXPECT_EQ(mr::describeSizedFor({1, 5}, 2),
            "device 1 (the least free memory of the 2 devices used)");
}

TEST(ResourcePlan, TheKindListIsEveryKindUnlessResourcesListsSome) {
  const mr::ResourceKindList all = mr::parseResourceKinds("");
  EXPECT_EQ(all.kinds, mr::allResourceKinds());
  EXPECT_FALSE(all.listed);  // a kind this machine lacks is left out, not waived
  const mr::ResourceKindList listed = mr::parseResourceKinds("vmm,pinned");
  EXPECT_EQ(listed.kinds, (std::vector<mr::ResourceKind>{mr::ResourceKind::Vmm,
                                                        mr::ResourceKind::Pinned}));
  EXPECT_TRUE(listed.listed);
  EXPECT_THROW(mr::parseResourceKinds("device,heap"), memsamples::UsageError);
}
