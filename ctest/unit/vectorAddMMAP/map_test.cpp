/**
 * @file map_test.cpp
 * @brief mapStripedRange() of 02_vectorAddMMAP against the fake driver: the call sequence, and a
 *        failure at every call of the build, after which nothing may be left on the machine.
 */
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "fake_cuda_driver.hpp"
#include "striped_test_support.hpp"
#include "run_plan.hpp"
#include "striped_vmm.hpp"

namespace vmm = memsamples::vmm;
using namespace striped_test;

namespace {

using MapStripedRange = FakeDriverTest;

// A driver call that fails during the build: the function and its 1-based call number.
struct FailurePoint {
  std::string function;
  int nth;
};

std::string nameOf(const FailurePoint& point) {
  return point.function + ":" + std::to_string(point.nth);
}

// Every call the build of @p stripes stripes makes.
std::vector<FailurePoint> everyBuildCall(int stripes) {
  std::vector<FailurePoint> all{{"cuMemAddressReserve", 1}, {"cuMemSetAccess", 1}};
  for (const char* function : {"cuMemCreate", "cuMemMap", "cuMemRelease"}) {
    for (int nth = 1; nth <= stripes; ++nth)
      all.push_back({function, nth});
  }
  return all;
}

// The message mapStripedRange() must give when @p point fails with CUDA_ERROR_OUT_OF_MEMORY in a
// range of @p stripes stripes striped over devices 0 and 1 (without the line number).
std::string expectedMessage(const FailurePoint& point, int stripes) {
  const std::string failed = point.function +
                             " failed at striped_vmm.cpp:N: CUDA_ERROR_OUT_OF_MEMORY (out of "
                             "memory)";
  if (point.function == "cuMemAddressReserve")
    return failed;  // thrown before anything exists, so there is nothing to roll back
  int unmapped = 0;
  bool handle = false;
  std::string where;
  if (point.function == "cuMemSetAccess") {
    unmapped = stripes;
  } else {
    const int stripe = point.nth - 1;
    where = " (stripe " + std::to_string(stripe) + " of " + std::to_string(stripes) +
            ", on device " + std::to_string(stripe % 2) + ")";
    // The stripe being built is mapped once cuMemMap succeeded, and its handle is held from
    // cuMemCreate until cuMemRelease succeeds.
    unmapped = point.function == "cuMemRelease" ? stripe + 1 : stripe;
    handle = point.function != "cuMemCreate";
  }
  std::string undone;
  if (unmapped > 0)
    undone += std::to_string(unmapped) + (unmapped == 1 ? " stripe" : " stripes") + " unmapped, ";
  if (handle)
    undone += "1 handle released, ";
  return failed + where + "; rolled back: " + undone + "address range freed";
}

// The undo calls the rollback must make after @p point failed, in order.
std::vector<std::string> expectedRollbackCalls(const FailurePoint& point, int stripes) {
  if (point.function == "cuMemAddressReserve")
    return {};
  const int stripe = point.nth - 1;
  const int unmapped = point.function == "cuMemSetAccess" ? stripes
                       : point.function == "cuMemRelease" ? stripe + 1
                                                          : stripe;
  std::vector<std::string> calls(static_cast<std::size_t>(unmapped), "cuMemUnmap");
  if (point.function == "cuMemMap" || point.function == "cuMemRelease")
    calls.push_back("cuMemRelease");
  calls.push_back("cuMemAddressFree");
  return calls;
}

}  // namespace

TEST_F(MapStripedRange, ReservesThenCreatesMapsAndReleasesEachStripeThenSetsAccessOnce) {
  fake::reset({{fake::Device{}, fake::Device{}}, {}});
  const vmm::StripeLayout layout = layoutOf(8, {0, 1});
  const CUdeviceptr base = vmm::mapStripedRange(layout, {0, 1});

  std::vector<std::string> expected{"cuMemAddressReserve"};
  for (int i = 0; i < 8; ++i)
    expected.insert(expected.end(), {"cuMemCreate", "cuMemMap", "cuMemRelease"});
  expected.push_back("cuMemSetAccess");
  EXPECT_EQ(fake::callLog(), expected);

  EXPECT_EQ(base % fake::kDefaultGranularity, 0u);
  EXPECT_EQ(fake::lastReserveAlignment(), fake::kDefaultGranularity);
  const fake::Leftovers held = fake::leftovers();
  EXPECT_EQ(held.reservations, 1u);
  EXPECT_EQ(held.mappings, 8u);
  EXPECT_EQ(held.unreleasedHandles, 0u);  // the mappings alone keep the memory
  EXPECT_EQ(fake::bytesOn(0), 32 * MiB);
  EXPECT_EQ(fake::bytesOn(1), 32 * MiB);
  // One cuMemSetAccess (checked above) reached every stripe: it covered the whole range.
  for (std::size_t i = 0; i < 8; ++i) {
    const CUdeviceptr stripe = base + layout.stripes[i].offset;
    SCOPED_TRACE("stripe " + std::to_string(i));
    EXPECT_EQ(fake::deviceMappedAt(stripe), static_cast<int>(i % 2));
    const std::vector<CUmemAccessDesc> access = fake::accessAt(stripe);
    ASSERT_EQ(access.size(), 2u);
    for (int device = 0; device < 2; ++device) {
      EXPECT_EQ(access[device].location.type, CU_MEM_LOCATION_TYPE_DEVICE);
      EXPECT_EQ(access[device].location.id, device);
      EXPECT_EQ(access[device].flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    }
  }
  vmm::unmapStripedRange(base, layout.roundedBytes);
  EXPECT_TRUE(machineIsClean());
}

TEST_F(MapStripedRange, AlignsTheReservationToTheLayoutsGranularity) {
  fake::reset({{fake::Device{true, 8 * MiB}}, {}});
  const vmm::StripeLayout layout = vmm::planStripes(MiB, vmm::stripedGranularity({0}, {0}), 3, {0});
  const CUdeviceptr base = vmm::mapStripedRange(layout, {0});
  EXPECT_EQ(fake::lastReserveAlignment(), 8 * MiB);
  EXPECT_EQ(base % (8 * MiB), 0u);
  EXPECT_EQ(fake::leftovers().physicalBytes, 24 * MiB);
}

TEST_F(MapStripedRange, UsesTheRecommendedGranularityForStripesAndAlignmentWhereItFits) {
  // The lesson's path: both granularities from the driver, the layout chooses, the range is built.
  fake::reset({{fake::Device{}, fake::Device{}}, {}});
  const vmm::Granularities granularities = vmm::stripedGranularities({0, 1}, {0});
  const vmm::StripeLayout layout = vmm::planStripes(64 * MiB, granularities, 2, {0, 1});
  const CUdeviceptr base = vmm::mapStripedRange(layout, {0});
  EXPECT_EQ(fake::lastReserveAlignment(), fake::kDefaultRecommendedGranularity);
  EXPECT_EQ(base % fake::kDefaultRecommendedGranularity, 0u);
  EXPECT_EQ(fake::deviceMappedAt(base + fake::kDefaultRecommendedGranularity), 1);
  vmm::unmapStripedRange(base, layout.roundedBytes);
  // 8 stripes of 8 MiB are smaller than the recommended 32 MiB: the minimum, and no padding.
  const vmm::StripeLayout small = vmm::planStripes(64 * MiB, granularities, 8, {0, 1});
  const CUdeviceptr smallBase = vmm::mapStripedRange(small, {0});
  EXPECT_EQ(fake::lastReserveAlignment(), fake::kDefaultGranularity);
  EXPECT_EQ(fake::leftovers().physicalBytes, 64 * MiB);
  vmm::unmapStripedRange(smallBase, small.roundedBytes);
  EXPECT_TRUE(machineIsClean());
}

TEST_F(MapStripedRange, AFailureAtEveryCallLeavesNothingAndSaysWhatWasUndone) {
  for (const int stripes : {1, 3, 8}) {
    for (const FailurePoint& point : everyBuildCall(stripes)) {
      SCOPED_TRACE(std::to_string(stripes) + " stripes, " + nameOf(point));
      fake::reset({{fake::Device{}, fake::Device{}}, {}});
      fake::failCall(point.function, point.nth);
      const vmm::StripeLayout layout = layoutOf(stripes, {0, 1});

      const memsamples::CudaError error = cudaErrorOf([&] {
        vmm::mapStripedRange(layout, {0, 1});
      });
      EXPECT_TRUE(machineIsClean());
      EXPECT_EQ(error.result(), CUDA_ERROR_OUT_OF_MEMORY);
      EXPECT_EQ(withoutLine(error.what()), expectedMessage(point, stripes));

      // The failing call is the last of the build; the undo calls follow it.
      const std::vector<std::string> calls = fake::driverCalls();
      std::size_t failedAt = calls.size();
      int seen = 0;
      for (std::size_t i = 0; i < calls.size() && failedAt == calls.size(); ++i) {
        if (calls[i] == point.function && ++seen == point.nth)
          failedAt = i;
      }
      ASSERT_LT(failedAt, calls.size());
      EXPECT_EQ(
          std::vector<std::string>(calls.begin() + static_cast<long>(failedAt) + 1, calls.end()),
          expectedRollbackCalls(point, stripes));
    }
  }
}

TEST_F(MapStripedRange, ADriverThatRefusesAStripeIsRolledBackTheSameWay) {
  // Device 1 needs 4 MiB pieces, but the layout was planned with device 0's 2 MiB only (not with
  // stripedGranularity()): its first stripe is refused by the driver itself, not injected.
  fake::reset({{fake::Device{true, 2 * MiB}, fake::Device{true, 4 * MiB}}, {}});
  const vmm::StripeLayout layout = vmm::planStripes(16 * MiB, 2 * MiB, 8, {0, 1});
  const memsamples::CudaError error = cudaErrorOf([&] { vmm::mapStripedRange(layout, {0}); });
  EXPECT_EQ(error.result(), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemCreate failed at striped_vmm.cpp:N: CUDA_ERROR_INVALID_VALUE (invalid argument) "
            "(stripe 1 of 8, on device 1); rolled back: 1 stripe unmapped, address range freed");
  EXPECT_TRUE(machineIsClean());

  // With the granularity of every device involved, the same range builds.
  const vmm::StripeLayout fitting =
      vmm::planStripes(16 * MiB, vmm::stripedGranularity({0, 1}, {0}), 8, {0, 1});
  EXPECT_EQ(fitting.stripeBytes, 4 * MiB);
  vmm::unmapStripedRange(vmm::mapStripedRange(fitting, {0}), fitting.roundedBytes);
  EXPECT_TRUE(machineIsClean());
}

TEST_F(MapStripedRange, AccessForADeviceThatCannotReachAStripeIsRefusedAndRolledBack) {
  fake::reset({{fake::Device{}, fake::Device{}}, {"10", "01"}});
  const memsamples::CudaError error = cudaErrorOf([] {
    vmm::mapStripedRange(layoutOf(4, {0, 1}), {0});
  });
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemSetAccess failed at striped_vmm.cpp:N: CUDA_ERROR_INVALID_DEVICE (invalid device "
            "ordinal); rolled back: 4 stripes unmapped, address range freed");
  EXPECT_TRUE(machineIsClean());
}

TEST_F(MapStripedRange, AFailedUndoIsReportedAndTheOtherUndoCallsAreStillMade) {
  // The build fails at stripe 2; undoing stripe 1 (the first undo, newest first) fails too.
  fake::failCall("cuMemMap", 3);
  fake::failCall("cuMemUnmap", 1);
  const memsamples::CudaError error = cudaErrorOf([] { vmm::mapStripedRange(layoutOf(4), {0}); });
  const std::string message = withoutLine(error.what());
  EXPECT_EQ(error.result(), CUDA_ERROR_OUT_OF_MEMORY);  // the build's error, not the undo's
  EXPECT_EQ(message.rfind("cuMemMap failed at striped_vmm.cpp:N: CUDA_ERROR_OUT_OF_MEMORY (out of "
                          "memory) (stripe 2 of 4, on device 0); rolled back: 1 stripe unmapped, "
                          "1 handle released; rollback problems",
                          0),
            0u)
      << message;
  EXPECT_TRUE(contains(message,
                       "; rollback problems; cuMemUnmap of stripe 1: "
                       "CUDA_ERROR_OUT_OF_MEMORY (out of memory); cuMemAddressFree: "
                       "CUDA_ERROR_INVALID_VALUE (invalid argument)"))
      << message;
  EXPECT_EQ(fake::callCount("cuMemUnmap"), 2);  // stripe 0 was still unmapped
  EXPECT_EQ(fake::callCount("cuMemAddressFree"), 1);
  // Stripe 1 (16 MiB) is still mapped, so the driver refused to free the addresses; stripe 2's
  // handle went.
  EXPECT_EQ(fake::leftovers().describe(),
            "1 reservations, 1 mappings, 0 unreleased handles, 16777216 bytes of physical memory");
}

TEST_F(MapStripedRange, AFailedReleaseDuringTheUndoStillFreesTheAddresses) {
  fake::failCall("cuMemMap", 2);
  fake::failCall("cuMemRelease", 2);  // the 1st release is stripe 0's; the 2nd is the undo's
  const memsamples::CudaError error = cudaErrorOf([] { vmm::mapStripedRange(layoutOf(3), {0}); });
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemMap failed at striped_vmm.cpp:N: CUDA_ERROR_OUT_OF_MEMORY (out of memory) "
            "(stripe 1 of 3, on device 0); rolled back: 1 stripe unmapped, address range freed; "
            "rollback problems; cuMemRelease: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  // Stripe 1's handle, 22 MiB, is all that is left.
  EXPECT_EQ(fake::leftovers().describe(),
            "0 reservations, 0 mappings, 1 unreleased handles, 23068672 bytes of physical memory");
}

TEST_F(MapStripedRange, AnErrorWithoutADescriptionStillNamesTheCallAndRollsBack) {
  // A result the driver has no name for: the message must still say what failed and what was
  // undone.
  fake::failCall("cuMemCreate", 2, static_cast<CUresult>(1000));
  const memsamples::CudaError error = cudaErrorOf([] { vmm::mapStripedRange(layoutOf(2), {0}); });
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemCreate failed at striped_vmm.cpp:N: CUresult 1000 (unknown to this driver) "
            "(stripe 1 of 2, on device 0); rolled back: 1 stripe unmapped, address range freed");
  EXPECT_TRUE(machineIsClean());
}

TEST_F(MapStripedRange, RefusesAnEmptyLayoutOrNoMappingDeviceBeforeAnyDriverCall) {
  const std::string expected = "mapStripedRange: the layout has no stripe or no device maps it";
  for (const auto& [layout, mapping] :
       {std::pair<vmm::StripeLayout, std::vector<int>>{vmm::StripeLayout{}, {0}},
        {layoutOf(2), {}}}) {
    try {
      vmm::mapStripedRange(layout, mapping);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(error.what(), expected);
    }
  }
  EXPECT_THROW(vmm::StripedVmmRange(layoutOf(2), {}), std::invalid_argument);
  EXPECT_TRUE(fake::callLog().empty());
}
