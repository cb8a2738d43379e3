// Which drivers run a sample: any of the toolkit's major version (NVIDIA's minor version
// compatibility), with the entry points it has. An older major version waives naming both
// versions; a missing entry point waives naming it and both versions, in NVIDIA's spelling.
#include <gtest/gtest.h>

#include "memsamples.hpp"
#include "support/devices.hpp"

namespace ms = memsamples;

TEST(DriverVersion, WrittenAsMajorDotMinor) {
  EXPECT_EQ(ms::formatCudaVersion(12040), "12.4");
  EXPECT_EQ(ms::formatCudaVersion(13000), "13.0");
  EXPECT_EQ(ms::formatCudaVersion(11080), "11.8");
  EXPECT_EQ(ms::formatCudaVersion(12090), "12.9");
  EXPECT_EQ(ms::formatCudaVersion(13010), "13.1");
}

TEST(DriverVersion, OlderDriverNamesBothVersions) {
  EXPECT_EQ(ms::driverTooOldReason(12040, 13000),
            "the NVIDIA driver supports CUDA 12.4, but this sample was built with CUDA 13.0 and "
            "needs a driver for CUDA 13.0 or newer");
  // A newer toolkit of the same major version needs a driver of that major version, any minor.
  EXPECT_EQ(ms::driverTooOldReason(12090, 13020),
            "the NVIDIA driver supports CUDA 12.9, but this sample was built with CUDA 13.2 and "
            "needs a driver for CUDA 13.0 or newer");
}

TEST(DriverVersion, SameMajorVersionWithAnOlderMinorRuns) {
  // Minor version compatibility: a CUDA 13.x program on any CUDA 13 driver (R580 or newer).
  // (Until this rule, 13.0 under a 13.1 build waived: "needs a driver for CUDA 13.1 or newer".)
  EXPECT_EQ(ms::driverTooOldReason(13000, 13010), "");
  EXPECT_EQ(ms::driverTooOldReason(13000, 13090), "");
  EXPECT_EQ(ms::driverTooOldReason(13010, 13020), "");
}

TEST(DriverVersion, SameOrNewerDriverIsFine) {
  EXPECT_EQ(ms::driverTooOldReason(13000, 13000), "");
  EXPECT_EQ(ms::driverTooOldReason(13010, 13000), "");
  EXPECT_EQ(ms::driverTooOldReason(14000, 13000), "");
}

TEST(DriverVersion, AMissingEntryPointIsNamedWithBothVersions) {
  EXPECT_EQ(ms::missingEntryPointReason("cuMemPrefetchBatchAsync", 13000, 13020),
            "the NVIDIA driver (CUDA 13.0) has no cuMemPrefetchBatchAsync, which this sample "
            "(built with CUDA 13.2) needs; a driver for CUDA 13.2 or newer has it");
  // A driver as new as the toolkit that still lacks it (a stand-in, a broken install): nothing
  // to advise but what is missing.
  EXPECT_EQ(ms::missingEntryPointReason("cuMemDiscardBatchAsync", 13000, 13000),
            "the NVIDIA driver (CUDA 13.0) has no cuMemDiscardBatchAsync, which this sample (built "
            "with CUDA 13.0) needs");
}
