// Step 8 of 10_streamOrderedPool (other_pools.cpp) against a fake driver: a host-location pool
// whose device access is refused is never used from the GPU (issue 33 B2: the device writing
// memory it may not access is a sticky fault), and a granted pool is used and checked.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "fake_pool_driver.hpp"
#include "other_pools.hpp"

namespace ms = memsamples;
using fake_pool::called;
using fake_pool::driver;

namespace {

class OtherPools : public ::testing::Test {
 protected:
  void SetUp() override { driver() = fake_pool::Driver{}; }

  CUmemPoolProps hostPool() const {
    CUmemPoolProps props = {};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    return props;
  }

  PoolRun run;
  std::ostringstream text;
  ms::Report report{&text};
};

}  // namespace

TEST_F(OtherPools, ARefusedGrantLeavesTheHostPoolUntouchedByTheGpu) {
  driver().accessAnswer = CUDA_ERROR_INVALID_VALUE;
  tryPool(run, hostPool(), "hostPool", report);

  EXPECT_TRUE(called("cuMemPoolSetAccess"));
  EXPECT_FALSE(called("cuMemAllocFromPoolAsync")) << "a block taken from a refused pool";
  EXPECT_FALSE(called("cuMemsetD32Async")) << "the GPU wrote memory it was refused";
  EXPECT_EQ(driver().poolsDestroyed, driver().poolsCreated);
  EXPECT_NE(text.str().find("cuMemPoolSetAccess (device): CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("access refused, so the GPU does not use it"), std::string::npos)
      << text.str();
  EXPECT_NE(report.json().dump().find("access refused"), std::string::npos);
  EXPECT_TRUE(run.checks.passed());
}

TEST_F(OtherPools, AGrantedHostPoolIsWrittenByTheGpuAndReadBack) {
  tryPool(run, hostPool(), "hostPool", report);

  EXPECT_TRUE(called("cuMemsetD32Async"));
  EXPECT_EQ(driver().poolsDestroyed, 1);
  EXPECT_EQ(run.checks.checks(), 1u);
  EXPECT_TRUE(run.checks.passed());
  EXPECT_NE(text.str().find("cuMemPoolSetAccess (device): ok, 1 MiB allocated, written, read "
                            "by the CPU, freed"),
            std::string::npos)
      << text.str();
}

TEST_F(OtherPools, WordsTheDeviceDidNotWriteFailTheCheck) {
  driver().wrongWords = 3;
  tryPool(run, hostPool(), "hostPool", report);
  ASSERT_EQ(run.checks.failures().size(), 1u);
  EXPECT_EQ(run.checks.failures()[0],
            "step 8: 1 MiB of the hostPool: expected 262144 words, got 262141");
}

TEST_F(OtherPools, ADevicePoolNeedsNoGrant) {
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  tryPool(run, props, "managedPool", report);
  EXPECT_FALSE(called("cuMemPoolSetAccess"));
  EXPECT_TRUE(called("cuMemsetD32Async"));
  EXPECT_TRUE(run.checks.passed());
}

TEST_F(OtherPools, APoolTheDriverWillNotMakeIsReportedNotUsed) {
  driver().createAnswer = CUDA_ERROR_INVALID_VALUE;
  tryPool(run, hostPool(), "hostPool", report);
  EXPECT_FALSE(called("cuMemPoolSetAccess"));
  EXPECT_FALSE(called("cuMemAllocFromPoolAsync"));
  EXPECT_EQ(driver().poolsDestroyed, 0);
  EXPECT_NE(text.str().find("cuMemPoolCreate: CUDA_ERROR_INVALID_VALUE"), std::string::npos)
      << text.str();
}

TEST_F(OtherPools, NoHostPoolIsTriedWhereTheDeviceHasNone) {
  driver().hostPoolsSupported = 0;
  probeOtherPools(run, report);
  EXPECT_EQ(driver().poolsCreated, 1);  // the managed pool only
  EXPECT_NE(text.str().find("hostPool              not tried: HOST_MEMORY_POOLS_SUPPORTED = 0"),
            std::string::npos)
      << text.str();
}
