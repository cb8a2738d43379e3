// Which devices back and map the range: discovery from fake topologies, and the checks of
// --backing, --mapping and --stripes.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "run_plan.hpp"
#include "memsamples.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
using memsamples::test::messageOf;
namespace vmm = memsamples::vmm;

namespace {

// vmm: one character per device, '1' = supports VMM. access: one row per accessing device,
// access[a][b] == '1' when device a can access device b's memory (the diagonal is set for you).
vmm::DeviceTopology topology(const std::string& vmmFlags, const std::vector<std::string>& access) {
  vmm::DeviceTopology result;
  for (const char flag : vmmFlags)
    result.vmmSupported.push_back(flag == '1');
  for (std::size_t a = 0; a < access.size(); ++a) {
    std::vector<bool> row;
    for (std::size_t b = 0; b < access[a].size(); ++b)
      row.push_back(a == b || access[a][b] == '1');
    result.canAccessPeer.push_back(row);
  }
  return result;
}

vmm::DeviceTopology oneGpu() {
  return topology("1", {"1"});
}
vmm::DeviceTopology fourConnected() {
  return topology("1111", {"1111", "1111", "1111", "1111"});
}

}  // namespace

TEST(DiscoverBackingDevices, OneGpuIsItsOwnBackingDevice) {
  EXPECT_EQ(vmm::discoverBackingDevices(0, oneGpu()), (std::vector<int>{0}));
}

TEST(DiscoverBackingDevices, ChosenFirstThenReachablePeersInOrdinalOrder) {
  EXPECT_EQ(vmm::discoverBackingDevices(2, fourConnected()), (std::vector<int>{2, 0, 1, 3}));
  EXPECT_EQ(vmm::discoverBackingDevices(0, fourConnected()), (std::vector<int>{0, 1, 2, 3}));
}

TEST(DiscoverBackingDevices, ReadsTheVmmFlagOfThePeerNotOfTheChosenDevice) {
  // Device 0 (chosen) supports VMM, device 1 does not: 1 must not back stripes even though 0
  // can reach it. Reading the flag on the chosen device would wrongly accept it.
  const auto machine = topology("1011", {"1111", "1111", "1111", "1111"});
  EXPECT_EQ(vmm::discoverBackingDevices(0, machine), (std::vector<int>{0, 2, 3}));
}

TEST(DiscoverBackingDevices, UsesWhatTheChosenDeviceCanAccessNotTheReverse) {
  // 0 can access 2 (but 2 cannot access 0): 2 can back stripes that 0 uses.
  // 1 can access 0 (but 0 cannot access 1): 1 cannot.
  const auto machine = topology("111", {"101", "110", "001"});
  EXPECT_EQ(vmm::discoverBackingDevices(0, machine), (std::vector<int>{0, 2}));
}

TEST(DiscoverBackingDevices, IsolatedDevicesAreLeftOut) {
  const auto machine = topology("11", {"10", "01"});
  EXPECT_EQ(vmm::discoverBackingDevices(1, machine), (std::vector<int>{1}));
}

TEST(DiscoverBackingDevices, RejectsMalformedTopologiesAndBadOrdinals) {
  vmm::DeviceTopology ragged = fourConnected();
  ragged.canAccessPeer[2].pop_back();
  EXPECT_THROW(vmm::discoverBackingDevices(0, ragged), std::invalid_argument);
  vmm::DeviceTopology short_ = fourConnected();
  short_.canAccessPeer.pop_back();
  EXPECT_THROW(vmm::discoverBackingDevices(0, short_), std::invalid_argument);
  EXPECT_THROW(vmm::discoverBackingDevices(4, fourConnected()), std::invalid_argument);
  EXPECT_THROW(vmm::discoverBackingDevices(-1, fourConnected()), std::invalid_argument);
}

TEST(ResolveDeviceRoles, DefaultsAreDiscoveredBackingAndTheChosenDeviceForMapping) {
  const vmm::DeviceRoles roles = vmm::resolveDeviceRoles(1, {}, {}, fourConnected());
  EXPECT_EQ(roles.backing, (std::vector<int>{1, 0, 2, 3}));
  EXPECT_EQ(roles.mapping, (std::vector<int>{1}));
  const vmm::DeviceRoles single = vmm::resolveDeviceRoles(0, {}, {}, oneGpu());
  EXPECT_EQ(single.backing, (std::vector<int>{0}));
  EXPECT_EQ(single.mapping, (std::vector<int>{0}));
}

TEST(ResolveDeviceRoles, KeepsTheGivenListsInTheirOrder) {
  const vmm::DeviceRoles roles = vmm::resolveDeviceRoles(0, {3, 1}, {2, 0}, fourConnected());
  EXPECT_EQ(roles.backing, (std::vector<int>{3, 1}));
  EXPECT_EQ(roles.mapping, (std::vector<int>{2, 0}));
}

TEST(ResolveDeviceRoles, ADeviceThatDoesNotExistNamesTheDeviceCount) {
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              vmm::resolveDeviceRoles(0, {0, 1}, {}, oneGpu());
            }),
            "--backing lists device 1, but this machine has 1 CUDA device (valid: 0)");
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              vmm::resolveDeviceRoles(0, {}, {0, 7}, fourConnected());
            }),
            "--mapping lists device 7, but this machine has 4 CUDA devices (valid: 0..3)");
}

TEST(CheckDeviceOrdinals, OnlyTheDeviceCountMatters) {
  vmm::checkDeviceOrdinals({}, {}, 1);
  vmm::checkDeviceOrdinals({0, 1}, {1}, 2);
  EXPECT_EQ(messageOf<ms::UsageError>([] { vmm::checkDeviceOrdinals({0, 99}, {}, 1); }),
            "--backing lists device 99, but this machine has 1 CUDA device (valid: 0)");
  EXPECT_EQ(messageOf<ms::UsageError>([] { vmm::checkDeviceOrdinals({0}, {-1}, 2); }),
            "--mapping lists device -1, but this machine has 2 CUDA devices (valid: 0..1)");
}

TEST(ResolveDeviceRoles, DevicesWithoutVmmAreRefused) {
  const auto machine = topology("10", {"11", "11"});
  EXPECT_EQ(messageOf<ms::UsageError>([&] {
              vmm::resolveDeviceRoles(0, {0, 1}, {}, machine);
            }),
            "--backing lists device 1, which does not support virtual memory management "
            "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
  EXPECT_EQ(messageOf<ms::UsageError>([&] {
              vmm::resolveDeviceRoles(0, {}, {0, 1}, machine);
            }),
            "--mapping lists device 1, which does not support virtual memory management "
            "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
}

TEST(ResolveDeviceRoles, TheKernelDeviceMustMap) {
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              vmm::resolveDeviceRoles(0, {}, {1, 2}, fourConnected());
            }),
            "--mapping 1,2 does not include device 0, where the kernel runs; add it (e.g. "
            "--mapping 0,1,2)");
}

TEST(ResolveDeviceRoles, EveryMappingDeviceMustReachEveryBackingDevice) {
  // 1 can reach 0, but 0 cannot reach 1: with backing {0, 1}, mapping device 0 cannot map
  // stripe 1.
  const auto machine = topology("11", {"10", "11"});
  EXPECT_EQ(messageOf<ms::UsageError>([&] {
              vmm::resolveDeviceRoles(0, {0, 1}, {}, machine);
            }),
            "device 0 cannot access the memory of device 1 (cuDeviceCanAccessPeer = 0), so it "
            "cannot map stripes backed there; remove one of them from --mapping or --backing");
  // The other way round is fine: 1 maps stripes on 0 and on itself.
  const vmm::DeviceRoles roles = vmm::resolveDeviceRoles(1, {0, 1}, {}, machine);
  EXPECT_EQ(roles.mapping, (std::vector<int>{1}));
  // Discovery never proposes what the mapping device cannot reach.
  EXPECT_EQ(vmm::resolveDeviceRoles(0, {}, {}, machine).backing, (std::vector<int>{0}));
}

TEST(ResolveStripeCount, DefaultsToOnePerBackingDeviceAndRefusesTooFew) {
  EXPECT_EQ(vmm::resolveStripeCount(0, 1), 1);
  EXPECT_EQ(vmm::resolveStripeCount(0, 4), 4);
  EXPECT_EQ(vmm::resolveStripeCount(8, 1), 8);
  EXPECT_EQ(vmm::resolveStripeCount(2, 2), 2);
  EXPECT_EQ(messageOf<ms::UsageError>([] { vmm::resolveStripeCount(1, 2); }),
            "--stripes 1 is fewer than the 2 backing devices: every backing device needs at "
            "least one stripe (use --backing to name fewer devices)");
  EXPECT_EQ(messageOf<ms::UsageError>([] { vmm::resolveStripeCount(-1, 2); }),
            "--stripes -1 is negative");
}

TEST(FormatDeviceList, CommaSeparated) {
  EXPECT_EQ(vmm::formatDeviceList({}), "");
  EXPECT_EQ(vmm::formatDeviceList({0}), "0");
  EXPECT_EQ(vmm::formatDeviceList({2, 0, 1}), "2,0,1");
}
