// The options of 09_memcpyBatch: what is accepted and what is a usage error, before any device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "batch_plan.hpp"
#include "memsamples.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
using memsamples::test::messageOf;

namespace {

ms::BatchOptions parse(const std::vector<std::string>& args) {
  ms::BatchOptions options;
  ms::CommandLine commandLine("memcpyBatch", "test");
  ms::addBatchOptions(commandLine, options);
  commandLine.parse(args);
  ms::validateOptions(options);
  return options;
}

std::string usageError(const std::vector<std::string>& args) {
  return messageOf<ms::UsageError>([&] { parse(args); });
}

TEST(MemcpyBatchOptions, Defaults) {
  const ms::BatchOptions options = parse({});
  EXPECT_EQ(options.blocks, 4096);
  EXPECT_EQ(options.blockSize(), 64u * 1024);
  EXPECT_FALSE(options.sweep);
  EXPECT_EQ(options.sweepFrom(), 4u * 1024);
  EXPECT_EQ(options.sweepTo(), 4u * 1024 * 1024);
}

TEST(MemcpyBatchOptions, AcceptsSizes) {
  const ms::BatchOptions options =
      parse({"--blocks", "999", "--block-size", "4100", "--sweep", "--sweep-min", "8K",
             "--sweep-max", "8K"});
  EXPECT_EQ(options.blocks, 999);
  EXPECT_EQ(options.blockSize(), 4100u);
  EXPECT_TRUE(options.sweep);
  EXPECT_EQ(options.sweepFrom(), 8192u);
  EXPECT_EQ(options.sweepTo(), 8192u);
}

TEST(MemcpyBatchOptions, RefusesBadBlockSizes) {
  EXPECT_EQ(usageError({"--block-size", "0"}), "--block-size must be greater than 0");
  EXPECT_EQ(usageError({"--block-size", "4098"}),
            "--block-size 4098 is not a multiple of 4 bytes (one element)");
  EXPECT_EQ(usageError({"--blocks", "1"}), "value '1' for --blocks is out of range [2, 16777216]");
}

TEST(MemcpyBatchOptions, RefusesTooMuchInAll) {
  EXPECT_EQ(usageError({"--blocks", "16777216", "--block-size", "1G"}),
            "--blocks 16777216 x --block-size 1073741824 (1.00 GiB) is more than this sample "
            "takes: at most 1T in all");
  // Exactly 1 TiB in all is still taken.
  EXPECT_EQ(parse({"--blocks", "1024", "--block-size", "1G"}).blocks, 1024);
}

TEST(MemcpyBatchOptions, RefusesSweepBounds) {
  EXPECT_EQ(usageError({"--sweep", "--sweep-min", "1M", "--sweep-max", "64K"}),
            "--sweep-min 1048576 (1.00 MiB) is larger than --sweep-max 65536 (64.0 KiB)");
  EXPECT_EQ(usageError({"--sweep", "--sweep-min", "4097"}),
            "--sweep-min 4097 is not a positive multiple of 4 bytes (one element)");
  EXPECT_EQ(usageError({"--sweep", "--sweep-max", "0"}),
            "--sweep-max 0 is not a positive multiple of 4 bytes (one element)");
  // Without --sweep, the bounds are not used and not judged.
  EXPECT_NO_THROW(parse({"--sweep-min", "1M", "--sweep-max", "64K"}));
}

TEST(MemcpyBatchOptions, SweepSizes) {
  EXPECT_EQ(ms::sweepSizes(4096, 4u << 20, 1ull << 30),
            (std::vector<std::uint64_t>{4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288,
                                        1048576, 2097152, 4194304}));
  // The largest bound is kept when not a power-of-two step; sizes over the pool are left out.
  EXPECT_EQ(ms::sweepSizes(4096, 12288, 1ull << 30), (std::vector<std::uint64_t>{4096, 8192, 12288}));
  EXPECT_EQ(ms::sweepSizes(4096, 1u << 20, 16384), (std::vector<std::uint64_t>{4096, 8192, 16384}));
  EXPECT_THROW(ms::sweepSizes(0, 8, 8), std::invalid_argument);
}

TEST(MemcpyBatchOptions, BatchStopsMattering) {
  const std::vector<std::uint64_t> sizes = {4096, 65536, 1048576};
  EXPECT_EQ(ms::batchStopsMattering(sizes, {1, 16, 50}, {4, 36, 52}), 1048576u);
  EXPECT_EQ(ms::batchStopsMattering(sizes, {1, 16, 50}, {4, 36, 60}), std::nullopt);
  EXPECT_EQ(ms::batchStopsMattering(sizes, {1, 16, 50}, {1, 36, 60}), 4096u);
}

}  // namespace
