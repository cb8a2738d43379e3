// The environment that stops the sample before any multicast call: the switches by which a
// machine's owner turns NVLink multicast off, and blocking launches.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "multicast_plan.hpp"

namespace mc = memsamples::multicast;

namespace {

using Environment = std::map<std::string, std::string>;

/// A lookup in @p variables only.
memsamples::EnvironmentLookup lookupIn(const Environment& variables) {
  return [&variables](const char* name) -> const char* {
    const auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

std::string turnedOff(const Environment& variables) {
  return mc::multicastTurnedOff(lookupIn(variables));
}

TEST(MulticastTurnedOff, NothingSetMeansWelcome) {
  EXPECT_EQ(turnedOff({}), "");
  EXPECT_EQ(turnedOff({{"NCCL_NVLS_ENABLE", "1"}}), "");
  EXPECT_EQ(turnedOff({{"NCCL_NVLS_ENABLE", "2"}}), "");  // NCCL's own choice, not "off"
  EXPECT_EQ(turnedOff({{"NCCL_NVLS_ENABLE", ""}}), "");
  EXPECT_EQ(turnedOff({{"NVSHMEM_DISABLE_NVLS", "0"}}), "");
  EXPECT_EQ(turnedOff({{"NVSHMEM_DISABLE_NVLS", "false"}}), "");
  EXPECT_EQ(turnedOff({{"TORCH_SYMM_MEM_DISABLE_MULTICAST", ""}}), "");
  EXPECT_EQ(turnedOff({{"SOME_OTHER_VARIABLE", "1"}}), "");
}

TEST(MulticastTurnedOff, NcclSwitchNamesItself) {
  EXPECT_EQ(turnedOff({{"NCCL_NVLS_ENABLE", "0"}}),
            "NVLink multicast is turned off on this machine (NCCL_NVLS_ENABLE=0); this sample "
            "creates multicast objects only where they are welcome");
}

TEST(MulticastTurnedOff, NvshmemAndPyTorchSwitchesTakeAnyTrueSpelling) {
  for (const char* value : {"1", "y", "YES", "True", "on"}) {
    EXPECT_NE(turnedOff({{"NVSHMEM_DISABLE_NVLS", value}})
                  .find(std::string("(NVSHMEM_DISABLE_NVLS=") + value + ")"),
              std::string::npos)
        << value;
    EXPECT_NE(turnedOff({{"TORCH_SYMM_MEM_DISABLE_MULTICAST", value}})
                  .find(std::string("(TORCH_SYMM_MEM_DISABLE_MULTICAST=") + value + ")"),
              std::string::npos)
        << value;
  }
}

TEST(MulticastTurnedOff, FirstSwitchInNcclNvshmemTorchOrderIsNamed) {
  const std::string all = turnedOff({{"NCCL_NVLS_ENABLE", "0"},
                                     {"NVSHMEM_DISABLE_NVLS", "1"},
                                     {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}});
  EXPECT_NE(all.find("(NCCL_NVLS_ENABLE=0)"), std::string::npos);
  EXPECT_NE(turnedOff({{"NCCL_NVLS_ENABLE", "1"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}})
                .find("(TORCH_SYMM_MEM_DISABLE_MULTICAST=1)"),
            std::string::npos);
}

TEST(LaunchesBlock, OnlyCudaLaunchBlockingOneBlocks) {
  EXPECT_EQ(mc::launchesBlock(lookupIn({})), "");
  EXPECT_EQ(mc::launchesBlock(lookupIn({{"CUDA_LAUNCH_BLOCKING", "0"}})), "");
  EXPECT_EQ(mc::launchesBlock(lookupIn({{"CUDA_LAUNCH_BLOCKING", ""}})), "");
  EXPECT_EQ(mc::launchesBlock(lookupIn({{"CUDA_LAUNCH_BLOCKING", "1"}})),
            "CUDA_LAUNCH_BLOCKING=1 makes every launch wait for its kernel, but the all-reduce "
            "kernels of all GPUs must run at once (they meet at a barrier); unset it to run this "
            "sample");
}

}  // namespace
