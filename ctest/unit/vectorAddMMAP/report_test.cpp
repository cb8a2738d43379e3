// What the sample prints: the layout table, addresses, the leak tolerance and the cost units.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

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
            "  67108868 bytes requested, 66.0 MiB reserved and mapped (2097148 bytes of rounding "
            "at the end, unused)\n");
}

TEST(FormatLayoutTable, RoundSizesStayShort) {
  // 60 MiB in 3 stripes of 2 MiB granularity: 60 MiB is already a multiple of 6 MiB.
  const std::string even = vmm::formatLayoutTable(vmm::planStripes(60 * MiB, 2 * MiB, 3, {0}), 0);
  EXPECT_NE(even.find("  60.0 MiB requested, 60.0 MiB reserved and mapped\n"), std::string::npos)
      << even;
  // 62 MiB: 4 MiB of padding, a whole number of MiB.
  const std::string padded = vmm::formatLayoutTable(vmm::planStripes(62 * MiB, 2 * MiB, 3, {0}), 0);
  EXPECT_NE(padded.find("  62.0 MiB requested, 66.0 MiB reserved and mapped (4.00 MiB of "
                        "rounding at the end, unused)\n"),
            std::string::npos)
      << padded;
  // 4100 bytes: neither the request nor the padding is a whole unit.
  const std::string odd = vmm::formatLayoutTable(vmm::planStripes(4100, 2 * MiB, 3, {0}), 0);
  EXPECT_NE(odd.find("  4100 bytes requested, 6.00 MiB reserved and mapped (6287356 bytes of "
                     "rounding at the end, unused)\n"),
            std::string::npos)
      << odd;
  // Below 1 KiB formatBytes() is exact already.
  const std::string tiny = vmm::formatLayoutTable(vmm::planStripes(1000, 1024, 1, {0}), 0);
  EXPECT_NE(tiny.find("  1000 B requested, 1.00 KiB reserved and mapped (24 B of rounding at the "
                      "end, unused)\n"),
            std::string::npos)
      << tiny;
}

TEST(ReservationProblems, NoneWhenEveryStripeSeesTheRange) {
  const std::vector<vmm::StripeReservationView> views = {{0, 0x7f0000000000ull, 6 * MiB, ""},
                                                         {1, 0x7f0000000000ull, 6 * MiB, ""}};
  EXPECT_TRUE(vmm::reservationProblems(0x7f0000000000ull, 6 * MiB, views).empty());
  EXPECT_TRUE(vmm::reservationProblems(0x7f0000000000ull, 6 * MiB, {}).empty());
}

TEST(ReservationProblems, NameTheStripeAndBothRangesExactly) {
  const std::vector<vmm::StripeReservationView> views = {
      {0, 0x7f0000000000ull, 6 * MiB, ""},
      {1, 0x7f0000200000ull, 2 * MiB, ""},      // its own reservation
      {2, 0x7f0000000000ull, 6 * MiB - 4, ""},  // a size that formatBytes() would round
      {3, std::nullopt, std::nullopt,
       "RANGE_START_ADDR: CUDA_ERROR_INVALID_VALUE (invalid argument)"},
      {4, 0x7f0000000000ull, std::nullopt, ""}};
  EXPECT_EQ(
      vmm::reservationProblems(0x7f0000000000ull, 6 * MiB, views),
      (std::vector<std::string>{
          "stripe 1 reports the reservation 0x7f0000200000 + 2097152 bytes (RANGE_START_ADDR + "
          "RANGE_SIZE), not the range's 0x7f0000000000 + 6291456 bytes: the range is not one "
          "reservation",
          "stripe 2 reports the reservation 0x7f0000000000 + 6291452 bytes (RANGE_START_ADDR + "
          "RANGE_SIZE), not the range's 0x7f0000000000 + 6291456 bytes: the range is not one "
          "reservation",
          "stripe 3: cuPointerGetAttribute could not report its reservation (RANGE_START_ADDR: "
          "CUDA_ERROR_INVALID_VALUE (invalid argument))",
          "stripe 4: cuPointerGetAttribute could not report its reservation (no answer)"}));
}

TEST(AccessFlagsName, NamesTheThreeFlagsAndNumbersTheRest) {
  EXPECT_EQ(vmm::accessFlagsName(CU_MEM_ACCESS_FLAGS_PROT_READWRITE), "read-write");
  EXPECT_EQ(vmm::accessFlagsName(CU_MEM_ACCESS_FLAGS_PROT_READ), "read");
  EXPECT_EQ(vmm::accessFlagsName(CU_MEM_ACCESS_FLAGS_PROT_NONE), "none");
  EXPECT_EQ(vmm::accessFlagsName(42), "flags 42");
}

TEST(AccessProblems, EveryMappingDeviceMustBeReadWrite) {
  const std::vector<vmm::DeviceAccessView> views = {
      {0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, ""},
      {1, CU_MEM_ACCESS_FLAGS_PROT_NONE, ""},  // not a mapping device: not judged
      {2, CU_MEM_ACCESS_FLAGS_PROT_READ, ""},
      {3, std::nullopt, "CUDA_ERROR_INVALID_DEVICE (invalid device ordinal)"}};
  EXPECT_TRUE(vmm::accessProblems({0}, views).empty());
  EXPECT_EQ(vmm::accessProblems({0, 2, 3, 5}, views),
            (std::vector<std::string>{
                "mapping device 2 has read access (cuMemGetAccess), not the read-write access "
                "cuMemSetAccess granted",
                "mapping device 3: cuMemGetAccess failed (CUDA_ERROR_INVALID_DEVICE (invalid "
                "device ordinal))",
                "mapping device 5 was not asked (cuMemGetAccess) for its access"}));
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
