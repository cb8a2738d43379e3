// Which device a sample may use, decided from each device's compute mode with the modes injected:
// PROHIBITED admits no context, EXCLUSIVE_PROCESS one process at a time.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "memsamples.hpp"
#include "support/devices.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
using memsamples::test::messageOf;

namespace {

constexpr int kDefault = CU_COMPUTEMODE_DEFAULT;
constexpr int kProhibited = CU_COMPUTEMODE_PROHIBITED;
constexpr int kExclusive = CU_COMPUTEMODE_EXCLUSIVE_PROCESS;

/// A device of @p multiprocessors SMs at one clock, in compute mode @p mode.
ms::DeviceScore device(int multiprocessors, int mode) {
  ms::DeviceScore score;
  score.multiprocessors = multiprocessors;
  score.clockKHz = 1980000;
  score.computeMode = mode;
  return score;
}

int choose(const std::vector<ms::DeviceScore>& devices, std::optional<long long> requested = {},
           ms::DeviceUse use = ms::DeviceUse::OneProcess) {
  return ms::chooseDevice(devices, requested, use);
}

std::string waiverOf(const std::vector<ms::DeviceScore>& devices,
                     std::optional<long long> requested = {},
                     ms::DeviceUse use = ms::DeviceUse::OneProcess) {
  return messageOf<ms::WaivedError>([&] { choose(devices, requested, use); });
}

}  // namespace

TEST(ComputeMode, NamedAsNvidiaAndCudaHeaderWriteIt) {
  EXPECT_EQ(ms::computeModeName(kDefault), "DEFAULT (CU_COMPUTEMODE_DEFAULT)");
  EXPECT_EQ(ms::computeModeName(kProhibited), "PROHIBITED (CU_COMPUTEMODE_PROHIBITED)");
  EXPECT_EQ(ms::computeModeName(kExclusive),
            "EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS)");
  EXPECT_EQ(ms::computeModeName(1), "1 (unknown to this build)");  // the old EXCLUSIVE_THREAD
}

TEST(ComputeMode, ProhibitedForbidsEveryUse) {
  const std::string expected =
      "device 0 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can be "
      "created";
  EXPECT_EQ(ms::computeModeProblem(0, kProhibited, ms::DeviceUse::OneProcess), expected);
  EXPECT_EQ(ms::computeModeProblem(0, kProhibited, ms::DeviceUse::SeveralProcesses), expected);
}

TEST(ComputeMode, ExclusiveProcessForbidsOnlySeveralProcesses) {
  EXPECT_EQ(ms::computeModeProblem(2, kExclusive, ms::DeviceUse::OneProcess), "");
  EXPECT_EQ(ms::computeModeProblem(2, kExclusive, ms::DeviceUse::SeveralProcesses),
            "device 2 is in compute mode EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS): one "
            "process at a time may have a context on it, and this sample needs several");
}

TEST(ComputeMode, DefaultAndUnknownModesAreLeftToTheDriver) {
  for (const ms::DeviceUse use : {ms::DeviceUse::OneProcess, ms::DeviceUse::SeveralProcesses}) {
    EXPECT_EQ(ms::computeModeProblem(0, kDefault, use), "");
    EXPECT_EQ(ms::computeModeProblem(0, 1, use), "");
  }
}

TEST(ChooseDevice, TheOnlyDeviceProhibitedWaivesNamingTheMode) {
  EXPECT_EQ(waiverOf({device(132, kProhibited)}),
            "device 0 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created");
}

TEST(ChooseDevice, DefaultChoiceSkipsAProhibitedDeviceWhenAnotherCanBeUsed) {
  // Device 0 is the fastest, but no context can be made on it.
  EXPECT_EQ(choose({device(132, kProhibited), device(80, kDefault), device(108, kDefault)}), 2);
  EXPECT_EQ(choose({device(132, kDefault), device(80, kProhibited)}), 0);
  // Ties among the usable ones still go to the lower ordinal.
  EXPECT_EQ(choose({device(132, kProhibited), device(80, kDefault), device(80, kDefault)}), 1);
}

TEST(ChooseDevice, EveryDeviceProhibitedWaivesNamingEachOne) {
  EXPECT_EQ(waiverOf({device(132, kProhibited), device(132, kProhibited)}),
            "none of the 2 devices can be used: device 0 is in compute mode PROHIBITED "
            "(CU_COMPUTEMODE_PROHIBITED): no context can be created; device 1 is in compute mode "
            "PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can be created");
}

TEST(ChooseDevice, AnExplicitDeviceInProhibitedModeWaivesThoughAnotherIsUsable) {
  EXPECT_EQ(waiverOf({device(132, kDefault), device(132, kProhibited)}, 1),
            "device 1 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created");
  EXPECT_EQ(choose({device(132, kProhibited), device(132, kDefault)}, 1), 1);
}

TEST(ChooseDevice, AnOrdinalOutOfRangeIsAUsageErrorBeforeAnyMode) {
  EXPECT_THROW(choose({device(132, kProhibited)}, 3), ms::UsageError);
  EXPECT_THROW(choose({device(132, kDefault)}, -1), ms::UsageError);
}

TEST(ChooseDevice, ExclusiveProcessServesOneProcessButNotSeveral) {
  const std::vector<ms::DeviceScore> devices{device(132, kExclusive), device(80, kDefault)};
  EXPECT_EQ(choose(devices), 0);
  EXPECT_EQ(choose(devices, 0), 0);
  EXPECT_EQ(choose(devices, {}, ms::DeviceUse::SeveralProcesses), 1);
  EXPECT_EQ(waiverOf(devices, 0, ms::DeviceUse::SeveralProcesses),
            "device 0 is in compute mode EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS): one "
            "process at a time may have a context on it, and this sample needs several");
  EXPECT_EQ(waiverOf({device(132, kExclusive)}, {}, ms::DeviceUse::SeveralProcesses),
            "device 0 is in compute mode EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS): one "
            "process at a time may have a context on it, and this sample needs several");
}

TEST(ChooseDevice, NoDeviceWaives) {
  EXPECT_EQ(waiverOf({}), "no CUDA device found");
}

TEST(ChooseDevice, WithoutModesTheFastestAsBefore) {
  EXPECT_EQ(choose({device(80, kDefault), device(132, kDefault), device(108, kDefault)}), 1);
  EXPECT_EQ(choose({device(132, kDefault)}, 0), 0);
}
