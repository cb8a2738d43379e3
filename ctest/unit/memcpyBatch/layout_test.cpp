// 09_memcpyBatch's block layout: scattered slots that never overlap, and the checks of the copied
// blocks and of 2D/3D boxes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "batch_plan.hpp"

namespace ms = memsamples;

namespace {

TEST(MemcpyBatchLayout, SlotsArePermutationsAndScattered) {
  for (std::uint64_t count : {1ull, 2ull, 3ull, 7ull, 64ull, 999ull, 1024ull, 4096ull}) {
    const ms::BlockLayout layout = ms::makeLayout(count, 64);
    std::set<std::uint64_t> host;
    std::set<std::uint64_t> device;
    std::uint64_t inPlace = 0;
    for (std::uint64_t block = 0; block < count; ++block) {
      EXPECT_LT(layout.hostSlot(block), count);
      EXPECT_LT(layout.deviceSlot(block), count);
      host.insert(layout.hostSlot(block));
      device.insert(layout.deviceSlot(block));
      inPlace += layout.hostSlot(block) == layout.deviceSlot(block) ? 1 : 0;
    }
    // Every slot used exactly once on each side: no two blocks overlap.
    EXPECT_EQ(host.size(), count) << count;
    EXPECT_EQ(device.size(), count) << count;
    if (count >= 64) {
      // Scattered: few blocks keep their slot, and neighbours land far apart.
      EXPECT_LT(inPlace, count / 8) << count;
      const std::uint64_t gap = layout.hostSlot(1) > layout.hostSlot(0)
                                    ? layout.hostSlot(1) - layout.hostSlot(0)
                                    : layout.hostSlot(0) - layout.hostSlot(1);
      EXPECT_GT(gap, 1u) << count;
    }
  }
  EXPECT_THROW(ms::makeLayout(0, 64), std::invalid_argument);
}

// Issue 36: the device permutation is shifted by half the pool, so block 0 (which every
// stride maps to slot 0) does not sit at the same slot on both sides.
TEST(MemcpyBatchLayout, DeviceSlotsAreShiftedByHalfThePool) {
  for (std::uint64_t count : {2ull, 3ull, 7ull, 64ull, 999ull, 1024ull, 4096ull}) {
    const ms::BlockLayout layout = ms::makeLayout(count, 64);
    EXPECT_EQ(layout.hostSlot(0), 0u) << count;
    EXPECT_EQ(layout.deviceSlot(0), count / 2) << count;
    EXPECT_NE(layout.deviceSlot(0), layout.hostSlot(0)) << count;
    EXPECT_EQ(layout.deviceSlot(1), (layout.deviceStride + count / 2) % count) << count;
  }
}

TEST(MemcpyBatchLayout, OffsetsAreSlotsTimesBlockBytes) {
  const ms::BlockLayout layout = ms::makeLayout(100, 4100);
  EXPECT_EQ(layout.totalBytes(), 410000u);
  EXPECT_EQ(layout.bytes, 410000u);
  ASSERT_EQ(layout.hostOffsets.size(), 100u);
  ASSERT_EQ(layout.deviceOffsets.size(), 100u);
  for (std::uint64_t block = 0; block < 100; ++block) {
    EXPECT_EQ(layout.hostOffset(block), layout.hostSlot(block) * 4100);
    EXPECT_EQ(layout.deviceOffset(block), layout.deviceSlot(block) * 4100);
    EXPECT_EQ(layout.hostOffsets[block], layout.hostOffset(block));
    EXPECT_EQ(layout.deviceOffsets[block], layout.deviceOffset(block));
  }
}

TEST(MemcpyBatchLayout, LargestCountsDoNotOverflow) {
  const std::uint64_t count = (1ull << 40) / 4;  // 1 TiB of one-word blocks
  const ms::BlockLayout layout = ms::makeLayout(count, 4, /*listOffsets=*/false);
  for (std::uint64_t block : {count - 1, count - 2, count / 2 + 1})
    EXPECT_LT(layout.deviceSlot(block), count);
}

TEST(MemcpyBatchLayout, FillAndCheckEachSide) {
  const ms::BlockLayout layout = ms::makeLayout(33, 16);
  std::vector<std::uint32_t> host(layout.totalBytes() / 4);
  std::vector<std::uint32_t> device(layout.totalBytes() / 4);
  ms::fillBlocks(host.data(), layout, ms::PoolSide::Host, 7);
  // What a correct scattered copy does: block i from host slot to device slot.
  for (std::uint64_t block = 0; block < layout.count; ++block) {
    for (std::uint64_t w = 0; w < 4; ++w)
      device[layout.deviceSlot(block) * 4 + w] = host[layout.hostSlot(block) * 4 + w];
  }
  EXPECT_TRUE(ms::checkBlocks(host.data(), layout, ms::PoolSide::Host, 7).passed());
  EXPECT_TRUE(ms::checkBlocks(device.data(), layout, ms::PoolSide::Device, 7).passed());
  // The host pool is not laid out as the device pool, and another seed is other data.
  EXPECT_FALSE(ms::checkBlocks(host.data(), layout, ms::PoolSide::Device, 7).passed());
  EXPECT_FALSE(ms::checkBlocks(device.data(), layout, ms::PoolSide::Device, 8).passed());

  // One wrong word is found and named by its index in the pool.
  const std::uint64_t bad = layout.deviceSlot(5) * 4 + 2;
  device[bad] = ms::kSentinelWord;
  const ms::PatternCheck check = ms::checkBlocks(device.data(), layout, ms::PoolSide::Device, 7);
  EXPECT_EQ(check.mismatches, 1u);
  EXPECT_EQ(check.firstBad, bad);
  EXPECT_EQ(check.actual, ms::kSentinelWord);
  EXPECT_EQ(check.words, layout.totalBytes() / 4);
}

TEST(MemcpyBatchLayout, BoxMismatches) {
  const ms::Volume volume{4, 3, 2};
  std::vector<std::uint32_t> source(volume.words());
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<std::uint32_t>(100 + i);
  const std::vector<ms::Box> boxes = {{1, 1, 0, 2, 2, 1}, {0, 0, 1, 1, 1, 1}};
  std::vector<std::uint32_t> got(volume.words(), ms::kSentinelWord);
  for (std::uint64_t z = 0; z < 2; ++z)
    for (std::uint64_t y = 0; y < 3; ++y)
      for (std::uint64_t x = 0; x < 4; ++x)
        if (boxes[0].contains(x, y, z) || boxes[1].contains(x, y, z))
          got[volume.index(x, y, z)] = source[volume.index(x, y, z)];
  EXPECT_EQ(ms::boxMismatches(got.data(), source.data(), volume, boxes), 0u);
  // A word written outside every box, and one missing inside.
  got[volume.index(3, 2, 1)] = 1;
  got[volume.index(1, 1, 0)] = ms::kSentinelWord;
  EXPECT_EQ(ms::boxMismatches(got.data(), source.data(), volume, boxes), 2u);
}

/// A 2D copy in software: @p rect of @p from, whose rows are @p fromPitch words apart, into
/// the same place of @p to, rows @p toPitch words apart (what cuMemcpy2D* do with pitches).
void copyRect(const std::uint32_t* from, std::uint64_t fromPitch, std::uint32_t* to,
              std::uint64_t toPitch, const ms::Box& rect) {
  for (std::uint64_t y = rect.y; y < rect.y + rect.height; ++y)
    for (std::uint64_t x = rect.x; x < rect.x + rect.width; ++x)
      to[y * toPitch + x] = from[y * fromPitch + x];
}

TEST(MemcpyBatchLayout, BoxMismatchesCatchACopyThatUsedTheWrongPitch) {
  // The shapes' cuMemcpy2DUnaligned reads a rectangle from rows one word longer than the
  // matrix's (4,004 bytes for 4,000): a copy that took the wrong pitch must fail the check.
  const ms::Volume matrix{10, 6, 1};
  const std::uint64_t oddPitch = matrix.width + 1;
  std::vector<std::uint32_t> source(matrix.words());
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<std::uint32_t>(7000 + i);
  std::vector<std::uint32_t> oddRows(oddPitch * matrix.height, 0);
  copyRect(source.data(), matrix.width, oddRows.data(), oddPitch, {0, 0, 0, 10, 6, 1});
  const ms::Box rect{2, 1, 0, 5, 4, 1};

  std::vector<std::uint32_t> got(matrix.words(), ms::kSentinelWord);
  copyRect(oddRows.data(), oddPitch, got.data(), matrix.width, rect);
  EXPECT_EQ(ms::boxMismatches(got.data(), source.data(), matrix, {rect}), 0u);

  // Rows read at the matrix's own pitch drift by one word a row: row y is y words off, so only
  // row 0 would be right, and it is outside the rectangle.
  std::fill(got.begin(), got.end(), ms::kSentinelWord);
  copyRect(oddRows.data(), matrix.width, got.data(), matrix.width, rect);
  EXPECT_EQ(ms::boxMismatches(got.data(), source.data(), matrix, {rect}), rect.width * rect.height);
}

}  // namespace
