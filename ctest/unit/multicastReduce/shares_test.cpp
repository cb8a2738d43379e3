// The split of the buffer into per-GPU shares, and the values every copy is checked with.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "multicast_plan.hpp"

namespace mc = memsamples::multicast;

namespace {

void expectCover(std::uint64_t vectors, int team) {
  SCOPED_TRACE(std::to_string(vectors) + " over " + std::to_string(team));
  const std::vector<mc::Share> shares = mc::splitShares(vectors, team);
  ASSERT_EQ(shares.size(), static_cast<std::size_t>(team));
  std::uint64_t next = 0, smallest = std::numeric_limits<std::uint64_t>::max(), largest = 0;
  for (const mc::Share& share : shares) {
    EXPECT_EQ(share.first, next);  // contiguous, in order
    next = share.first + share.count;
    smallest = std::min(smallest, share.count);
    largest = std::max(largest, share.count);
  }
  EXPECT_EQ(next, vectors);  // covers everything exactly once
  EXPECT_LE(largest - smallest, 1u);
}

TEST(MulticastShares, CoverTheBufferEvenly) {
  for (const int team : {1, 2, 3, 4, 7, 8})
    for (const std::uint64_t vectors : {0ull, 1ull, 2ull, 3ull, 7ull, 65537ull, 16777216ull})
      expectCover(vectors, team);
}

TEST(MulticastShares, TwoGpusDefaultSize) {
  const std::vector<mc::Share> shares = mc::splitShares((256ull << 20) / 16, 2);
  EXPECT_EQ(shares[0].first, 0u);
  EXPECT_EQ(shares[0].count, 8388608u);
  EXPECT_EQ(shares[1].first, 8388608u);
  EXPECT_EQ(shares[1].count, 8388608u);
}

TEST(MulticastShares, OddCountGivesTheLaterMemberOneMore) {
  const std::vector<mc::Share> shares = mc::splitShares(65537, 2);
  EXPECT_EQ(shares[0].count, 32768u);
  EXPECT_EQ(shares[1].count, 32769u);
}

TEST(MulticastShares, NoOverflowNearTheTop) {
  expectCover(std::numeric_limits<std::uint64_t>::max(), 7);
  expectCover(std::numeric_limits<std::uint64_t>::max() - 1, 8);
}

TEST(MulticastShares, RefusesAnEmptyTeam) {
  EXPECT_THROW(mc::splitShares(10, 0), std::invalid_argument);
  EXPECT_THROW(mc::splitShares(10, -1), std::invalid_argument);
}

TEST(MulticastValues, InputsAreSmallIntegersAndSumsExact) {
  for (int team = 1; team <= mc::kMaxTeam; ++team) {
    for (std::uint64_t i = 0; i < 5000; ++i) {
      double exact = 0;
      for (int member = 0; member < team; ++member) {
        const float v = mc::inputValue(member, i);
        ASSERT_EQ(v, static_cast<float>(static_cast<int>(v)));  // an integer
        ASSERT_GE(v, 0.0f);
        ASSERT_LE(v, 250.0f + static_cast<float>(member));
        exact += v;
      }
      // Below 2^24, any order of float additions gives the exact sum.
      ASSERT_EQ(static_cast<double>(mc::expectedSum(team, i)), exact);
    }
  }
}

TEST(MulticastValues, MembersDifferSoAMissingCopyIsSeen) {
  int differing = 0;
  for (std::uint64_t i = 0; i < 1000; ++i)
    differing += mc::inputValue(0, i) != mc::inputValue(1, i);
  EXPECT_GT(differing, 990);
}

TEST(MulticastValues, BroadcastSourceIsNoSum) {
  // x.5: never equal to a sum of integers, so a copy the broadcast missed cannot pass.
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const float v = mc::broadcastValue(i);
    ASSERT_NE(v, static_cast<float>(static_cast<int>(v)));
  }
}

TEST(MulticastValues, CompareExactlyFindsTheFirstMismatch) {
  std::vector<float> data = {0, 1, 2, 3, 4};
  const auto index = [](std::uint64_t i) { return static_cast<float>(i); };
  EXPECT_EQ(mc::compareExactly(data.data(), data.size(), index).count, 0u);
  EXPECT_EQ(mc::describe(mc::compareExactly(data.data(), data.size(), index)), "exact");
  data[2] = 7;
  data[4] = -1;
  const mc::Mismatch mismatch = mc::compareExactly(data.data(), data.size(), index);
  EXPECT_EQ(mismatch.count, 2u);
  EXPECT_EQ(mismatch.first, 2u);
  EXPECT_EQ(mismatch.expected, 2.0f);
  EXPECT_EQ(mismatch.actual, 7.0f);
  EXPECT_EQ(mc::describe(mismatch), "element 2: expected 2, got 7 (2 wrong)");
}

}  // namespace
