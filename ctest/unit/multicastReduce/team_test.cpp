// Team selection of 08_multicastReduce on fake capability tables.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "multicast_plan.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
namespace mc = memsamples::multicast;
using memsamples::test::messageOf;

namespace {

/// A device that launches cooperative kernels, as every recent GPU does; connected() gives it
/// its peers.
mc::DeviceCapability device(bool multicast, int major, int minor, ms::DeviceScore score) {
  mc::DeviceCapability capability;
  capability.multicastSupported = multicast;
  capability.computeMajor = major;
  capability.computeMinor = minor;
  capability.score = score;
  capability.cooperativeLaunch = true;
  return capability;
}

const mc::DeviceCapability kH200 = device(true, 9, 0, {132, 1980000});
const mc::DeviceCapability kH200NoSwitch = device(false, 9, 0, {132, 1980000});
const mc::DeviceCapability kA100 = device(true, 8, 0, {108, 1410000});  // say it had multicast
const mc::DeviceCapability kB200 = device(true, 10, 0, {148, 1965000});

using Table = std::vector<mc::DeviceCapability>;

/// @p devices, each of which can access every other's memory (cuDeviceCanAccessPeer = 1), as on
/// a machine whose GPUs all hang off one NVSwitch.
Table connected(Table devices) {
  for (mc::DeviceCapability& capability : devices)
    capability.peerAccess.assign(devices.size(), true);
  return devices;
}
const std::vector<int> kAll;
const std::optional<long long> kNoRoot;

TEST(MulticastTeam, OneGpuIsWaived) {
  const mc::TeamChoice choice = mc::chooseTeam(connected({kH200}), kAll, kNoRoot);
  EXPECT_TRUE(choice.members.empty());
  EXPECT_EQ(choice.waiver,
            "needs two or more GPUs with multicast support (NVLink through NVSwitch) and compute "
            "capability 9.0 or newer; this machine has 1 of 1");
}

TEST(MulticastTeam, NoGpuIsWaived) {
  EXPECT_FALSE(mc::chooseTeam(connected({}), kAll, kNoRoot).waiver.empty());
}

TEST(MulticastTeam, TwoGpusWithoutMulticastAreWaivedWithTheReasons) {
  const mc::TeamChoice choice = mc::chooseTeam(connected({kH200NoSwitch, kH200NoSwitch}), kAll, kNoRoot);
  EXPECT_TRUE(choice.members.empty());
  EXPECT_NE(choice.waiver.find("this machine has 0 of 2; device 0 has no multicast support "
                               "(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 0); device 1 has no "
                               "multicast support"),
            std::string::npos)
      << choice.waiver;
}

TEST(MulticastTeam, OlderThanHopperCannotTakePart) {
  const mc::TeamChoice choice = mc::chooseTeam(connected({kA100, kA100}), kAll, kNoRoot);
  EXPECT_TRUE(choice.members.empty());
  EXPECT_NE(choice.waiver.find("device 0 is compute capability 8.0; multimem instructions need "
                               "9.0 or newer"),
            std::string::npos)
      << choice.waiver;
}

TEST(MulticastTeam, TwoH200s) {
  const mc::TeamChoice choice = mc::chooseTeam(connected({kH200, kH200}), kAll, kNoRoot);
  EXPECT_TRUE(choice.waiver.empty());
  EXPECT_EQ(choice.members, (std::vector<int>{0, 1}));
  EXPECT_EQ(choice.root, 0);  // a tie: the lower ordinal
}

TEST(MulticastTeam, IncapableDevicesAreLeftOut) {
  const mc::TeamChoice choice = mc::chooseTeam(connected({kA100, kH200, kH200NoSwitch, kB200}), kAll, kNoRoot);
  EXPECT_EQ(choice.members, (std::vector<int>{1, 3}));
  EXPECT_EQ(choice.root, 3);  // the fastest member
}

TEST(MulticastTeam, AtMostEightMembers) {
  const mc::TeamChoice choice = mc::chooseTeam(connected(Table(10, kH200)), kAll, kNoRoot);
  EXPECT_EQ(choice.members.size(), static_cast<std::size_t>(mc::kMaxTeam));
  EXPECT_EQ(choice.members.back(), 7);
}

TEST(MulticastTeam, ARequestedTeamLargerThanEightIsAUsageError) {
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              mc::chooseTeam(connected(Table(10, kH200)), {0, 1, 2, 3, 4, 5, 6, 7, 8}, kNoRoot);
            }),
            "--devices names 9 GPUs; this sample runs teams of at most 8");
  EXPECT_EQ(mc::chooseTeam(connected(Table(10, kH200)), {9, 8, 7, 6, 5, 4, 3, 2}, kNoRoot).members.size(), 8u);
}

TEST(MulticastTeam, RequestedDevicesInTheirOrder) {
  const mc::TeamChoice choice = mc::chooseTeam(connected(Table(4, kH200)), {3, 1}, kNoRoot);
  EXPECT_EQ(choice.members, (std::vector<int>{3, 1}));
  EXPECT_EQ(choice.root, 3);
}

TEST(MulticastTeam, ARequestedDeviceThatCannotTakePartIsAWaiverNamingIt) {
  const mc::TeamChoice choice = mc::chooseTeam(connected({kH200, kH200NoSwitch, kH200}), {0, 1}, kNoRoot);
  EXPECT_TRUE(choice.members.empty());
  EXPECT_EQ(choice.waiver,
            "--devices: device 1 has no multicast support "
            "(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 0)");
}

TEST(MulticastTeam, ARequestedTeamOfOneIsWaived) {
  EXPECT_FALSE(mc::chooseTeam(connected({kH200, kH200}), {1}, kNoRoot).waiver.empty());
}

TEST(MulticastTeam, OutOfRangeDevicesAreUsageErrorsEvenWhereItWouldBeWaived) {
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              mc::chooseTeam(connected({kH200}), {0, 5}, kNoRoot);
            }),
            "--devices names device 5, but this machine has 1 CUDA device");
  EXPECT_EQ(messageOf<ms::UsageError>([] { mc::chooseTeam(connected(Table(2, kH200)), {-1}, kNoRoot); }),
            "--devices names device -1, but this machine has 2 CUDA devices");
  EXPECT_NE(messageOf<ms::UsageError>([] { mc::chooseTeam(connected({kH200}), kAll, 3); }).find("--device 3"),
            std::string::npos);
}

TEST(MulticastTeam, RootMustBeAMember) {
  EXPECT_EQ(mc::chooseTeam(connected(Table(3, kH200)), kAll, 2).root, 2);
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              mc::chooseTeam(connected({kH200, kA100, kH200}), kAll, 1);
            }),
            "--device 1 is not in the team; it must be one of the GPUs that take part");
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              mc::chooseTeam(connected(Table(3, kH200)), {0, 1}, 2);
            }),
            "--device 2 is not in the team; it must be one of the GPUs that take part");
}

TEST(MulticastTeam, WhyNotMember) {
  EXPECT_EQ(mc::whyNotMember(kH200, 0), "");
  EXPECT_EQ(mc::whyNotMember(kB200, 0), "");
  EXPECT_EQ(mc::whyNotMember(device(true, 7, 5, {}), 4),
            "device 4 is compute capability 7.5; multimem instructions need 9.0 or newer");
}

/// Expects that @p devices give no team, and a waiver that says @p text.
void expectWaiverSaying(const Table& devices, const std::string& text) {
  const mc::TeamChoice choice = mc::chooseTeam(devices, kAll, kNoRoot);
  EXPECT_TRUE(choice.members.empty());
  EXPECT_NE(choice.waiver.find(text), std::string::npos) << choice.waiver;
}

TEST(MulticastTeam, CooperativeLaunchIsNeeded) {
  mc::DeviceCapability noCooperative = kH200;
  noCooperative.cooperativeLaunch = false;
  EXPECT_EQ(mc::whyNotMember(noCooperative, 2),
            "device 2 cannot launch cooperative kernels (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH "
            "= 0), and the all-reduce is one");
  expectWaiverSaying(connected({kH200, noCooperative}),
                     "this machine has 1 of 2; device 1 cannot launch cooperative kernels");
  EXPECT_EQ(mc::chooseTeam(connected({kH200, noCooperative, kH200}), kAll, kNoRoot).members,
            (std::vector<int>{0, 2}));
  EXPECT_EQ(mc::chooseTeam(connected({kH200, noCooperative}), {0, 1}, kNoRoot).waiver,
            "--devices: device 1 cannot launch cooperative kernels "
            "(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 0), and the all-reduce is one");
}

TEST(MulticastTeam, MembersMustBePeersBothWays) {
  // Device 1 may map device 0's memory, but not the other way round.
  Table oneWay = connected({kH200, kH200});
  oneWay[0].peerAccess[1] = false;
  expectWaiverSaying(oneWay,
                     "this machine has 1 of 2; device 0 cannot access device 1's memory "
                     "(cuDeviceCanAccessPeer = 0), and every member maps every other member's "
                     "copy");
  Table otherWay = connected({kH200, kH200});
  otherWay[1].peerAccess[0] = false;
  EXPECT_EQ(mc::chooseTeam(otherWay, {0, 1}, kNoRoot).waiver,
            "--devices: device 1 cannot access device 0's memory (cuDeviceCanAccessPeer = 0), "
            "and every member maps every other member's copy");
  Table unknown = {kH200, kH200};  // no answers at all: not peers
  EXPECT_FALSE(mc::chooseTeam(unknown, kAll, kNoRoot).waiver.empty());
}

TEST(MulticastTeam, ADeviceThatIsNoPeerOfTheTeamIsLeftOut) {
  // Two islands: 0-1 and 2-3 are peers, across them nothing. The team is the first island.
  Table islands = connected(Table(4, kH200));
  for (const int a : {0, 1})
    for (const int b : {2, 3}) {
      islands[static_cast<std::size_t>(a)].peerAccess[static_cast<std::size_t>(b)] = false;
      islands[static_cast<std::size_t>(b)].peerAccess[static_cast<std::size_t>(a)] = false;
    }
  const mc::TeamChoice choice = mc::chooseTeam(islands, kAll, kNoRoot);
  EXPECT_TRUE(choice.waiver.empty()) << choice.waiver;
  EXPECT_EQ(choice.members, (std::vector<int>{0, 1}));
  EXPECT_NE(mc::chooseTeam(islands, {0, 2}, kNoRoot).waiver.find("--devices: device 0 cannot "
                                                                 "access device 2's memory"),
            std::string::npos);
  EXPECT_EQ(mc::chooseTeam(islands, {3, 2}, kNoRoot).members, (std::vector<int>{3, 2}));
}

}  // namespace
