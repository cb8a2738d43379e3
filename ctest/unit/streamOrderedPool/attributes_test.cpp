// pool_attributes.cpp against a fake driver: each attribute is read and written with its own
// type, the high-water marks are reset by writing 0, and a failing call names itself.
#include <gtest/gtest.h>

#include <string>

#include "fake_pool_driver.hpp"
#include "memsamples.hpp"
#include "pool_attributes.hpp"

namespace pa = pool_attributes;
using fake_pool::driver;

namespace {

class PoolAttributes : public ::testing::Test {
 protected:
  void SetUp() override { driver() = fake_pool::Driver{}; }
  CUmemoryPool pool() const { return driver().pool; }
};

}  // namespace

TEST_F(PoolAttributes, ReadsTheFourCountersAsSixtyFourBitValues) {
  driver().counters[CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT] = 5ull << 32;  // above 32 bits
  driver().counters[CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH] = 6ull << 32;
  driver().counters[CU_MEMPOOL_ATTR_USED_MEM_CURRENT] = 3;
  driver().counters[CU_MEMPOOL_ATTR_USED_MEM_HIGH] = 4ull << 32;
  const pa::PoolUsage usage = pa::readPoolUsage(pool());
  EXPECT_EQ(usage.reservedCurrent, 5ull << 32);
  EXPECT_EQ(usage.reservedHigh, 6ull << 32);
  EXPECT_EQ(usage.usedCurrent, 3u);
  EXPECT_EQ(usage.usedHigh, 4ull << 32);
  ASSERT_EQ(driver().gets.size(), 4u);
  EXPECT_TRUE(driver().sets.empty());
}

TEST_F(PoolAttributes, ResettingTheHighWaterMarksWritesZeroToBoth) {
  driver().counters[CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT] = 10;
  driver().counters[CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH] = 100;
  driver().counters[CU_MEMPOOL_ATTR_USED_MEM_CURRENT] = 0;
  driver().counters[CU_MEMPOOL_ATTR_USED_MEM_HIGH] = 90;
  pa::resetHighWater(pool());
  EXPECT_EQ(driver().counters[CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH], 10u);
  EXPECT_EQ(driver().counters[CU_MEMPOOL_ATTR_USED_MEM_HIGH], 0u);
  ASSERT_EQ(driver().sets.size(), 2u);
}

TEST_F(PoolAttributes, ThresholdKeepsAllSixtyFourBits) {
  pa::setReleaseThreshold(pool(), UINT64_MAX);
  EXPECT_EQ(driver().counters[CU_MEMPOOL_ATTR_RELEASE_THRESHOLD], UINT64_MAX);
  pa::setReleaseThreshold(pool(), 0);
  EXPECT_EQ(driver().counters[CU_MEMPOOL_ATTR_RELEASE_THRESHOLD], 0u);
}

TEST_F(PoolAttributes, ReuseRulesRoundTripAsInts) {
  pa::ReuseRules rules;
  rules.followEventDependencies = false;
  rules.allowOpportunistic = true;
  rules.allowInternalDependencies = false;
  pa::setReuseRules(pool(), rules);
  EXPECT_EQ(driver().rules[CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES], 0);
  EXPECT_EQ(driver().rules[CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC], 1);
  EXPECT_EQ(driver().rules[CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES], 0);
  const pa::ReuseRules read = pa::readReuseRules(pool());
  EXPECT_FALSE(read.followEventDependencies);
  EXPECT_TRUE(read.allowOpportunistic);
  EXPECT_FALSE(read.allowInternalDependencies);
}

TEST_F(PoolAttributes, AFailingCallNamesItselfAndTheReason) {
  driver().failAttribute = CU_MEMPOOL_ATTR_USED_MEM_HIGH;
  try {
    pa::readPoolUsage(pool());
    FAIL() << "no error";
  } catch (const memsamples::CudaError& error) {
    EXPECT_EQ(error.result(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_NE(std::string(error.what()).find("cuMemPoolGetAttribute failed at pool_attributes.cpp"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(pa::resetHighWater(pool()), memsamples::CudaError);
}

TEST_F(PoolAttributes, AnotherPoolIsRefused) {
  EXPECT_THROW(pa::readPoolUsage(reinterpret_cast<CUmemoryPool>(0x2000)), memsamples::CudaError);
}
