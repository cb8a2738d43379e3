// buildStripedRange() and releaseStripedRange() against a fake driver: the success path, and for
// every step and every stripe a failure half-way, after which exactly nothing may be left.
#include <gtest/gtest.h>

#include <string>

#include "fake_vmm_driver.hpp"
#include "striped_vmm_logic.hpp"

namespace vmm = memsamples::vmm;
using vmm::VmmStep;

namespace {

constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t kGranularity = 2 * MiB;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

vmm::StripeLayout layoutOf(int stripes, std::vector<int> devices = {0},
                           std::uint64_t bytes = 64 * MiB) {
  return vmm::planStripes(bytes, kGranularity, stripes, devices);
}

// Builds and expects a VmmStepError; returns it.
vmm::VmmStepError buildExpectingError(fake::FakeVmmDriver& driver, const vmm::StripeLayout& layout,
                                      const vmm::BuildOptions& options = {}) {
  try {
    vmm::buildStripedRange(driver, layout, {0}, options);
  } catch (const vmm::VmmStepError& error) {
    return error;
  }
  ADD_FAILURE() << "the build did not fail";
  return vmm::VmmStepError(CUDA_SUCCESS, "", VmmStep::Reserve, -1, false, 0);
}

// What the rollback summary must say after a failure at @p fault in a range of @p stripes.
std::string expectedRollback(const vmm::FaultInjection& fault, int stripes) {
  int unmapped = 0;
  bool handle = false;
  switch (fault.step) {
    case VmmStep::Reserve:
      return "rolled back: nothing had been created";
    case VmmStep::Create:
      unmapped = fault.index;
      break;
    case VmmStep::Map:
      unmapped = fault.index;
      handle = true;
      break;
    case VmmStep::Release:
      unmapped = fault.index + 1;
      handle = true;
      break;
    case VmmStep::SetAccess:
      unmapped = stripes;
      break;
    default:
      break;
  }
  std::string text = "rolled back: ";
  if (unmapped > 0)
    text += std::to_string(unmapped) + (unmapped == 1 ? " stripe" : " stripes") + " unmapped, ";
  if (handle)
    text += "1 handle released, ";
  return text + "address range freed";
}

// Every build step that can fail, at every stripe.
std::vector<vmm::FaultInjection> everyFailure(int stripes) {
  std::vector<vmm::FaultInjection> all{{VmmStep::Reserve, 0}, {VmmStep::SetAccess, 0}};
  for (const VmmStep step : {VmmStep::Create, VmmStep::Map, VmmStep::Release}) {
    for (int i = 0; i < stripes; ++i)
      all.push_back({step, i});
  }
  return all;
}

}  // namespace

TEST(BuildStripedRange, BuildsReserveCreateMapReleaseThenOneSetAccess) {
  fake::FakeVmmDriver driver;
  const vmm::StripeLayout layout = layoutOf(8, {0, 1});
  const CUdeviceptr base = vmm::buildStripedRange(driver, layout, {0, 1}, {});

  std::vector<VmmStep> expected{VmmStep::Reserve};
  for (int i = 0; i < 8; ++i) {
    expected.insert(expected.end(), {VmmStep::Create, VmmStep::Map, VmmStep::Release});
  }
  expected.push_back(VmmStep::SetAccess);
  EXPECT_EQ(driver.log(), expected);

  EXPECT_EQ(driver.reservations(), 1u);
  EXPECT_EQ(driver.mappings(), 8u);
  EXPECT_EQ(driver.liveAllocations(), 8u);
  EXPECT_EQ(driver.unreleasedHandles(), 0u);  // the mappings alone keep the memory
  EXPECT_EQ(driver.bytesOn(0), 32 * MiB);
  EXPECT_EQ(driver.bytesOn(1), 32 * MiB);
  EXPECT_EQ(base % kGranularity, 0u);
  for (int i = 0; i < 8; ++i) {
    const CUdeviceptr stripe = base + static_cast<std::uint64_t>(i) * 8 * MiB;
    EXPECT_EQ(driver.deviceMappedAt(stripe), i % 2) << "stripe " << i;
    EXPECT_EQ(driver.accessAt(stripe), (std::vector<int>{0, 1})) << "stripe " << i;
  }

  const vmm::ReleaseResult released = vmm::releaseStripedRange(driver, base, layout.roundedBytes);
  EXPECT_EQ(released.unmap, CUDA_SUCCESS);
  EXPECT_EQ(released.addressFree, CUDA_SUCCESS);
  EXPECT_TRUE(driver.empty());
  EXPECT_EQ(driver.calls(VmmStep::Unmap), 1);  // one call for the whole range
}

TEST(BuildStripedRange, UsesTheAddressHintAndTheGranularityAsAlignment) {
  fake::FakeVmmDriver driver;
  const vmm::StripeLayout layout = layoutOf(2);
  vmm::BuildOptions options;
  options.addressHint = 0x7f4000000000ull;
  const CUdeviceptr base = vmm::buildStripedRange(driver, layout, {0}, options);
  EXPECT_EQ(base, options.addressHint);
  vmm::releaseStripedRange(driver, base, layout.roundedBytes);
  // The hint is now free again, so it is granted again.
  EXPECT_EQ(vmm::buildStripedRange(driver, layout, {0}, options), options.addressHint);
}

TEST(BuildStripedRange, InjectedFailureAtEveryStepAndStripeUndoesExactlyWhatWasCreated) {
  for (const int stripes : {1, 3, 8}) {
    for (const vmm::FaultInjection& fault : everyFailure(stripes)) {
      SCOPED_TRACE("stripes " + std::to_string(stripes) + ", " + vmm::formatFaultInjection(fault));
      fake::FakeVmmDriver driver;
      vmm::BuildOptions options;
      options.fault = fault;
      const vmm::StripeLayout layout = layoutOf(stripes, {0, 1});
      const vmm::VmmStepError error = buildExpectingError(driver, layout, options);

      EXPECT_TRUE(driver.empty()) << "left behind: " << driver.reservations() << " reservations, "
                                  << driver.mappings() << " mappings, " << driver.liveAllocations()
                                  << " allocations";
      EXPECT_EQ(error.result(), vmm::kInjectedResult);
      EXPECT_TRUE(error.injected());
      EXPECT_EQ(error.step(), fault.step);
      EXPECT_EQ(error.stripe(), vmm::isPerStripeStep(fault.step) ? fault.index : -1);
      EXPECT_EQ(error.reservedBase() != 0, fault.step != VmmStep::Reserve);

      const std::string message = error.what();
      EXPECT_EQ(
          message.rfind(
              std::string(vmm::stepCallName(fault.step)) + " failed at striped_vmm_logic.cpp:", 0),
          0u)
          << message;
      if (vmm::isPerStripeStep(fault.step)) {
        const std::string stripeText = "for stripe " + std::to_string(fault.index) + " of " +
                                       std::to_string(stripes) + " (device " +
                                       std::to_string(fault.index % 2) + ", VA offset ";
        EXPECT_TRUE(contains(message, stripeText)) << message;
      } else {
        EXPECT_TRUE(contains(message, "for the range of ")) << message;
      }
      EXPECT_TRUE(contains(message, "FAKE_ERROR_2 [injected by --inject-failure " +
                                        vmm::formatFaultInjection(fault) + "]; "))
          << message;
      EXPECT_TRUE(contains(message, expectedRollback(fault, stripes))) << message;
      // The injected call itself never reached the driver (a release injected at stripe k is
      // made once more, for real, by the rollback).
      const int builtBefore = vmm::isPerStripeStep(fault.step) ? fault.index : 0;
      EXPECT_EQ(driver.calls(fault.step), builtBefore + (fault.step == VmmStep::Release ? 1 : 0));
    }
  }
}

TEST(BuildStripedRange, RealDriverFailuresRollBackTheSameWay) {
  for (const vmm::FaultInjection& fault : everyFailure(4)) {
    SCOPED_TRACE(vmm::formatFaultInjection(fault));
    fake::FakeVmmDriver driver;
    driver.failCall(fault.step, fault.index, CUDA_ERROR_INVALID_DEVICE);
    const vmm::VmmStepError error = buildExpectingError(driver, layoutOf(4));
    EXPECT_TRUE(driver.empty());
    EXPECT_FALSE(error.injected());
    EXPECT_EQ(error.result(), CUDA_ERROR_INVALID_DEVICE);
    EXPECT_EQ(error.step(), fault.step);
    const std::string message = error.what();
    EXPECT_TRUE(contains(message, "FAKE_ERROR_101; rolled back")) << message;
    EXPECT_FALSE(contains(message, "injected")) << message;
  }
}

TEST(BuildStripedRange, RollbackProblemsAreReportedAndTheRestIsStillUndone) {
  fake::FakeVmmDriver driver;
  driver.failCall(VmmStep::Map, 2);    // the build fails at stripe 2 ...
  driver.failCall(VmmStep::Unmap, 0);  // ... and unmapping stripe 1 fails during rollback
  const vmm::VmmStepError error = buildExpectingError(driver, layoutOf(4));
  const std::string message = error.what();
  EXPECT_TRUE(contains(message, "rolled back: 1 stripe unmapped, 1 handle released")) << message;
  EXPECT_TRUE(contains(message, "rollback problem: cuMemUnmap of stripe 1 failed: FAKE_ERROR_2"))
      << message;
  // Stripe 1 is still mapped, so the reservation cannot be freed either; both are reported.
  EXPECT_TRUE(contains(message,
                       "rollback problem: cuMemAddressFree of the range failed: "
                       "FAKE_ERROR_1"))
      << message;
  EXPECT_EQ(driver.mappings(), 1u);
  EXPECT_EQ(driver.unreleasedHandles(), 0u);  // stripe 2's handle was released all the same
}

TEST(BuildStripedRange, AFailedReleaseIsRetriedByTheRollback) {
  fake::FakeVmmDriver driver;
  driver.failCall(VmmStep::Release, 1);
  const vmm::VmmStepError error = buildExpectingError(driver, layoutOf(3));
  EXPECT_EQ(error.step(), VmmStep::Release);
  EXPECT_EQ(error.stripe(), 1);
  EXPECT_TRUE(contains(error.what(),
                       "rolled back: 2 stripes unmapped, 1 handle released, "
                       "address range freed"))
      << error.what();
  EXPECT_TRUE(driver.empty());
}

TEST(BuildStripedRange, FillsTheStepTimes) {
  fake::FakeVmmDriver driver;
  vmm::StepTimes times{-1, -1, -1, -1, -1};
  vmm::BuildOptions options;
  options.times = &times;
  vmm::buildStripedRange(driver, layoutOf(4), {0}, options);
  EXPECT_GE(times.reserveMs, 0);
  EXPECT_GE(times.createMs, 0);
  EXPECT_GE(times.mapMs, 0);
  EXPECT_GE(times.releaseMs, 0);
  EXPECT_GE(times.setAccessMs, 0);
}

TEST(BuildStripedRange, RejectsAnEmptyLayoutOrNoMappingDeviceBeforeCallingTheDriver) {
  fake::FakeVmmDriver driver;
  EXPECT_THROW(vmm::buildStripedRange(driver, vmm::StripeLayout{}, {0}, {}), std::invalid_argument);
  try {
    vmm::buildStripedRange(driver, layoutOf(2), {}, {});
    FAIL() << "accepted an empty mapping list";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "buildStripedRange: no mapping device; nothing could access the range");
  }
  EXPECT_TRUE(driver.log().empty());
}

TEST(BuildStripedRange, RejectsAFaultOnAStepThatIsNotABuildStep) {
  // A fault on unmap or address free would never fire: the build would succeed silently.
  for (const VmmStep step : {VmmStep::Unmap, VmmStep::AddressFree}) {
    fake::FakeVmmDriver driver;
    vmm::BuildOptions options;
    options.fault = vmm::FaultInjection{step, 0};
    try {
      vmm::buildStripedRange(driver, layoutOf(2), {0}, options);
      ADD_FAILURE() << "accepted a fault on " << vmm::stepCallName(step);
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()),
                std::string("buildStripedRange: ") + vmm::stepCallName(step) +
                    " is not a build step; only reserve, create, map, release and access can be "
                    "injected");
    }
    EXPECT_TRUE(driver.log().empty());
  }
}

TEST(ReleaseStripedRange, ReportsBothResultsAndTriesBoth) {
  fake::FakeVmmDriver driver;
  const vmm::ReleaseResult result = vmm::releaseStripedRange(driver, 0x7f0000000000ull, 4 * MiB);
  EXPECT_EQ(result.unmap, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(result.addressFree, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(driver.calls(VmmStep::AddressFree), 1);
}

TEST(VmmStepError, IsACudaErrorWithItsFields) {
  const vmm::VmmStepError error(CUDA_ERROR_OUT_OF_MEMORY, "text", VmmStep::Map, 3, true, 0x1000);
  const memsamples::CudaError& base = error;
  EXPECT_EQ(base.result(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_STREQ(base.what(), "text");
  EXPECT_EQ(error.step(), VmmStep::Map);
  EXPECT_EQ(error.stripe(), 3);
  EXPECT_TRUE(error.injected());
  EXPECT_EQ(error.reservedBase(), 0x1000u);
}
