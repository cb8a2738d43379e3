// Timing statistics, bandwidth arithmetic and the vector-add verification helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "memsamples.hpp"
#include "support/timing.hpp"
#include "support/vector_add.hpp"

namespace ms = memsamples;

TEST(Timing, MedianOddEvenAndUnsorted) {
  const auto odd = ms::summarizeTimings({5.0, 1.0, 3.0});
  EXPECT_DOUBLE_EQ(odd.medianMs, 3.0);
  EXPECT_DOUBLE_EQ(odd.minMs, 1.0);
  EXPECT_DOUBLE_EQ(odd.maxMs, 5.0);
  EXPECT_EQ(odd.samples, 3);
  EXPECT_DOUBLE_EQ(ms::summarizeTimings({4.0, 1.0, 3.0, 2.0}).medianMs, 2.5);
  EXPECT_DOUBLE_EQ(ms::summarizeTimings({7.0}).medianMs, 7.0);
  // One outlier does not move the median.
  EXPECT_DOUBLE_EQ(ms::summarizeTimings({1.0, 1.0, 1.0, 1.0, 900.0}).medianMs, 1.0);
  EXPECT_THROW(ms::summarizeTimings({}), std::invalid_argument);
}

TEST(Timing, GigabytesAreDecimal) {
  EXPECT_DOUBLE_EQ(ms::gigabytesPerSecond(1e9, 1000.0), 1.0);
  EXPECT_DOUBLE_EQ(ms::gigabytesPerSecond(3.0 * (1ull << 30), 1.0), 3.0 * 1073741824.0 / 1e6);
  EXPECT_TRUE(std::isnan(ms::gigabytesPerSecond(1e9, 0.0)));
}

TEST(VectorAdd, InputsAreReproducibleAndInRange) {
  std::vector<float> a1(1000), b1(1000), a2(1000), b2(1000);
  ms::fillVectorAddInputs(a1.data(), b1.data(), a1.size(), 7);
  ms::fillVectorAddInputs(a2.data(), b2.data(), a2.size(), 7);
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(b1, b2);
  EXPECT_NE(a1, b1);
  for (float v : a1) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
}

TEST(VectorAdd, CheckFindsEveryWrongElement) {
  std::vector<float> a(10), b(10), c(10);
  ms::fillVectorAddInputs(a.data(), b.data(), a.size(), 1);
  for (std::size_t i = 0; i < c.size(); ++i)
    c[i] = a[i] + b[i];
  EXPECT_EQ(ms::checkVectorAdd(a.data(), b.data(), c.data(), c.size()).mismatches, 0u);
  c[3] = std::nextafter(c[3], 10.0f);  // one ulp off is wrong: the comparison is exact
  c[8] = 0.5f + c[8];
  const auto result = ms::checkVectorAdd(a.data(), b.data(), c.data(), c.size());
  EXPECT_EQ(result.mismatches, 2u);
  EXPECT_EQ(result.firstBad, 3u);
  EXPECT_EQ(result.expected, a[3] + b[3]);
  EXPECT_EQ(result.actual, c[3]);
}

TEST(BlocksToCover, CeilingAtLeastOneAtMostTheLargestGrid) {
  EXPECT_EQ(ms::blocksToCover(0, 1024), 1u);
  EXPECT_EQ(ms::blocksToCover(1, 1024), 1u);
  EXPECT_EQ(ms::blocksToCover(1024, 1024), 1u);
  EXPECT_EQ(ms::blocksToCover(1025, 1024), 2u);
  EXPECT_EQ(ms::blocksToCover(1ull << 28, 1024), 1u << 18);  // 1 GiB of floats, a float4 a thread
  EXPECT_EQ(ms::blocksToCover(UINT64_MAX, 1), (1u << 31) - 1);
  EXPECT_THROW(ms::blocksToCover(10, 0), std::invalid_argument);
}
