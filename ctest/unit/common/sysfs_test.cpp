// Reading sysfs: PCI bus ids, a device's NUMA node, the online node list (fake trees); and the
// two rules of a VMM allocation on a host node: its location id and its granularity.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "support/devices.hpp"
#include "support/numa_sysfs.hpp"
#include "temp_dir.hpp"

namespace ms = memsamples;
using memsamples::test::TempDir;

TEST(Sysfs, PciNamesAreLowerCaseWithFourDigitDomain) {
  EXPECT_EQ(ms::sysfsPciName("0000:00:06.0"), "0000:00:06.0");
  EXPECT_EQ(ms::sysfsPciName("0000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(ms::sysfsPciName("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(ms::sysfsPciName("10000:01:00.1"), "10000:01:00.1");
  EXPECT_EQ(ms::sysfsPciName("0001:AF:1F.7"), "0001:af:1f.7");
  EXPECT_EQ(ms::sysfsPciName(" 0000:00:06.0\n"), "0000:00:06.0");
  for (const char* bad :
       {"", "0000:3b:00", "0000-3b-00.0", "zzzz:00:00.0", "0000:3b:00.8", "0000:3b:20.0",
        "000000000:00:00.0", "0000:3b:00.0.1", "0000:123:00.0", "0000::00.0"}) {
    try {
      ms::sysfsPciName(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()),
                std::string("malformed PCI bus id '") + bad +
                    "': expected domain:bus:device.function in hex, e.g. 0000:3b:00.0");
    }
  }
}

TEST(Sysfs, NumaNodeOfAPciDevice) {
  TempDir root;
  const auto write = [&](const std::string& bdf, const std::string& text) {
    root.touch("bus/pci/devices/" + bdf + "/numa_node");
    std::ofstream(root.path() + "/bus/pci/devices/" + bdf + "/numa_node") << text;
  };
  write("0000:3b:00.0", "1\n");
  write("0000:00:06.0", "-1\n");
  write("0000:00:07.0", "banana\n");
  EXPECT_EQ(ms::readPciNumaNode(root.path(), "0000:3B:00.0").node, 1);
  EXPECT_TRUE(ms::readPciNumaNode(root.path(), "0000:3B:00.0").problem.empty());
  const auto unknown = ms::readPciNumaNode(root.path(), "0000:00:06.0");
  EXPECT_EQ(unknown.node, -1);
  EXPECT_TRUE(unknown.problem.empty());  // -1 is the kernel's own "unknown", not a problem
  const auto malformed = ms::readPciNumaNode(root.path(), "0000:00:07.0");
  EXPECT_EQ(malformed.node, -1);
  EXPECT_EQ(malformed.problem,
            malformed.path + " holds 'banana', not a node number from -1 to 1023");
  const auto missing = ms::readPciNumaNode(root.path(), "0000:99:00.0");
  EXPECT_EQ(missing.node, -1);
  EXPECT_EQ(missing.problem,
            "cannot read " + root.path() +
                "/bus/pci/devices/0000:99:00.0/numa_node: No such file or directory");
  const auto badId = ms::readPciNumaNode(root.path(), "nonsense");
  EXPECT_EQ(badId.node, -1);
  EXPECT_TRUE(badId.path.empty());
  EXPECT_NE(badId.problem.find("malformed PCI bus id 'nonsense'"), std::string::npos);
}

TEST(Sysfs, IdLists) {
  EXPECT_EQ(ms::parseIdList("0"), std::vector<int>{0});
  EXPECT_EQ(ms::parseIdList("0-3\n"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ms::parseIdList("0-1,4,6-7"), (std::vector<int>{0, 1, 4, 6, 7}));
  for (const char* bad : {"", "a", "1-", "-1", "3-1", "0,,1", "2,1", "0,"}) {
    EXPECT_THROW(ms::parseIdList(bad), std::invalid_argument) << bad;
  }
}

TEST(Sysfs, OnlineNumaNodes) {
  TempDir root;
  EXPECT_TRUE(ms::onlineHostNumaNodes(root.path()).empty());  // no NUMA in this kernel
  root.touch("devices/system/node/online");
  std::ofstream(root.path() + "/devices/system/node/online") << "0-1\n";
  EXPECT_EQ(ms::onlineHostNumaNodes(root.path()), (std::vector<int>{0, 1}));
  std::ofstream(root.path() + "/devices/system/node/online") << "garbage\n";
  EXPECT_TRUE(ms::onlineHostNumaNodes(root.path()).empty());
}

TEST(DeviceTopology, ShapeMustBeDevicesByDevices) {
  ms::DeviceTopology topology{{true, true}, {{true, false}, {false, true}}};
  EXPECT_EQ(topology.deviceCount(), 2);
  EXPECT_NO_THROW(topology.checkShape());
  topology.canAccessPeer[1].pop_back();
  try {
    topology.checkShape();
    FAIL() << "a ragged matrix was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "device topology: a peer matrix row has 1 columns for 2 devices");
  }
  topology.canAccessPeer.pop_back();
  try {
    topology.checkShape();
    FAIL() << "a short matrix was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "device topology: the peer matrix has 1 rows for 2 devices");
  }
}

TEST(HostNumaLocation, MinusOneMeansNoNumaAndTheDocumentedIdZero) {
  EXPECT_EQ(ms::hostNumaLocationId(-1), 0);
  EXPECT_EQ(ms::hostNumaLocationId(0), 0);
  EXPECT_EQ(ms::hostNumaLocationId(3), 3);
}

TEST(AllocationGranularity, RecommendedFromOneUnitElseMinimum) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  // 2 MiB minimum, 32 MiB recommended: a small request keeps the small unit.
  EXPECT_EQ(ms::allocationGranularity(3 * kMiB, 2 * kMiB, 32 * kMiB), 2 * kMiB);
  EXPECT_EQ(ms::allocationGranularity(32 * kMiB - 1, 2 * kMiB, 32 * kMiB), 2 * kMiB);
  EXPECT_EQ(ms::allocationGranularity(32 * kMiB, 2 * kMiB, 32 * kMiB), 32 * kMiB);
  EXPECT_EQ(ms::allocationGranularity(3ull << 30, 2 * kMiB, 32 * kMiB), 32 * kMiB);
  // The H200's answer: both 2 MiB.
  EXPECT_EQ(ms::allocationGranularity(kMiB, 2 * kMiB, 2 * kMiB), 2 * kMiB);
  // A recommendation that is 0 or not a multiple of the minimum cannot be used.
  EXPECT_EQ(ms::allocationGranularity(64 * kMiB, 2 * kMiB, 0), 2 * kMiB);
  EXPECT_EQ(ms::allocationGranularity(64 * kMiB, 2 * kMiB, 3 * kMiB), 2 * kMiB);
  EXPECT_THROW(ms::allocationGranularity(kMiB, 0, 2 * kMiB), std::invalid_argument);
}
