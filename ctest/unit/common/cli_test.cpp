// Command-line parsing: sizes, integers, lists, device validation and the CommandLine class.
#include <gtest/gtest.h>

#include "memsamples.hpp"
#include "support/cli.hpp"
#include "support/devices.hpp"

namespace ms = memsamples;

TEST(ParseSize, PlainBytesAndBinarySuffixes) {
  EXPECT_EQ(ms::parseSize("4096", "--size"), 4096u);
  EXPECT_EQ(ms::parseSize("64K", "--size"), 64u << 10);
  EXPECT_EQ(ms::parseSize("64k", "--size"), 64u << 10);
  EXPECT_EQ(ms::parseSize("256M", "--size"), 256ull << 20);
  EXPECT_EQ(ms::parseSize("1G", "--size"), 1ull << 30);
  EXPECT_EQ(ms::parseSize("1GiB", "--size"), 1ull << 30);
  EXPECT_EQ(ms::parseSize("3MB", "--size"), 3ull << 20);
  EXPECT_EQ(ms::parseSize("2T", "--size"), 2ull << 40);
  EXPECT_EQ(ms::parseSize("100B", "--size"), 100u);
}

TEST(ParseSize, RejectsMalformedInputWithTheOptionName) {
  for (const char* bad : {"", "G", "12Q", "1.5G", "-1", "1 G", "1GG", "0x10", "1Gx", " 1"}) {
    try {
      ms::parseSize(bad, "--size");
      FAIL() << "accepted '" << bad << "'";
    } catch (const ms::UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("--size"), std::string::npos) << error.what();
    }
  }
}

TEST(ParseSize, RejectsZeroAndOverflow) {
  EXPECT_THROW(ms::parseSize("0", "--size"), ms::UsageError);
  EXPECT_THROW(ms::parseSize("99999999999999999999", "--size"), ms::UsageError);
  EXPECT_THROW(ms::parseSize("17179869184G", "--size"), ms::UsageError);  // 2^34 GiB = 2^64
  EXPECT_EQ(ms::parseSize("17179869183G", "--size"), 17179869183ull << 30);
  try {
    ms::parseSize("99999999999999999999", "--size");
    FAIL() << "accepted a size above 2^64";
  } catch (const ms::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("too large"), std::string::npos);
  }
}

TEST(ParseSize, EnforcesBounds) {
  EXPECT_THROW(ms::parseSize("1K", "--size", 4096), ms::UsageError);
  EXPECT_THROW(ms::parseSize("2G", "--size", 1, 1ull << 30), ms::UsageError);
  EXPECT_EQ(ms::parseSize("1G", "--size", 1, 1ull << 30), 1ull << 30);
  // Exactly the minimum is accepted, one byte below it is not (a `>` for `>=` must fail here).
  EXPECT_EQ(ms::parseSize("4K", "--size", 4096), 4096u);
  EXPECT_EQ(ms::parseSize("4096", "--size", 4096), 4096u);
  EXPECT_THROW(ms::parseSize("4095", "--size", 4096), ms::UsageError);
  EXPECT_EQ(ms::parseSize("1", "--size"), 1u);  // the default minimum
}

TEST(ParseInteger, AcceptsRangeAndRejectsRest) {
  EXPECT_EQ(ms::parseInteger("7", "--n", 0, 10), 7);
  EXPECT_EQ(ms::parseInteger("-1", "--n", -5, 10), -1);
  EXPECT_THROW(ms::parseInteger("11", "--n", 0, 10), ms::UsageError);
  EXPECT_THROW(ms::parseInteger("x", "--n", 0, 10), ms::UsageError);
  EXPECT_THROW(ms::parseInteger("", "--n", 0, 10), ms::UsageError);
  EXPECT_THROW(ms::parseInteger("3x", "--n", 0, 10), ms::UsageError);
  EXPECT_THROW(ms::parseInteger("99999999999999999999", "--n", 0, 10), ms::UsageError);
}

TEST(ParseIntegerList, ParsesAndRejectsDuplicatesAndGaps) {
  EXPECT_EQ(ms::parseIntegerList("0,1,3", "--backing", 0, 7), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(ms::parseIntegerList("2", "--backing", 0, 7), (std::vector<int>{2}));
  EXPECT_THROW(ms::parseIntegerList("0,0", "--backing", 0, 7), ms::UsageError);
  EXPECT_THROW(ms::parseIntegerList("0,,1", "--backing", 0, 7), ms::UsageError);
  EXPECT_THROW(ms::parseIntegerList("0,", "--backing", 0, 7), ms::UsageError);
  EXPECT_THROW(ms::parseIntegerList("8", "--backing", 0, 7), ms::UsageError);
}

TEST(FormatBytes, PicksTheUnit) {
  EXPECT_EQ(ms::formatBytes(512), "512 B");
  EXPECT_EQ(ms::formatBytes(2048), "2.00 KiB");
  EXPECT_EQ(ms::formatBytes(64ull << 20), "64.0 MiB");
  EXPECT_EQ(ms::formatBytes(1ull << 30), "1.00 GiB");
  EXPECT_EQ(ms::formatBytes(300ull << 30), "300 GiB");
}

TEST(ChooseBufferBytes, DefaultShrinksToFreeMemory) {
  constexpr std::uint64_t GiB = 1ull << 30;
  EXPECT_EQ(ms::chooseBufferBytes(std::nullopt, GiB, 100 * GiB, 3, 4), GiB);
  const std::uint64_t shrunk = ms::chooseBufferBytes(std::nullopt, GiB, 2 * GiB, 3, 4);
  EXPECT_LT(shrunk, GiB);
  EXPECT_LE(3 * shrunk, 2 * GiB * 8 / 10);
  EXPECT_EQ(shrunk % (2u << 20), 0u);
  EXPECT_THROW(ms::chooseBufferBytes(std::nullopt, GiB, 1024, 3, 4), std::runtime_error);
}

TEST(ChooseBufferBytes, RequestedSizeIsCheckedNotChanged) {
  constexpr std::uint64_t GiB = 1ull << 30;
  EXPECT_EQ(ms::chooseBufferBytes(4100, GiB, 100 * GiB, 3, 4), 4100u);
  EXPECT_THROW(ms::chooseBufferBytes(4101, GiB, 100 * GiB, 3, 4), ms::UsageError);
  EXPECT_THROW(ms::chooseBufferBytes(40 * GiB, GiB, 100 * GiB, 3, 4), ms::UsageError);
  // 99999999G * 3 would overflow 64 bits: still a clean error, not a wrap-around.
  EXPECT_THROW(ms::chooseBufferBytes(99999999ull << 30, GiB, 100 * GiB, 3, 4), ms::UsageError);
}

TEST(ChooseBufferBytes, NearMissesShowExactBytes) {
  constexpr std::uint64_t GiB = 1ull << 30;
  try {
    ms::chooseBufferBytes(GiB + 4, GiB, 3 * GiB, 3, 4, "the host");
    FAIL();
  } catch (const ms::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "--size 1073741828 bytes needs 3 buffers but the host has only 3221225472 bytes "
                 "free; choose at most 1073741824 bytes");
  }
  try {
    ms::chooseBufferBytes(2 * GiB, GiB, 3 * GiB, 3, 4);
    FAIL();
  } catch (const ms::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "--size 2.00 GiB needs 3 buffers but the device has only 3.00 GiB free; choose "
                 "at most 1.00 GiB");
  }
}

TEST(Devices, FastestIsMostSmsTimesClock) {
  EXPECT_EQ(ms::pickFastestDevice({{132, 1980000}}), 0);
  EXPECT_EQ(ms::pickFastestDevice({{80, 1500000}, {132, 1980000}, {108, 1410000}}), 1);
  EXPECT_EQ(ms::pickFastestDevice({{100, 1000}, {100, 1000}}), 0);  // tie: lower ordinal
  EXPECT_THROW(ms::pickFastestDevice({}), std::invalid_argument);
}

TEST(Devices, OrdinalValidationNamesTheCount) {
  EXPECT_EQ(ms::validateDeviceOrdinal(0, 1), 0);
  EXPECT_EQ(ms::validateDeviceOrdinal(3, 4), 3);
  try {
    ms::validateDeviceOrdinal(7, 1);
    FAIL();
  } catch (const ms::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "--device 7 is out of range: this machine has 1 CUDA device (valid: 0)");
  }
  try {
    ms::validateDeviceOrdinal(-1, 4);
    FAIL();
  } catch (const ms::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "--device -1 is out of range: this machine has 4 CUDA devices (valid: 0..3)");
  }
}

TEST(Devices, PeakBandwidthFromClockAndBus) {
  // H200: 3201 MHz, 6016-bit bus -> 4.81 TB/s.
  EXPECT_NEAR(ms::peakBandwidthGBps(3201000, 6016), 4814.3, 0.1);
}

namespace {
struct Parsed {
  ms::CommonOptions common;
  std::optional<std::uint64_t> size;
  bool verbose = false;
  std::vector<int> list;
  ms::CommandLine cli{"sample", "Does things."};
  Parsed() {
    cli.addCommonOptions(common);
    cli.addSize("size", "bytes", size);
    cli.addFlag("verbose", "more", verbose);
    cli.addIntegerList("backing", "devices", list, 0, 63);
  }
};
}  // namespace

TEST(CommandLine, AcceptsAllSpellings) {
  Parsed p;
  ASSERT_TRUE(p.cli.parse(std::vector<std::string>{"--device", "2", "--size=64M", "-iterations=5",
                                                   "--verbose", "--backing", "0,1", "--json", "-",
                                                   "--quiet"}));
  EXPECT_EQ(p.common.device, 2);
  EXPECT_EQ(p.size, 64ull << 20);
  EXPECT_EQ(p.common.iterations, 5);
  EXPECT_TRUE(p.verbose);
  EXPECT_EQ(p.list, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.common.jsonPath, "-");
  EXPECT_TRUE(p.common.quiet);
}

TEST(CommandLine, CudaSamplesDeviceSpelling) {
  Parsed p;
  ASSERT_TRUE(p.cli.parse(std::vector<std::string>{"-device=1"}));
  EXPECT_EQ(p.common.device, 1);
  Parsed q;
  ASSERT_TRUE(q.cli.parse(std::vector<std::string>{"--device=-1"}));
  EXPECT_EQ(q.common.device, -1);  // parsed here, rejected against the device count later
}

TEST(CommandLine, DefaultsWhenNothingGiven) {
  Parsed p;
  ASSERT_TRUE(p.cli.parse(std::vector<std::string>{}));
  EXPECT_FALSE(p.common.device.has_value());
  EXPECT_FALSE(p.size.has_value());
  EXPECT_EQ(p.common.iterations, 20);
  EXPECT_FALSE(p.common.quiet);
}

TEST(CommandLine, EveryMistakeIsOneClearLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"stray"}, "unexpected argument 'stray'"},
      {{"--device", "x"}, "invalid value 'x' for --device: expected an integer"},
      {{"--device"}, "--device needs a value"},
      {{"--size", "0"}, "--size must be greater than 0"},
      {{"--size", "12Q"}, "unknown suffix 'Q'"},
      {{"--iterations", "0"}, "out of range"},
      {{"--quiet=yes"}, "--quiet takes no value"},
      {{"--json="}, "--json needs a non-empty value"},
  };
  for (const auto& [args, expected] : cases) {
    Parsed p;
    try {
      p.cli.parse(args);
      FAIL() << "accepted " << args[0];
    } catch (const ms::UsageError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(expected), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

// A size option with a maximum and a unit (a float vector's: 1T, 4 bytes), as samples 01-07 use:
// both are checked while parsing, so a bad --size is a usage error before any device is asked.
namespace {
std::string sizeError(const std::string& value) {
  std::optional<std::uint64_t> size;
  ms::CommandLine cli{"sample", "Does things."};
  cli.addSize("size", "bytes per vector", size, 1, 1ull << 40, sizeof(float));
  try {
    cli.parse(std::vector<std::string>{"--size", value});
  } catch (const ms::UsageError& error) {
    return error.what();
  }
  return "accepted " + std::to_string(size.value_or(0));
}
}  // namespace

TEST(CommandLine, SizeMaxAndMultipleOf) {
  EXPECT_EQ(sizeError("4096"), "accepted 4096");
  EXPECT_EQ(sizeError("1T"), "accepted 1099511627776");  // the maximum itself is accepted
  EXPECT_EQ(sizeError("4"), "accepted 4");
  EXPECT_EQ(sizeError("3"), "--size 3 is not a multiple of 4 bytes (one element)");
  EXPECT_EQ(sizeError("4098"), "--size 4098 is not a multiple of 4 bytes (one element)");
  EXPECT_EQ(sizeError("1099511627780"), "size '1099511627780' for --size is out of range [" +
                                            ms::formatBytes(1) + ", " +
                                            ms::formatBytes(1ull << 40) + "]");
  for (const char* tooLarge : {"99999999G", "18446744073709551615", "1025G", "2T"}) {
    const std::string message = sizeError(tooLarge);
    EXPECT_NE(message.find("is out of range"), std::string::npos) << tooLarge << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The range is checked first: a huge size that is also not whole floats names the range.
  EXPECT_NE(sizeError("18446744073709551615").find("out of range"), std::string::npos);
}

// Without multipleOf (the default 1) any whole byte count is accepted, as before.
TEST(CommandLine, SizeWithoutMultipleOfTakesAnyByteCount) {
  Parsed p;
  ASSERT_TRUE(p.cli.parse(std::vector<std::string>{"--size", "4098"}));
  EXPECT_EQ(p.size, 4098u);
}

TEST(CommandLine, HelpStopsAndListsOptions) {
  Parsed p;
  testing::internal::CaptureStdout();
  EXPECT_FALSE(p.cli.parse(std::vector<std::string>{"--help"}));
  const std::string text = testing::internal::GetCapturedStdout();
  for (const char* expected : {"Usage: sample", "--device N", "--size BYTES", "--json FILE",
                               "--backing LIST", "Does things."}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected;
  }
}

TEST(SplitCommaList, KeepsEveryItemIncludingEmptyOnes) {
  using Items = std::vector<std::string_view>;
  EXPECT_EQ(ms::splitCommaList("0,1,3"), (Items{"0", "1", "3"}));
  EXPECT_EQ(ms::splitCommaList("a"), (Items{"a"}));
  EXPECT_EQ(ms::splitCommaList(""), (Items{""}));
  EXPECT_EQ(ms::splitCommaList("a,,b,"), (Items{"a", "", "b", ""}));
}
