// What the sample prints: the layout table, addresses, the leak tolerance and the cost units.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "striped_vmm_logic.hpp"

namespace vmm = memsamples::vmm;

namespace {
constexpr std::uint64_t MiB = 1ull << 20;
}  // namespace

TEST(FormatAddress, Hex) {
  EXPECT_EQ(vmm::formatAddress(0), "0x0");
  EXPECT_EQ(vmm::formatAddress(0x600000), "0x600000");
  EXPECT_EQ(vmm::formatAddress(0x7f3a00000000ull), "0x7f3a00000000");
}

TEST(SampleIndices, AllWhenTheyFitElseHeadAndTail) {
  EXPECT_EQ(vmm::sampleIndices(0, 8), std::vector<int>{});
  EXPECT_EQ(vmm::sampleIndices(3, 8), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(vmm::sampleIndices(8, 8), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(vmm::sampleIndices(64, 8), (std::vector<int>{0, 1, 2, 3, 60, 61, 62, 63}));
  EXPECT_EQ(vmm::sampleIndices(64, 5), (std::vector<int>{0, 1, 2, 62, 63}));
  EXPECT_EQ(vmm::sampleIndices(64, 1), (std::vector<int>{0}));
  EXPECT_EQ(vmm::sampleIndices(5, 0), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(FormatLayoutTable, OneRowPerStripeWithDeviceAddressOffsetAndSize) {
  const vmm::StripeLayout layout = vmm::planStripes(64 * MiB + 4, 2 * MiB, 3, {0, 1});
  const std::string table = vmm::formatLayoutTable(layout, 0x7f0000000000ull);
  EXPECT_EQ(table,
            "  stripe  device  VA start            VA offset     size\n"
            "       0       0  0x7f0000000000      0x0           22.0 MiB\n"
            "       1       1  0x7f0001600000      0x1600000     22.0 MiB\n"
            "       2       0  0x7f0002c00000      0x2c00000     22.0 MiB\n"
            "  64.0 MiB requested, 66.0 MiB reserved and mapped (2.00 MiB of rounding at the end, "
            "unused)\n");
}

TEST(FormatLayoutTable, LongLayoutsAreShortenedWithACount) {
  const vmm::StripeLayout layout = vmm::planStripes(128 * MiB, 2 * MiB, 64, {0});
  const std::string table = vmm::formatLayoutTable(layout, 0, 4);
  EXPECT_NE(table.find("       1       0  0x200000"), std::string::npos) << table;
  EXPECT_NE(table.find("     ...  (60 more stripes)\n"), std::string::npos) << table;
  EXPECT_NE(table.find("      62       0  0x7c00000"), std::string::npos) << table;
  EXPECT_NE(table.find("128 MiB requested, 128 MiB reserved and mapped\n"), std::string::npos)
      << table;
}

TEST(FreeMemoryRestored, AllowsLessThanOneGranularityOfNoise) {
  constexpr std::uint64_t g = 2 * MiB;
  EXPECT_TRUE(vmm::freeMemoryRestored(100 * MiB, 100 * MiB, g));
  EXPECT_TRUE(vmm::freeMemoryRestored(100 * MiB, 100 * MiB + 1, g));  // someone else freed
  EXPECT_TRUE(vmm::freeMemoryRestored(100 * MiB, 100 * MiB - (g - 1), g));
  EXPECT_FALSE(vmm::freeMemoryRestored(100 * MiB, 100 * MiB - g, g));  // one leaked stripe
  EXPECT_FALSE(vmm::freeMemoryRestored(100 * MiB, 0, g));
}

TEST(MillisecondsPerGiB, NormalizesToOneGiB) {
  EXPECT_DOUBLE_EQ(vmm::millisecondsPerGiB(2.0, 1ull << 30), 2.0);
  EXPECT_DOUBLE_EQ(vmm::millisecondsPerGiB(2.0, 1ull << 29), 4.0);
  EXPECT_DOUBLE_EQ(vmm::millisecondsPerGiB(3.0, 3ull << 30), 1.0);
  EXPECT_TRUE(std::isnan(vmm::millisecondsPerGiB(1.0, 0)));
}
