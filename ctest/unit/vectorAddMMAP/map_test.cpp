/**
 * @file map_test.cpp
 * @brief mapStripedRange() of 02_vectorAddMMAP against the fake driver: the call sequence (the
 *        granularity of every device first), and a failure at every call of the build, after
 *        which nothing may be left on the machine; the rollback's knowledge of the build's
 *        order, which it learns what exists from.
 */
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "fake_cuda_driver.hpp"
#include "striped_test_support.hpp"
#include "run_plan.hpp"
#include "striped_rollback.hpp"
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

// The granularity questions of a range over backing devices 0,1 mapped by 0,1: two per device
// of each list (the minimum and the recommended).
constexpr int kGranularityCalls = 8;

// Every call the build of @p stripes stripes over devices 0 and 1 makes.
std::vector<FailurePoint> everyBuildCall(int stripes) {
  std::vector<FailurePoint> all{{"cuMemAddressReserve", 1}, {"cuMemSetAccess", 1}};
  for (int nth = 1; nth <= kGranularityCalls; ++nth)
    all.push_back({"cuMemGetAllocationGranularity", nth});
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
  if (point.function == "cuMemAddressReserve" || point.function == "cuMemGetAllocationGranularity")
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
  if (point.function == "cuMemGetAllocationGranularity")
    return {};  // the build stops at its first question; nothing else is called
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

TEST_F(MapStripedRange, AsksTheGranularityThenReservesCreatesMapsReleasesAndSetsAccessOnce) {
  fake::reset({{fake::Device{}, fake::Device{}}, {}});
  const vmm::StripedRange range = vmm::mapStripedRange(64 * MiB, 8, {0, 1}, {0, 1});
  const CUdeviceptr base = range.base;
  const vmm::StripeLayout& layout = range.layout;

  // Both granularities of every backing device and every mapping device, before anything else.
  std::vector<std::string> expected(kGranularityCalls, "cuMemGetAllocationGranularity");
  expected.push_back("cuMemAddressReserve");
  for (int i = 0; i < 8; ++i)
    expected.insert(expected.end(), {"cuMemCreate", "cuMemMap", "cuMemRelease"});
  expected.push_back("cuMemSetAccess");
  EXPECT_EQ(fake::callLog(), expected);

  // 8 stripes of 8 MiB are smaller than the recommended 32 MiB: the layout is the one planned at
  // the minimum granularity.
  const vmm::StripeLayout planned = layoutOf(8, {0, 1});
  EXPECT_EQ(layout.requestedBytes, planned.requestedBytes);
  EXPECT_EQ(layout.granularity, planned.granularity);
  EXPECT_EQ(layout.roundedBytes, planned.roundedBytes);
  EXPECT_EQ(layout.stripeBytes, planned.stripeBytes);
  ASSERT_EQ(layout.stripes.size(), planned.stripes.size());
  for (std::size_t i = 0; i < planned.stripes.size(); ++i) {
    EXPECT_EQ(layout.stripes[i].device, planned.stripes[i].device);
    EXPECT_EQ(layout.stripes[i].offset, planned.stripes[i].offset);
    EXPECT_EQ(layout.stripes[i].bytes, planned.stripes[i].bytes);
  }

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
  const vmm::StripedRange range = vmm::mapStripedRange(MiB, 3, {0}, {0});
  EXPECT_EQ(range.layout.granularity, 8 * MiB);
  EXPECT_EQ(range.layout.roundedBytes, 24 * MiB);
  EXPECT_EQ(fake::lastReserveAlignment(), 8 * MiB);
  EXPECT_EQ(range.base % (8 * MiB), 0u);
  EXPECT_EQ(fake::leftovers().physicalBytes, 24 * MiB);
}

TEST_F(MapStripedRange, UsesTheRecommendedGranularityForStripesAndAlignmentWhereItFits) {
  // Both granularities from the driver, the layout chooses, the range is built: the layout is
  // the one step 4 of the lesson plans with stripedGranularities() to size the run.
  fake::reset({{fake::Device{}, fake::Device{}}, {}});
  const vmm::Granularities granularities = vmm::stripedGranularities({0, 1}, {0});
  const vmm::StripedRange range = vmm::mapStripedRange(64 * MiB, 2, {0, 1}, {0});
  EXPECT_EQ(range.layout.granularity, fake::kDefaultRecommendedGranularity);
  EXPECT_EQ(range.layout.roundedBytes,
            vmm::planStripes(64 * MiB, granularities, 2, {0, 1}).roundedBytes);
  EXPECT_EQ(fake::lastReserveAlignment(), fake::kDefaultRecommendedGranularity);
  EXPECT_EQ(range.base % fake::kDefaultRecommendedGranularity, 0u);
  EXPECT_EQ(fake::deviceMappedAt(range.base + fake::kDefaultRecommendedGranularity), 1);
  vmm::unmapStripedRange(range.base, range.layout.roundedBytes);
  // 8 stripes of 8 MiB are smaller than the recommended 32 MiB: the minimum, and no padding.
  const vmm::StripedRange small = vmm::mapStripedRange(64 * MiB, 8, {0, 1}, {0});
  EXPECT_EQ(small.layout.granularity, fake::kDefaultGranularity);
  EXPECT_EQ(fake::lastReserveAlignment(), fake::kDefaultGranularity);
  EXPECT_EQ(fake::leftovers().physicalBytes, 64 * MiB);
  vmm::unmapStripedRange(small.base, small.layout.roundedBytes);
  EXPECT_TRUE(machineIsClean());
}

TEST_F(MapStripedRange, AFailureAtEveryCallLeavesNothingAndSaysWhatWasUndone) {
  for (const int stripes : {1, 3, 8}) {
    for (const FailurePoint& point : everyBuildCall(stripes)) {
      SCOPED_TRACE(std::to_string(stripes) + " stripes, " + nameOf(point));
      fake::reset({{fake::Device{}, fake::Device{}}, {}});
      fake::failCall(point.function, point.nth);

      const memsamples::CudaError error = cudaErrorOf([&] {
        vmm::mapStripedRange(64 * MiB, stripes, {0, 1}, {0, 1});
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

TEST_F(MapStripedRange, AsksTheGranularityOfEveryBackingAndMappingDevice) {
  // Device 1 needs 4 MiB pieces, device 0 2 MiB: a range planned with device 0's 2 MiB alone
  // would have its stripes on device 1 refused by the driver. The build asks both devices, so
  // its stripes are 4 MiB and every one is accepted.
  fake::reset({{fake::Device{true, 2 * MiB}, fake::Device{true, 4 * MiB}}, {}});
  const vmm::StripedRange backed = vmm::mapStripedRange(16 * MiB, 8, {0, 1}, {0});
  EXPECT_EQ(backed.layout.stripeBytes, 4 * MiB);
  EXPECT_EQ(backed.layout.roundedBytes, 32 * MiB);
  EXPECT_EQ(fake::bytesOn(1), 16 * MiB);
  vmm::unmapStripedRange(backed.base, backed.layout.roundedBytes);
  EXPECT_TRUE(machineIsClean());

  // A mapping device counts too: its mappings must be aligned for it.
  const vmm::StripedRange mapped = vmm::mapStripedRange(16 * MiB, 8, {0}, {0, 1});
  EXPECT_EQ(mapped.layout.stripeBytes, 4 * MiB);
  EXPECT_EQ(fake::lastReserveAlignment(), 4 * MiB);
  vmm::unmapStripedRange(mapped.base, mapped.layout.roundedBytes);
  EXPECT_TRUE(machineIsClean());
}

TEST_F(MapStripedRange, ADriverThatRefusesAStripeIsRolledBackTheSameWay) {
  // The driver refuses stripe 1's memory on device 1 with an answer of its own (here injected):
  // the error names it, and what was built is undone.
  fake::reset({{fake::Device{}, fake::Device{}}, {}});
  fake::failCall("cuMemCreate", 2, CUDA_ERROR_INVALID_VALUE);
  const memsamples::CudaError error =
      cudaErrorOf([] { vmm::mapStripedRange(16 * MiB, 8, {0, 1}, {0}); });
  EXPECT_EQ(error.result(), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemCreate failed at striped_vmm.cpp:N: CUDA_ERROR_INVALID_VALUE (invalid argument) "
            "(stripe 1 of 8, on device 1); rolled back: 1 stripe unmapped, address range freed");
  EXPECT_TRUE(machineIsClean());
}

TEST_F(MapStripedRange, AccessForADeviceThatCannotReachAStripeIsRefusedAndRolledBack) {
  fake::reset({{fake::Device{}, fake::Device{}}, {"10", "01"}});
  const memsamples::CudaError error = cudaErrorOf([] {
    vmm::mapStripedRange(64 * MiB, 4, {0, 1}, {0});
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
  const memsamples::CudaError error =
      cudaErrorOf([] { vmm::mapStripedRange(64 * MiB, 4, {0}, {0}); });
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
  const memsamples::CudaError error =
      cudaErrorOf([] { vmm::mapStripedRange(64 * MiB, 3, {0}, {0}); });
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
  const memsamples::CudaError error =
      cudaErrorOf([] { vmm::mapStripedRange(64 * MiB, 2, {0}, {0}); });
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemCreate failed at striped_vmm.cpp:N: CUresult 1000 (unknown to this driver) "
            "(stripe 1 of 2, on device 0); rolled back: 1 stripe unmapped, address range freed");
  EXPECT_TRUE(machineIsClean());
}

TEST_F(MapStripedRange, RefusesNoBackingOrNoMappingDeviceBeforeAnyDriverCall) {
  const std::string expected =
      "mapStripedRange: no backing device holds the range or no device maps it";
  for (const auto& [backing, mapping] :
       {std::pair<std::vector<int>, std::vector<int>>{{}, {0}}, {{0}, {}}}) {
    try {
      vmm::mapStripedRange(64 * MiB, 2, backing, mapping);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(error.what(), expected);
    }
  }
  EXPECT_THROW(vmm::StripedVmmRange(64 * MiB, 2, {0}, {}), std::invalid_argument);
  EXPECT_TRUE(fake::callLog().empty());
}

TEST_F(MapStripedRange, RefusesAZeroSizeOrStripeCountBeforeAnythingIsBuilt) {
  // planStripes() refuses them after the granularity questions, which build nothing.
  EXPECT_THROW(vmm::mapStripedRange(0, 2, {0}, {0}), std::invalid_argument);
  EXPECT_THROW(vmm::mapStripedRange(64 * MiB, 0, {0}, {0}), std::invalid_argument);
  EXPECT_EQ(fake::callCount("cuMemAddressReserve"), 0);
  EXPECT_TRUE(machineIsClean());
}

// The rollback learns what exists from the calls that succeeded, so it must know their order; a
// build that the rollback does not know (a call added or moved in mapStripedRange()) must stop
// there, with nothing left, rather than be undone wrongly later.
TEST_F(MapStripedRange, TheRollbackFollowsTheBuildsOrderCallByCall) {
  const vmm::StripeLayout layout = layoutOf(2, {0});
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle{};
  vmm::Rollback built(layout, base, handle);
  const std::vector<std::string> order = {"cuMemAddressReserve", "cuMemCreate", "cuMemMap",
                                          "cuMemRelease", "cuMemCreate", "cuMemMap",
                                          "cuMemRelease", "cuMemSetAccess"};
  for (const std::string& call : order) {
    ASSERT_NE(built.nextCall(), nullptr);
    EXPECT_EQ(std::string(built.nextCall()), call);
    built.check(CUDA_SUCCESS, call.c_str());
  }
  EXPECT_EQ(built.nextCall(), nullptr);  // the range is whole: nothing is undone
}

TEST_F(MapStripedRange, ACallOutOfTheBuildsOrderUndoesWhatExistsAndSaysSo) {
  const vmm::StripeLayout layout = layoutOf(2, {0});
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle{};
  vmm::Rollback built(layout, base, handle);
  built.check(cuMemAddressReserve(&base, layout.roundedBytes, layout.granularity, 0, 0),
              "cuMemAddressReserve");
  ASSERT_FALSE(machineIsClean());  // the reservation exists

  try {
    built.check(CUDA_SUCCESS, "cuMemMap");  // no stripe was created yet
    ADD_FAILURE() << "a call out of order was accepted";
  } catch (const std::logic_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "mapStripedRange: cuMemMap succeeded where cuMemCreate was due; the rollback "
              "does not know this order");
  }
  EXPECT_TRUE(machineIsClean());
}
