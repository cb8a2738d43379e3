// Which GPUs a run uses beside the chosen one (issue 33, R1), on fake machines: a GPU the user
// did not name is left out, with the reason, when its compute mode forbids a context, when it
// refused one, or when it lacks the memory for the vectors; it never shrinks the vectors. A named
// GPU is used, or the run is waived naming it. And which kinds a device cannot make (issue 36):
// only an attribute that answers 0 waives a kind, named with the reason; a failing query fails.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "resource_plan.hpp"
#include "test_support.hpp"

namespace mr = memsamples::resource;
using memsamples::test::messageOf;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kDefault = 64 * kMiB;  // the sample's default vector size

mr::OtherDevice other(int ordinal, std::uint64_t freeBytes, int mode = CU_COMPUTEMODE_DEFAULT,
                      bool named = false) {
  mr::OtherDevice device;
  device.ordinal = ordinal;
  device.computeMode = mode;
  device.named = named;
  device.freeBytes = freeBytes;
  return device;
}

std::vector<int> leftOutOrdinals(const mr::DeviceChoice& choice) {
  std::vector<int> ordinals;
  for (const mr::LeftOutDevice& device : choice.leftOut)
    ordinals.push_back(device.ordinal);
  return ordinals;
}

}  // namespace

TEST(ChooseDevices, EveryHealthyGpuTakesPartAndTheChosenOneSizesTheVectors) {
  const mr::DeviceChoice choice = mr::chooseDevices(
      {0, 80 * kGiB}, {other(1, 80 * kGiB), other(2, 40 * kGiB)}, std::nullopt, kDefault, 4);
  EXPECT_EQ(choice.used, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(choice.leftOut.empty());
  EXPECT_EQ(choice.bytes, kDefault);
  EXPECT_EQ(choice.sizedFor.device, 0);
}

// The machine of issue 33 R1: device 0 is fine; device 1 is PROHIBITED, device 2 is
// EXCLUSIVE_PROCESS and held by another process (cuCtxCreate refused it), device 3 is almost
// full. Before the fix every one of them took part: the run asked device 1 for a context and
// sized its vectors for device 3's 100 MiB.
TEST(ChooseDevices, UnnamedGpusThatForbidOrLackMemoryAreLeftOutWithTheReason) {
  mr::OtherDevice held = other(2, 0, CU_COMPUTEMODE_EXCLUSIVE_PROCESS);
  held.contextRefused =
      "cuCtxCreate: CUDA_ERROR_DEVICE_UNAVAILABLE (CUDA-capable device(s) is/are "
      "busy or unavailable)";
  const mr::DeviceChoice choice = mr::chooseDevices(
      {0, 80 * kGiB},
      {other(1, 0, CU_COMPUTEMODE_PROHIBITED), held, other(3, 100 * kMiB), other(4, 80 * kGiB)},
      std::nullopt, kDefault, 4);

  EXPECT_EQ(choice.used, (std::vector<int>{0, 4}));
  EXPECT_EQ(leftOutOrdinals(choice), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(choice.bytes, kDefault);  // not shrunk for device 3
  EXPECT_EQ(choice.sizedFor.device, 0);
  EXPECT_EQ(choice.leftOut[0].reason,
            "device 1 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created");
  EXPECT_EQ(choice.leftOut[1].reason,
            "device 2 refused a context (cuCtxCreate: CUDA_ERROR_DEVICE_UNAVAILABLE (CUDA-capable "
            "device(s) is/are busy or unavailable)): it is in compute mode EXCLUSIVE_PROCESS "
            "(CU_COMPUTEMODE_EXCLUSIVE_PROCESS) and another process holds it");
  EXPECT_EQ(choice.leftOut[2].reason,
            "device 3 has only 100 MiB free, too little for 3 vectors of 64.0 MiB");
}

TEST(ChooseDevices, AContextForbiddenModeIsKnownBeforeAnyContextIsAsked) {
  EXPECT_NE(mr::contextForbidden(other(1, 0, CU_COMPUTEMODE_PROHIBITED)), "");
  // One process may hold an EXCLUSIVE_PROCESS device: cuCtxCreate is asked, and tells.
  EXPECT_EQ(mr::contextForbidden(other(1, 0, CU_COMPUTEMODE_EXCLUSIVE_PROCESS)), "");
  EXPECT_EQ(mr::contextForbidden(other(1, 0, CU_COMPUTEMODE_DEFAULT)), "");
}

TEST(ChooseDevices, TheMemoryRuleIsTheShareChooseBufferBytesLeavesADevice) {
  // 3 vectors of 64 MiB fit in 80 % of 240 MiB (192 MiB), not in 80 % of 239 MiB.
  const mr::DeviceChoice fits =
      mr::chooseDevices({0, 80 * kGiB}, {other(1, 240 * kMiB)}, std::nullopt, kDefault, 4);
  EXPECT_EQ(fits.used, (std::vector<int>{0, 1}));
  const mr::DeviceChoice tight =
      mr::chooseDevices({0, 80 * kGiB}, {other(1, 239 * kMiB)}, std::nullopt, kDefault, 4);
  EXPECT_EQ(tight.used, (std::vector<int>{0}));
  // With --size the same rule holds for the size asked.
  const mr::DeviceChoice asked =
      mr::chooseDevices({0, 80 * kGiB}, {other(1, 1 * kGiB)}, 512 * kMiB, kDefault, 4);
  EXPECT_EQ(asked.bytes, 512 * kMiB);
  EXPECT_EQ(leftOutOrdinals(asked), (std::vector<int>{1}));
}

TEST(ChooseDevices, ANamedGpuIsUsedAndSizesTheVectorsEvenWhenItIsSmall) {
  const mr::DeviceChoice choice =
      mr::chooseDevices({0, 80 * kGiB}, {other(1, 100 * kMiB, CU_COMPUTEMODE_DEFAULT, true)},
                        std::nullopt, kDefault, 4);
  EXPECT_EQ(choice.used, (std::vector<int>{0, 1}));
  EXPECT_TRUE(choice.leftOut.empty());
  EXPECT_EQ(choice.sizedFor.device, 1);
  EXPECT_EQ(choice.bytes, 26 * kMiB);  // 80 % of 100 MiB over 3 vectors, in 2 MiB steps
}

TEST(ChooseDevices, ANamedGpuThatCannotBeUsedWaivesTheRunNamingIt) {
  EXPECT_EQ(messageOf<memsamples::WaivedError>([] {
              mr::chooseDevices({0, 80 * kGiB}, {other(1, 0, CU_COMPUTEMODE_PROHIBITED, true)},
                                std::nullopt, kDefault, 4);
            }),
            "device 1 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created; --devices names it");
  mr::OtherDevice held = other(2, 0, CU_COMPUTEMODE_EXCLUSIVE_PROCESS, true);
  held.contextRefused = "cuCtxCreate: CUDA_ERROR_DEVICE_UNAVAILABLE";
  EXPECT_THROW(mr::chooseDevices({0, 80 * kGiB}, {held}, std::nullopt, kDefault, 4),
               memsamples::WaivedError);
}

TEST(ChooseDevices, ASizeThatDoesNotFitTheChosenDeviceIsStillAUsageError) {
  EXPECT_THROW(mr::chooseDevices({0, 1 * kGiB}, {}, 1 * kGiB, kDefault, 4), memsamples::UsageError);
}

TEST(CheckNamedDevices, AGpuThatDoesNotExistIsAUsageErrorNamingTheValidOnes) {
  EXPECT_NO_THROW(mr::checkNamedDevices({0, 1}, 2));
  EXPECT_NO_THROW(mr::checkNamedDevices({}, 1));
  EXPECT_EQ(messageOf<memsamples::UsageError>([] { mr::checkNamedDevices({1, 2}, 2); }),
            "--devices: device 2 does not exist: this machine has 2 CUDA devices (valid: 0..1)");
  EXPECT_EQ(messageOf<memsamples::UsageError>([] { mr::checkNamedDevices({-1}, 1); }),
            "--devices: device -1 does not exist: this machine has 1 CUDA device (valid: 0)");
}

// Issue 36: the kinds a device cannot make are named with the reason; only an answer of 0 waives.
TEST(KindUnavailableReason, AnAttributeThatAnswersZeroNamesWhatTheDeviceLacks) {
  const auto all = [](CUdevice_attribute) { return 1; };
  for (const mr::ResourceKind kind : mr::allResourceKinds())
    EXPECT_EQ(mr::kindUnavailableReason(kind, all, true), "") << mr::kindName(kind);

  const auto noManaged = [](CUdevice_attribute attribute) {
    return attribute == CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS ? 0 : 1;
  };
  EXPECT_EQ(mr::kindUnavailableReason(mr::ResourceKind::Managed, noManaged, true),
            "no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 0)");
  EXPECT_EQ(mr::kindUnavailableReason(mr::ResourceKind::Pinned, noManaged, true), "");

  const auto noVmm = [](CUdevice_attribute attribute) {
    return attribute == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED ? 0 : 1;
  };
  EXPECT_EQ(mr::kindUnavailableReason(mr::ResourceKind::Vmm, noVmm, true),
            "no virtual memory management "
            "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
  EXPECT_NE(mr::kindUnavailableReason(mr::ResourceKind::Numa, all, false).find("libnuma"),
            std::string::npos);
}

TEST(KindUnavailableReason, AFailingAttributeQueryIsNotWaived) {
  const auto failing = [](CUdevice_attribute) -> int {
    throw memsamples::CudaError(CUDA_ERROR_INVALID_DEVICE,
                                "cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_DEVICE");
  };
  for (const mr::ResourceKind kind : mr::allResourceKinds()) {
    EXPECT_EQ(
        messageOf<memsamples::CudaError>([&] { mr::kindUnavailableReason(kind, failing, true); }),
        "cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_DEVICE")
        << mr::kindName(kind);
  }
}
