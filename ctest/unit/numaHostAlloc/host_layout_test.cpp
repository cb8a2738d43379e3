// Sizing of the sample's host vectors.
#include <gtest/gtest.h>

#include "host_layout.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;
namespace mn = memsamples::numa;

namespace {
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
}  // namespace

TEST(HostLayout, VectorStrideIsPageAligned) {
  EXPECT_EQ(mn::vectorStride(4), 4096u);
  EXPECT_EQ(mn::vectorStride(4096), 4096u);
  EXPECT_EQ(mn::vectorStride(4100), 8192u);
  EXPECT_EQ(mn::vectorStride(kGiB), kGiB);
}

TEST(HostLayout, MemAvailable) {
  EXPECT_EQ(mn::memAvailableBytes("MemTotal:  100 kB\nMemFree:  50 kB\nMemAvailable:   70 kB\n"),
            70u * 1024u);
  EXPECT_FALSE(mn::memAvailableBytes("MemTotal: 100 kB\n").has_value());
  EXPECT_FALSE(mn::memAvailableBytes("MemAvailable: lots kB\n").has_value());
  EXPECT_FALSE(mn::memAvailableBytes("MemAvailable: 70 MB\n").has_value());
  EXPECT_FALSE(mn::memAvailableBytes("MemAvailable: 70 kB extra\n").has_value());
  EXPECT_FALSE(mn::memAvailableBytes("").has_value());
}

TEST(HostLayout, RequestedSizeMustFit) {
  EXPECT_EQ(mn::chooseHostVectorBytes(64 * kMiB, kGiB, 16 * kGiB, 3), 64 * kMiB);
  try {
    mn::chooseHostVectorBytes(6, kGiB, 16 * kGiB, 3);
    ADD_FAILURE() << "accepted 6 bytes";
  } catch (const ms::UsageError& error) {
    EXPECT_STREQ(error.what(), "--size 6 is not a multiple of 4 bytes (one float)");
  }
  try {
    mn::chooseHostVectorBytes(2 * kGiB, kGiB, 3 * kGiB, 3);
    ADD_FAILURE() << "accepted 3 x 2 GiB in 3 GiB";
  } catch (const ms::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "--size 2.00 GiB needs 3 host vectors but the host has only 3.00 GiB available; "
                 "choose at most 1.00 GiB");
  }
}

TEST(HostLayout, DefaultShrinksToEightyPercent) {
  EXPECT_EQ(mn::chooseHostVectorBytes(std::nullopt, kGiB, 100 * kGiB, 3), kGiB);
  // 80 % of 1 GiB over 3 vectors, rounded down to 2 MiB.
  EXPECT_EQ(mn::chooseHostVectorBytes(std::nullopt, kGiB, kGiB, 3), 272 * kMiB);
  try {
    mn::chooseHostVectorBytes(std::nullopt, kGiB, 4 * kMiB, 3);
    ADD_FAILURE() << "accepted 4 MiB for three vectors";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(),
                 "the host has only 4.00 MiB available, too little for 3 vectors of 2 MiB");
  }
  EXPECT_THROW(mn::chooseHostVectorBytes(std::nullopt, kGiB, kGiB, 0), std::invalid_argument);
}
