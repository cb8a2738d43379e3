// A driver older than the toolkit waives a sample with both versions named, in NVIDIA's spelling.
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
  // Same major version, older minor: still older than the entry points cuda.h asked for.
  EXPECT_EQ(ms::driverTooOldReason(13000, 13010),
            "the NVIDIA driver supports CUDA 13.0, but this sample was built with CUDA 13.1 and "
            "needs a driver for CUDA 13.1 or newer");
}

TEST(DriverVersion, SameOrNewerDriverIsFine) {
  EXPECT_EQ(ms::driverTooOldReason(13000, 13000), "");
  EXPECT_EQ(ms::driverTooOldReason(13010, 13000), "");
  EXPECT_EQ(ms::driverTooOldReason(14000, 13000), "");
}
