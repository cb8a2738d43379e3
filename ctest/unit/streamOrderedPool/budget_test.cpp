// Step 2 of 10_streamOrderedPool (budget_notice.cpp) against a fake driver: the over-budget
// callback counts what it is sent, also from several driver threads at once; a driver that
// answers CUDA_ERROR_NOT_SUPPORTED is reported and the run goes on; any other error fails; an
// error path unregisters what was registered. And the line and JSON the run prints.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "budget_notice.hpp"
#include "fake_pool_driver.hpp"
#include "pool_verdict.hpp"

namespace ms = memsamples;
using fake_pool::called;
using fake_pool::driver;

namespace {

class StreamOrderedPoolBudget : public ::testing::Test {
 protected:
  void SetUp() override { driver() = fake_pool::Driver{}; }

  pool_budget::Notices notices;
};

CUasyncNotificationInfo overBudget(unsigned long long bytes) {
  CUasyncNotificationInfo info = {};
  info.type = CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET;
  info.info.overBudget.bytesOverBudget = bytes;
  return info;
}

}  // namespace

TEST_F(StreamOrderedPoolBudget, RegistersForTheDeviceCountsWhatArrivesAndUnregisters) {
  pool_budget::Watch watch(3, notices);
  watch.start();
  EXPECT_EQ(driver().registeredDevice, 3);
  EXPECT_EQ(driver().userData, &notices);

  fake_pool::notify(overBudget(4096));
  fake_pool::notify(overBudget(1 << 20));
  fake_pool::notify(overBudget(8192));
  watch.stop();
  ASSERT_EQ(driver().unregistered.size(), 1u);
  EXPECT_EQ(driver().unregistered[0].first, 3);
  EXPECT_EQ(driver().unregistered[0].second, driver().handle);

  // Nothing arrives after the unregister.
  fake_pool::notify(overBudget(1ull << 30));
  const pool_verdict::BudgetReport report = watch.report();
  EXPECT_TRUE(report.registered);
  EXPECT_EQ(report.overBudget, 3u);
  EXPECT_EQ(report.mostBytesOver, 1u << 20);
  EXPECT_EQ(report.otherTypes, 0u);
  EXPECT_EQ(pool_verdict::budgetLine(report),
            "Over-budget notifications: registered for the whole run; 3 arrived, the largest "
            "1.00 MiB over the budget; unregistered");
}

TEST_F(StreamOrderedPoolBudget, NothingArrivesOnAMachineNotOverBudget) {
  pool_budget::Watch watch(0, notices);
  watch.start();
  watch.stop();
  EXPECT_EQ(pool_verdict::budgetLine(watch.report()),
            "Over-budget notifications: registered for the whole run; none arrived during this "
            "run; unregistered");
  EXPECT_EQ(pool_verdict::budgetJson(watch.report()).dump(),
            "{\"registered\": true, \"overBudget\": 0, \"mostBytesOverBudget\": 0, "
            "\"otherTypes\": 0}");
}

TEST_F(StreamOrderedPoolBudget, TheTypeIsCheckedBeforeTheUnionIsRead) {
  pool_budget::Watch watch(0, notices);
  watch.start();
  CUasyncNotificationInfo unknown = overBudget(123);
  unknown.type = static_cast<CUasyncNotificationType>(0);  // not a type cuda.h 13.0 has
  fake_pool::notify(unknown);
  watch.stop();
  const pool_verdict::BudgetReport report = watch.report();
  EXPECT_EQ(report.overBudget, 0u);
  EXPECT_EQ(report.mostBytesOver, 0u);
  EXPECT_EQ(report.otherTypes, 1u);
  const std::string line = pool_verdict::budgetLine(report);
  EXPECT_NE(line.find("none arrived during this run; 1 of another type"), std::string::npos);
}

TEST_F(StreamOrderedPoolBudget, TheCallbackIsSafeFromSeveralDriverThreadsAtOnce) {
  // Eight threads deliver 10,000 notifications each, with excesses that rise and fall: every
  // one is counted, and the largest survives every race.
  constexpr int kThreads = 8;
  constexpr int kEach = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < kEach; ++i) {
        // 7919 is prime to 10,000: i * 7919 mod 10,000 visits every value below it once.
        const auto step = static_cast<unsigned long long>((i * 7919) % kEach);
        CUasyncNotificationInfo info = overBudget(step * kThreads + t);
        pool_budget::onNotification(&info, &notices, nullptr);
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  EXPECT_EQ(notices.overBudget.load(), static_cast<std::uint64_t>(kThreads) * kEach);
  const std::uint64_t largest = static_cast<std::uint64_t>(kEach - 1) * kThreads + kThreads - 1;
  EXPECT_EQ(notices.mostBytesOver.load(), largest);
}

TEST_F(StreamOrderedPoolBudget, NotSupportedIsReportedAndTheRunGoesOn) {
  driver().registerAnswer = CUDA_ERROR_NOT_SUPPORTED;
  {
    pool_budget::Watch watch(0, notices);
    EXPECT_NO_THROW(watch.start());
    EXPECT_NO_THROW(watch.stop());
    const pool_verdict::BudgetReport report = watch.report();
    EXPECT_FALSE(report.registered);
    EXPECT_EQ(pool_verdict::budgetLine(report),
              "Over-budget notifications: cuDeviceRegisterAsyncNotification answered "
              "CUDA_ERROR_NOT_SUPPORTED (operation not supported), so none could be watched for");
    EXPECT_EQ(pool_verdict::budgetJson(report).dump(),
              "{\"registered\": false, \"refusal\": \"CUDA_ERROR_NOT_SUPPORTED (operation not "
              "supported)\", \"overBudget\": 0, \"mostBytesOverBudget\": 0, \"otherTypes\": 0}");
  }
  // The junk handle the failed call left is never unregistered.
  EXPECT_FALSE(called("cuDeviceUnregisterAsyncNotification"));
}

TEST_F(StreamOrderedPoolBudget, AnyOtherErrorFailsNamingTheCall) {
  driver().registerAnswer = CUDA_ERROR_INVALID_VALUE;
  {
    pool_budget::Watch watch(0, notices);
    try {
      watch.start();
      FAIL() << "start() accepted CUDA_ERROR_INVALID_VALUE";
    } catch (const ms::CudaError& error) {
      EXPECT_NE(std::string(error.what()).find("cuDeviceRegisterAsyncNotification failed"),
                std::string::npos);
      EXPECT_EQ(error.result(), CUDA_ERROR_INVALID_VALUE);
    }
  }
  EXPECT_FALSE(called("cuDeviceUnregisterAsyncNotification"));
}

TEST_F(StreamOrderedPoolBudget, AnErrorPathUnregisters) {
  {
    pool_budget::Watch watch(2, notices);
    watch.start();
    // An error elsewhere unwinds past the watch before stop().
  }
  ASSERT_EQ(driver().unregistered.size(), 1u);
  EXPECT_EQ(driver().unregistered[0].first, 2);
  EXPECT_EQ(driver().unregistered[0].second, driver().handle);
  EXPECT_EQ(driver().callback, nullptr);
}

TEST_F(StreamOrderedPoolBudget, AFailedUnregisterFailsTheRunAndTheOwnerTriesOnceMore) {
  driver().unregisterAnswer = CUDA_ERROR_INVALID_VALUE;
  {
    pool_budget::Watch watch(0, notices);
    watch.start();
    EXPECT_THROW(watch.stop(), ms::CudaError);
  }
  // The destructor tries once more (answer ignored): the handle is still registered.
  EXPECT_EQ(driver().unregistered.size(), 2u);
}
