// Which GPUs of 08_multicastReduce's default team take part (issue 33, R1), on fake machines: a
// GPU nobody named is left out of the team, with the reason, when its compute mode forbids a
// context (chooseTeam()), when its context was refused, or when it cannot hold the buffer
// (fitTeam()); it never shrinks the buffer. A GPU that --devices or --device names is used, or the
// run is waived naming it. No multicast object is created: these are plain functions.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "multicast_plan.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
namespace mc = memsamples::multicast;
using memsamples::test::messageOf;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

/// An H100 of a machine whose GPUs all see each other, in compute mode @p mode.
mc::DeviceCapability h100(int mode = CU_COMPUTEMODE_DEFAULT) {
  mc::DeviceCapability capability;
  capability.multicastSupported = true;
  capability.computeMajor = 9;
  capability.score = {132, 1980000};
  capability.cooperativeLaunch = true;
  capability.computeMode = mode;
  return capability;
}

std::vector<mc::DeviceCapability> connected(std::vector<mc::DeviceCapability> devices) {
  for (mc::DeviceCapability& capability : devices)
    capability.peerAccess.assign(devices.size(), true);
  return devices;
}

mc::MemberState member(int ordinal, std::uint64_t freeBytes, bool required = false) {
  mc::MemberState state;
  state.ordinal = ordinal;
  state.required = required;
  state.freeBytes = freeBytes;
  return state;
}

std::vector<int> ordinals(const std::vector<mc::LeftOutDevice>& leftOut) {
  std::vector<int> result;
  for (const mc::LeftOutDevice& left : leftOut)
    result.push_back(left.ordinal);
  return result;
}

const std::vector<int> kAll;
const std::optional<long long> kNoRoot;
const std::string kProhibited =
    "device 1 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can be "
    "created";

}  // namespace

// Before the fix a PROHIBITED GPU joined the default team, and its context waived the run.
TEST(MulticastTeamModes, AnUnnamedProhibitedGpuIsLeftOutOfTheDefaultTeamWithTheReason) {
  const mc::TeamChoice choice = mc::chooseTeam(
      connected({h100(), h100(CU_COMPUTEMODE_PROHIBITED), h100(), h100()}), kAll, kNoRoot);
  EXPECT_TRUE(choice.waiver.empty()) << choice.waiver;
  EXPECT_EQ(choice.members, (std::vector<int>{0, 2, 3}));
  ASSERT_EQ(choice.leftOut.size(), 1u);
  EXPECT_EQ(choice.leftOut[0].ordinal, 1);
  EXPECT_EQ(choice.leftOut[0].reason, kProhibited);
}

TEST(MulticastTeamModes, OneProcessMayUseAnExclusiveProcessGpu) {
  const mc::TeamChoice choice =
      mc::chooseTeam(connected({h100(), h100(CU_COMPUTEMODE_EXCLUSIVE_PROCESS)}), kAll, kNoRoot);
  EXPECT_EQ(choice.members, (std::vector<int>{0, 1}));
  EXPECT_TRUE(choice.leftOut.empty());
}

TEST(MulticastTeamModes, ANamedProhibitedGpuWaivesNamingIt) {
  const auto machine = connected({h100(), h100(CU_COMPUTEMODE_PROHIBITED), h100()});
  EXPECT_EQ(mc::chooseTeam(machine, {0, 1}, kNoRoot).waiver, "--devices: " + kProhibited);
  EXPECT_EQ(mc::chooseTeam(machine, kAll, 1).waiver, kProhibited + "; --device names it");
}

TEST(MulticastTeamModes, TooFewGpusLeftWaivesNamingTheMode) {
  const mc::TeamChoice choice =
      mc::chooseTeam(connected({h100(), h100(CU_COMPUTEMODE_PROHIBITED)}), kAll, kNoRoot);
  EXPECT_TRUE(choice.members.empty());
  EXPECT_NE(choice.waiver.find("this machine has 1 of 2; " + kProhibited), std::string::npos)
      << choice.waiver;
}

TEST(FitTeam, EveryMemberThatHoldsTheDefaultBufferTakesPart) {
  const mc::TeamFit fit = mc::fitTeam(
      {member(0, 80 * kGiB, true), member(1, 40 * kGiB), member(2, 1 * kGiB)}, std::nullopt);
  EXPECT_EQ(fit.members, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(fit.leftOut.empty());
  EXPECT_EQ(fit.dataBytes, mc::kDefaultBytes);
}

// Before the fix device 2's 200 MiB sized the buffer of the whole team (48 MiB), and a busy
// EXCLUSIVE_PROCESS device 3 failed the run.
TEST(FitTeam, UnnamedMembersThatAreBusyOrShortOfMemoryAreLeftOutWithTheReason) {
  mc::MemberState held = member(3, 0);
  held.computeMode = CU_COMPUTEMODE_EXCLUSIVE_PROCESS;
  held.contextRefused = "cuDevicePrimaryCtxRetain: CUDA_ERROR_DEVICE_UNAVAILABLE";
  const mc::TeamFit fit =
      mc::fitTeam({member(0, 80 * kGiB, true), member(1, 80 * kGiB), member(2, 200 * kMiB), held},
                  std::nullopt);
  EXPECT_EQ(fit.members, (std::vector<int>{0, 1}));
  EXPECT_EQ(ordinals(fit.leftOut), (std::vector<int>{2, 3}));
  EXPECT_EQ(fit.dataBytes, mc::kDefaultBytes);  // not shrunk for device 2
  EXPECT_EQ(fit.leftOut[0].reason,
            "device 2 has only 200 MiB free, too little for 3 buffers of 256 MiB (name it with "
            "--devices to use it)");
  EXPECT_EQ(fit.leftOut[1].reason,
            "device 3 refused a context (cuDevicePrimaryCtxRetain: "
            "CUDA_ERROR_DEVICE_UNAVAILABLE): it is in compute mode EXCLUSIVE_PROCESS "
            "(CU_COMPUTEMODE_EXCLUSIVE_PROCESS) and another process holds it");
}

TEST(FitTeam, TheMemoryRuleIsTheShareChooseBufferBytesLeavesADevice) {
  // 3 buffers of 256 MiB fit in 80 % of 960 MiB (768 MiB), not in 80 % of 959 MiB.
  EXPECT_EQ(mc::fitTeam({member(0, 80 * kGiB, true), member(1, 960 * kMiB)}, std::nullopt).members,
            (std::vector<int>{0, 1}));
  EXPECT_THROW(mc::fitTeam({member(0, 80 * kGiB, true), member(1, 959 * kMiB)}, std::nullopt),
               ms::WaivedError);
  // With --size, the size asked.
  const mc::TeamFit asked = mc::fitTeam(
      {member(0, 80 * kGiB, true), member(1, 80 * kGiB), member(2, 4 * kGiB)}, 2 * kGiB);
  EXPECT_EQ(asked.dataBytes, 2 * kGiB);
  EXPECT_EQ(asked.members, (std::vector<int>{0, 1}));
}

TEST(FitTeam, RequiredMembersAreUsedAndSizeTheBuffer) {
  // The root (or every GPU of --devices) must take part: the smallest sizes the buffer.
  const mc::TeamFit fit =
      mc::fitTeam({member(3, 80 * kGiB, true), member(1, 200 * kMiB, true)}, std::nullopt);
  EXPECT_EQ(fit.members, (std::vector<int>{3, 1}));  // the order of the choice
  EXPECT_TRUE(fit.leftOut.empty());
  EXPECT_EQ(fit.dataBytes, 52 * kMiB);  // 80 % of 200 MiB over 3 buffers, in 2 MiB steps
  // A --size that does not fit a required member is a usage error, as before.
  EXPECT_THROW(mc::fitTeam({member(0, 1 * kGiB, true), member(1, 80 * kGiB)}, 1 * kGiB),
               ms::UsageError);
}

TEST(FitTeam, ARequiredMemberThatRefusesAContextWaivesNamingIt) {
  mc::MemberState held = member(1, 0, true);
  held.contextRefused = "cuDevicePrimaryCtxRetain: CUDA_ERROR_DEVICE_UNAVAILABLE";
  EXPECT_EQ(messageOf<ms::WaivedError>([&] {
              mc::fitTeam({member(0, 80 * kGiB, true), held}, std::nullopt);
            }),
            "device 1 refused a context (cuDevicePrimaryCtxRetain: "
            "CUDA_ERROR_DEVICE_UNAVAILABLE); it must take part (the root, or named by --devices)");
}

TEST(FitTeam, FewerThanTwoMembersLeftWaivesNamingThoseLeftOut) {
  EXPECT_EQ(messageOf<ms::WaivedError>([] {
              mc::fitTeam({member(0, 80 * kGiB, true), member(1, 100 * kMiB)}, std::nullopt);
            }),
            "needs two or more GPUs that can hold the buffer; 1 of the team's 2 can; left out: "
            "device 1 has only 100 MiB free, too little for 3 buffers of 256 MiB (name it with "
            "--devices to use it)");
}
