// Which GPUs a peer run of 05_p2pMemMap uses (issue 33, R1), on fake machines: a GPU the options
// do not name is left out, with the reason, when its compute mode forbids a context, when it
// refused one, or when it lacks the memory for three buffers; it never shrinks the buffers and
// its pairs are not tested. A GPU that --pairs or --device names is used, or the run is waived
// naming it.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "p2p_logic.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
namespace p2p = memsamples::p2p;
using memsamples::test::messageOf;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kDefault = 512 * kMiB;  // the sample's default buffer size

p2p::DeviceState gpu(int ordinal, std::uint64_t freeBytes, int mode = CU_COMPUTEMODE_DEFAULT,
                     const std::string& namedBy = "") {
  p2p::DeviceState state;
  state.ordinal = ordinal;
  state.computeMode = mode;
  state.namedBy = namedBy;
  state.freeBytes = freeBytes;
  return state;
}

std::vector<int> leftOutOrdinals(const std::vector<p2p::LeftOutDevice>& leftOut) {
  std::vector<int> ordinals;
  for (const p2p::LeftOutDevice& device : leftOut)
    ordinals.push_back(device.ordinal);
  return ordinals;
}

// n GPUs, each able to access every other's memory.
p2p::DeviceTopology connected(int n) {
  p2p::DeviceTopology topology;
  topology.vmmSupported.assign(static_cast<std::size_t>(n), true);
  topology.canAccessPeer.assign(static_cast<std::size_t>(n),
                                std::vector<bool>(static_cast<std::size_t>(n), true));
  return topology;
}

}  // namespace

TEST(ChoosePeerDevices, EveryHealthyGpuTakesPartWithTheDefaultBuffers) {
  const p2p::DeviceChoice choice =
      p2p::chooseDevices({gpu(0, 80 * kGiB), gpu(1, 40 * kGiB)}, std::nullopt, kDefault);
  EXPECT_EQ(choice.used, (std::vector<int>{0, 1}));
  EXPECT_TRUE(choice.leftOut.empty());
  EXPECT_EQ(choice.bytes, kDefault);
}

// The machine of issue 33 R1: device 1 is PROHIBITED, device 2 is EXCLUSIVE_PROCESS and held by
// another process, device 3 is almost full. Before the fix all of them were paired: the run asked
// device 1 for a context (and was waived) and sized its buffers for device 3's 1 GiB.
TEST(ChoosePeerDevices, UnnamedGpusThatForbidRefuseOrLackMemoryAreLeftOutWithTheReason) {
  p2p::DeviceState held = gpu(2, 0, CU_COMPUTEMODE_EXCLUSIVE_PROCESS);
  held.contextRefused =
      "cuDevicePrimaryCtxRetain failed at p2pMemMap_measure.cpp:1: "
      "CUDA_ERROR_DEVICE_UNAVAILABLE";
  const p2p::DeviceChoice choice =
      p2p::chooseDevices({gpu(0, 80 * kGiB), gpu(1, 0, CU_COMPUTEMODE_PROHIBITED), held,
                          gpu(3, 1 * kGiB), gpu(4, 80 * kGiB)},
                         std::nullopt, kDefault);

  EXPECT_EQ(choice.used, (std::vector<int>{0, 4}));
  EXPECT_EQ(leftOutOrdinals(choice.leftOut), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(choice.bytes, kDefault);  // not shrunk for device 3
  EXPECT_EQ(choice.leftOut[0].reason,
            "device 1 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created");
  EXPECT_EQ(choice.leftOut[1].reason,
            "device 2 refused a context (cuDevicePrimaryCtxRetain failed at "
            "p2pMemMap_measure.cpp:1: CUDA_ERROR_DEVICE_UNAVAILABLE): it is in compute mode "
            "EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS) and another process holds it");
  EXPECT_EQ(choice.leftOut[2].reason,
            "device 3 has only 1.00 GiB free, too little for 3 buffers of 512 MiB (name it in "
            "--pairs to use it)");
}

TEST(ChoosePeerDevices, OnlyAProhibitedModeForbidsAContextBeforeItIsAsked) {
  EXPECT_NE(p2p::contextForbidden(gpu(1, 0, CU_COMPUTEMODE_PROHIBITED)), "");
  // This one process may hold an EXCLUSIVE_PROCESS device: the retain is asked, and tells.
  EXPECT_EQ(p2p::contextForbidden(gpu(1, 0, CU_COMPUTEMODE_EXCLUSIVE_PROCESS)), "");
  EXPECT_EQ(p2p::contextForbidden(gpu(1, 0, CU_COMPUTEMODE_DEFAULT)), "");
}

TEST(ChoosePeerDevices, TheMemoryRuleIsTheShareChooseBufferBytesLeavesADevice) {
  // 3 buffers of 512 MiB fit in 80 % of 1920 MiB (1536 MiB), not in 80 % of 1919 MiB.
  EXPECT_EQ(
      p2p::chooseDevices({gpu(0, 1920 * kMiB), gpu(1, 1920 * kMiB)}, std::nullopt, kDefault).used,
      (std::vector<int>{0, 1}));
  EXPECT_EQ(
      p2p::chooseDevices({gpu(0, 80 * kGiB), gpu(1, 1919 * kMiB)}, std::nullopt, kDefault).used,
      (std::vector<int>{0}));
  // With --size the same rule holds for the size asked, and no unnamed device refuses it.
  const p2p::DeviceChoice asked =
      p2p::chooseDevices({gpu(0, 80 * kGiB), gpu(1, 1 * kGiB)}, 1 * kGiB, kDefault);
  EXPECT_EQ(asked.bytes, 1 * kGiB);
  EXPECT_EQ(leftOutOrdinals(asked.leftOut), (std::vector<int>{1}));
}

TEST(ChoosePeerDevices, NamedGpusAreUsedAndSizeTheBuffersEvenWhenSmall) {
  // --pairs 0:1 on a machine whose device 1 has 1 GiB free: both are used, the buffers shrink.
  const p2p::DeviceChoice choice =
      p2p::chooseDevices({gpu(0, 80 * kGiB, CU_COMPUTEMODE_DEFAULT, "--pairs"),
                          gpu(1, 1 * kGiB, CU_COMPUTEMODE_DEFAULT, "--pairs")},
                         std::nullopt, kDefault);
  EXPECT_EQ(choice.used, (std::vector<int>{0, 1}));
  EXPECT_TRUE(choice.leftOut.empty());
  EXPECT_EQ(choice.bytes, 272 * kMiB);  // 80 % of 1 GiB over 3 buffers, in 2 MiB steps
  // --device 0: device 0 sizes them; an unnamed device 2 that cannot hold them is left out.
  const p2p::DeviceChoice device = p2p::chooseDevices(
      {gpu(0, 1 * kGiB, CU_COMPUTEMODE_DEFAULT, "--device"), gpu(1, 80 * kGiB), gpu(2, 512 * kMiB)},
      std::nullopt, kDefault);
  EXPECT_EQ(device.bytes, 272 * kMiB);
  EXPECT_EQ(device.used, (std::vector<int>{0, 1}));
  EXPECT_EQ(leftOutOrdinals(device.leftOut), (std::vector<int>{2}));
}

TEST(ChoosePeerDevices, ANamedGpuThatCannotBeUsedWaivesTheRunNamingIt) {
  EXPECT_EQ(messageOf<ms::WaivedError>([] {
              p2p::chooseDevices({gpu(0, 80 * kGiB, CU_COMPUTEMODE_DEFAULT, "--pairs"),
                                  gpu(1, 0, CU_COMPUTEMODE_PROHIBITED, "--pairs")},
                                 std::nullopt, kDefault);
            }),
            "device 1 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created; --pairs names it");
  p2p::DeviceState held = gpu(0, 0, CU_COMPUTEMODE_EXCLUSIVE_PROCESS, "--device");
  held.contextRefused = "CUDA_ERROR_DEVICE_UNAVAILABLE";
  EXPECT_EQ(messageOf<ms::WaivedError>([&] {
              p2p::chooseDevices({held, gpu(1, 80 * kGiB)}, std::nullopt, kDefault);
            }),
            "device 0 refused a context (CUDA_ERROR_DEVICE_UNAVAILABLE): it is in compute mode "
            "EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS) and another process holds it; "
            "--device names it");
  // A --size that does not fit a named device is still a usage error.
  EXPECT_THROW(
      p2p::chooseDevices({gpu(0, 1 * kGiB, CU_COMPUTEMODE_DEFAULT, "--pairs")}, 1 * kGiB, kDefault),
      ms::UsageError);
}

TEST(PlanPairs, PairsOfALeftOutGpuAreNotTested) {
  const std::vector<p2p::LeftOutDevice> leftOut = {{1, "device 1 is busy"}};
  const p2p::PairPlan plan = p2p::planPairs(connected(3), {}, std::nullopt, leftOut);
  EXPECT_EQ(plan.tested, (std::vector<p2p::DevicePair>{{0, 2}, {2, 0}}));
  EXPECT_EQ(plan.devices, (std::vector<int>{0, 2}));
  EXPECT_TRUE(plan.lacking.empty());
  // With --device 0, the pairs of device 0 that do not involve device 1.
  EXPECT_EQ(p2p::planPairs(connected(3), {}, 0, leftOut).tested,
            (std::vector<p2p::DevicePair>{{0, 2}, {2, 0}}));
}

TEST(PlanPairs, LeavingOutAllButOneGpuWaivesNamingWhy) {
  EXPECT_EQ(messageOf<ms::WaivedError>([] {
              p2p::planPairs(connected(2), {}, std::nullopt,
                             {{1, "device 1 is in compute mode PROHIBITED"}});
            }),
            "needs 2 or more GPUs with peer access; this machine has 2, 1 of them usable; left "
            "out: device 1 is in compute mode PROHIBITED");
}

TEST(PlanPairs, AWaiverForMissingAccessAlsoNamesTheGpusLeftOut) {
  // 0 <-> 1 connected, 2 alone: with device 1 left out, no pair has access.
  p2p::DeviceTopology topology = connected(3);
  for (std::size_t other : {0u, 1u}) {
    topology.canAccessPeer[2][other] = false;
    topology.canAccessPeer[other][2] = false;
  }
  EXPECT_EQ(messageOf<ms::WaivedError>([&] {
              p2p::planPairs(topology, {}, std::nullopt, {{1, "device 1 is busy"}});
            }),
            "needs 2 or more GPUs with peer access; no pair of this machine's 3 GPUs has it "
            "(cuDeviceCanAccessPeer is 0 for owner:accessor 0:2, 2:0); left out: device 1 is "
            "busy");
}
