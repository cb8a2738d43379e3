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
  EXPECT_FALSE(options.blocksNamed());
  EXPECT_EQ(options.blockCount(), 1024u);
  EXPECT_EQ(options.blockSize(), 64u * 1024);
  EXPECT_FALSE(options.sweep);
  EXPECT_EQ(options.sweepFrom(), 4u * 1024);
  EXPECT_EQ(options.sweepTo(), 1024u * 1024);
}

TEST(MemcpyBatchOptions, AcceptsSizes) {
  const ms::BatchOptions options =
      parse({"--blocks", "999", "--block-size", "4100", "--sweep", "--sweep-min", "8K",
             "--sweep-max", "8K"});
  EXPECT_TRUE(options.blocksNamed());
  EXPECT_EQ(options.blockCount(), 999u);
  EXPECT_EQ(options.blockSize(), 4100u);
  EXPECT_TRUE(options.sweep);
  EXPECT_EQ(options.sweepFrom(), 8192u);
  EXPECT_EQ(options.sweepTo(), 8192u);
}

TEST(MemcpyBatchOptions, RefusesBadBlockSizes) {
  EXPECT_EQ(usageError({"--block-size", "0"}), "--block-size must be greater than 0");
  EXPECT_EQ(usageError({"--block-size", "4098"}),
            "--block-size 4098 is not a multiple of 4 bytes (one element)");
  EXPECT_EQ(usageError({"--blocks", "1"}), "value '1' for --blocks is out of range [2, 65536]");
  EXPECT_EQ(usageError({"--blocks", "65537"}),
            "value '65537' for --blocks is out of range [2, 65536]");
}

TEST(MemcpyBatchOptions, RefusesTooMuchInAll) {
  EXPECT_EQ(usageError({"--blocks", "65536", "--block-size", "32G"}),
            "--blocks 65536 x --block-size 34359738368 (32.0 GiB) is more than this sample "
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

// Issue 33 R6: no sweep point asks for more copies than --blocks may (the old sweep cut a 256 MiB
// pool into 67 million 4-byte blocks and hung).
TEST(MemcpyBatchOptions, SweepPointsKeepTheBlockCap) {
  const std::uint64_t pool = 256ull << 20;
  const std::vector<ms::SweepPoint> points = ms::sweepPoints(4, 4096, pool);
  ASSERT_EQ(points.size(), 11u);  // 4, 8, ... 4096 bytes
  for (const ms::SweepPoint& point : points) {
    EXPECT_LE(point.count, ms::kMaxBlocks) << point.blockBytes;
    EXPECT_LE(point.count * point.blockBytes, pool) << point.blockBytes;
  }
  EXPECT_EQ(points.front().count, ms::kMaxBlocks);
  EXPECT_EQ(points.back().count, ms::kMaxBlocks);  // 256 MiB / 4 KiB = 65,536 exactly

  // Larger blocks cut the pool as before; a size over half the pool is left out.
  const std::vector<ms::SweepPoint> large = ms::sweepPoints(64u << 10, 1u << 20, 2u << 20);
  ASSERT_EQ(large.size(), 5u);
  EXPECT_EQ(large.front().count, 32u);
  EXPECT_EQ(large.back().count, 2u);
  EXPECT_TRUE(ms::sweepPoints(4u << 20, 4u << 20, 6u << 20).empty());
}

// Issue 33 R2: the default run fits itself to a small GPU share or container instead of refusing
// to run; a named --blocks is the experiment and is refused when it does not fit.
TEST(MemcpyBatchOptions, FitBlockCount) {
  const std::string device = "the device's free memory";
  const ms::BatchOptions unnamed = parse({});
  const ms::BlockCount fits = ms::fitBlockCount(unnamed, 1ull << 30, device);
  EXPECT_EQ(fits.count, 1024u);
  EXPECT_FALSE(fits.cut);

  // 40 MiB per pool: the default 1,024 x 64 KiB (64 MiB) is cut to 640 blocks.
  const ms::BlockCount cut = ms::fitBlockCount(unnamed, 40ull << 20, device);
  EXPECT_EQ(cut.count, 640u);
  EXPECT_TRUE(cut.cut);

  // Down to 64 blocks; below, the run waives with the reason.
  EXPECT_EQ(ms::fitBlockCount(unnamed, 4ull << 20, device).count, 64u);
  const std::string waived = messageOf<ms::WaivedError>(
      [&] { ms::fitBlockCount(unnamed, (4ull << 20) - 1, "the host (MemAvailable)"); });
  EXPECT_EQ(waived, "only 4.00 MiB per pool fits the host (MemAvailable), fewer than 64 blocks "
                    "of 64.0 KiB; name a smaller --blocks or --block-size");

  // A named count is never cut.
  const ms::BatchOptions named = parse({"--blocks", "1024"});
  EXPECT_EQ(ms::fitBlockCount(named, 64ull << 20, device).count, 1024u);
  EXPECT_EQ(messageOf<ms::UsageError>([&] { ms::fitBlockCount(named, 40ull << 20, device); }),
            "--blocks 1024 x --block-size 64.0 KiB = 64.0 MiB does not fit the device's free "
            "memory: at most 40.0 MiB in all");
  // An unnamed count with a named block size is cut the same way.
  const ms::BatchOptions bigBlocks = parse({"--block-size", "1M"});
  EXPECT_EQ(ms::fitBlockCount(bigBlocks, 100ull << 20, device).count, 100u);
}

TEST(MemcpyBatchOptions, BatchStopsMattering) {
  const std::vector<std::uint64_t> sizes = {4096, 65536, 1048576};
  EXPECT_EQ(ms::batchStopsMattering(sizes, {1, 16, 50}, {4, 36, 52}), 1048576u);
  EXPECT_EQ(ms::batchStopsMattering(sizes, {1, 16, 50}, {4, 36, 60}), std::nullopt);
  // The batch gains nothing at 4 KiB but gains again at 64 KiB and 1 MiB: it has not stopped
  // mattering (the H100 sweep of 2026-12-07 printed "from 8.00 KiB blocks on" here before).
  EXPECT_EQ(ms::batchStopsMattering(sizes, {1, 16, 50}, {1, 36, 60}), std::nullopt);
  // It gains at 4 KiB and at no larger size: from 64 KiB on.
  EXPECT_EQ(ms::batchStopsMattering(sizes, {1, 16, 50}, {4, 17, 52}), 65536u);
  // It gains nowhere: from the smallest size on.
  EXPECT_EQ(ms::batchStopsMattering(sizes, {1, 16, 50}, {1, 16, 50}), 4096u);
}

}  // namespace
