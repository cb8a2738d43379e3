// The options of 08_multicastReduce: what is accepted and what is a usage error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "multicast_plan.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
namespace mc = memsamples::multicast;
using memsamples::test::messageOf;

namespace {

mc::Options parse(const std::vector<std::string>& args) {
  mc::Options options;
  ms::CommandLine commandLine("multicastReduce", "test");
  mc::addOptions(commandLine, options);
  commandLine.parse(args);
  mc::validateSize(options.sizeBytes);
  return options;
}

TEST(MulticastOptions, Defaults) {
  const mc::Options options = parse({});
  EXPECT_FALSE(options.sizeBytes.has_value());
  EXPECT_TRUE(options.devices.empty());
  EXPECT_FALSE(options.common.device.has_value());
  EXPECT_FALSE(options.bindByAddress);  // cuMulticastBindMem, by the copy's handle
  EXPECT_EQ(mc::kDefaultBytes, 256ull << 20);
}

TEST(MulticastOptions, BindByAddressIsAFlag) {
  EXPECT_TRUE(parse({"--bind-by-address"}).bindByAddress);
  EXPECT_TRUE(parse({"--size", "64M", "--bind-by-address", "--devices", "0,1"}).bindByAddress);
  EXPECT_THROW(parse({"--bind-by-address=yes"}), ms::UsageError);  // a flag takes no value
}

TEST(MulticastOptions, SizeDevicesAndRoot) {
  const mc::Options options = parse({"--size", "64M", "--devices", "1,0", "-device=1"});
  EXPECT_EQ(options.sizeBytes, 64ull << 20);
  EXPECT_EQ(options.devices, (std::vector<int>{1, 0}));
  EXPECT_EQ(options.common.device, 1);
  EXPECT_EQ(parse({"--size=1048592"}).sizeBytes, 1048592u);
}

TEST(MulticastOptions, SizeMustBeWholeFloat4) {
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              parse({"--size", "100"});
            }),
            "--size 100 is not a multiple of 16 bytes (the all-reduce moves float4)");
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              parse({"--size", "1048580"});
            }),
            "--size 1048580 is not a multiple of 16 bytes (the all-reduce moves float4)");
  EXPECT_THROW(parse({"--size", "0"}), ms::UsageError);
  EXPECT_THROW(parse({"--size", "lots"}), ms::UsageError);
}

TEST(MulticastOptions, SizeBeyondAnyMachineIsAUsageError) {
  // Both are whole float4, or used to pass as the largest one: the limit must catch them.
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              parse({"--size", "99999999G"});
            }),
            "--size 107374181326258176 (95.4 PiB) is more than this sample takes: at most 1T "
            "per GPU");
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              parse({"--size", "18446744073709551615"});
            }),
            "--size 18446744073709551615 (16.0 EiB) is more than this sample takes: at most 1T "
            "per GPU");
  EXPECT_THROW(parse({"--size", "1099511627792"}), ms::UsageError);  // 1T + 16
  EXPECT_EQ(parse({"--size", "1T"}).sizeBytes, mc::kMaxBytes);
}

TEST(MulticastOptions, DevicesListIsChecked) {
  EXPECT_THROW(parse({"--devices", "0,0"}), ms::UsageError);  // a device twice
  EXPECT_THROW(parse({"--devices", "0,-1"}), ms::UsageError);
  EXPECT_THROW(parse({"--devices", ""}), ms::UsageError);
  EXPECT_THROW(parse({"--devices", "0,,1"}), ms::UsageError);
  EXPECT_THROW(parse({"--devices"}), ms::UsageError);
}

TEST(MulticastOptions, UnknownOptionsAndNoTestModes) {
  EXPECT_THROW(parse({"--bogus"}), ms::UsageError);
  mc::Options options;
  ms::CommandLine commandLine("multicastReduce", "test");
  mc::addOptions(commandLine, options);
  const std::string usage = commandLine.usage();
  EXPECT_NE(usage.find("--devices"), std::string::npos);
  EXPECT_NE(usage.find("--size"), std::string::npos);
  EXPECT_NE(usage.find("--bind-by-address"), std::string::npos);
  EXPECT_NE(usage.find("cuMulticastBindAddr"), std::string::npos);
}

}  // namespace
