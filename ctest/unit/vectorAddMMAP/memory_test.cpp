// deviceNeeds() and sizeRun(): what a run holds on each device, from its stripe layout, and the
// size that fits when a peer is fuller than the kernel's device.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "run_plan.hpp"
#include "memsamples.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
namespace vmm = memsamples::vmm;
using memsamples::test::messageOf;

namespace {

constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t GiB = 1ull << 30;
constexpr std::uint64_t kPlenty = 100 * GiB;

// Eight stripes over devices 0 and 1, the kernel on 0, 2 MiB granularities, the sample's
// mapping-cost ranges.
vmm::RunShape twoGpus() {
  return {0, 8, {0, 1}, {2 * MiB, 2 * MiB}, {1, 2, 8, 64}};
}

const vmm::DeviceNeed& needOf(const std::vector<vmm::DeviceNeed>& needs, int device) {
  for (const vmm::DeviceNeed& need : needs) {
    if (need.device == device)
      return need;
  }
  throw std::logic_error("no need for device " + std::to_string(device));
}

}  // namespace

TEST(DeviceNeeds, CountEachDevicesStripesAndWhatIsMeasuredBesideThem) {
  const std::vector<vmm::DeviceNeed> needs =
      vmm::deviceNeeds(twoGpus(), GiB, {{0, kPlenty}, {1, 3 * GiB}});
  ASSERT_EQ(needs.size(), 2u);
  // Each device: four 128 MiB stripes of each of A, B and C. Beside them the kernel's device
  // holds the three 1 GiB cuMemAlloc references (more than the 1 GiB of the 1-stripe cost range
  // that lies wholly there); the peer holds half of a 2-, 8- or 64-stripe cost range.
  const vmm::DeviceNeed expected[] = {{0, 4, 1536 * MiB, 3 * GiB, true, kPlenty},
                                      {1, 4, 1536 * MiB, 512 * MiB, false, 3 * GiB}};
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE("device " + std::to_string(i));
    EXPECT_EQ(needs[i].device, expected[i].device);
    EXPECT_EQ(needs[i].stripesHere, expected[i].stripesHere);
    EXPECT_EQ(needs[i].stripeBytes, expected[i].stripeBytes);
    EXPECT_EQ(needs[i].besideBytes, expected[i].besideBytes);
    EXPECT_EQ(needs[i].besideIsReferences, expected[i].besideIsReferences);
    EXPECT_EQ(needs[i].freeBytes, expected[i].freeBytes);
  }
  EXPECT_EQ(needs[0].neededBytes(), 4608 * MiB);
  EXPECT_EQ(needs[1].neededBytes(), 2 * GiB);
}

TEST(DeviceNeeds, TheKernelsDeviceHoldsItsReferencesAlsoWhenItBacksNoStripe) {
  const vmm::RunShape shape{0, 1, {1}, {2 * MiB, 2 * MiB}, {}};
  const std::vector<vmm::DeviceNeed> needs =
      vmm::deviceNeeds(shape, GiB, {{1, kPlenty}, {0, kPlenty}});
  EXPECT_EQ(needOf(needs, 0).stripeBytes, 0u);
  EXPECT_EQ(needOf(needs, 0).neededBytes(), 3 * GiB);
  EXPECT_EQ(needOf(needs, 1).stripeBytes, 3 * GiB);
  EXPECT_EQ(needOf(needs, 1).besideBytes, 0u);
}

TEST(DeviceNeeds, CountTheRoundingOfEachLayoutAtItsOwnGranularity) {
  // 100 MiB in 3 stripes is more than one 32 MiB unit per stripe: rounded to 3 x 64 MiB. The
  // 64-stripe cost range gets less than a unit per stripe: the minimum, 64 x 2 MiB = 128 MiB.
  const vmm::RunShape shape{0, 3, {0}, {2 * MiB, 32 * MiB}, {64}};
  const vmm::DeviceNeed need = vmm::deviceNeeds(shape, 100 * MiB, {{0, kPlenty}})[0];
  EXPECT_EQ(need.stripeBytes, 3 * 192 * MiB);
  EXPECT_EQ(need.besideBytes, 300 * MiB);  // the references; the cost range's 128 MiB is less
  const vmm::DeviceNeed small = vmm::deviceNeeds(shape, 4100, {{0, kPlenty}})[0];
  EXPECT_EQ(small.stripeBytes, 3 * 6 * MiB);  // 3 stripes of the 2 MiB minimum
  EXPECT_EQ(small.besideBytes, 128 * MiB);    // the 64-stripe range's cuMemAlloc
}

TEST(DeviceNeeds, RefusesFreeMemoryThatMissesADevice) {
  EXPECT_EQ(messageOf<std::invalid_argument>([] {
              vmm::deviceNeeds(twoGpus(), GiB, {{0, kPlenty}});
            }),
            "deviceNeeds: no free memory given for backing device 1");
  EXPECT_EQ(messageOf<std::invalid_argument>([] {
              vmm::deviceNeeds(twoGpus(), GiB, {{1, kPlenty}});
            }),
            "deviceNeeds: no free memory given for device 0, where the kernel runs");
}

TEST(SizeRun, AnExplicitSizeThatFitsEveryDeviceIsKeptExactly) {
  const vmm::RunSize run = vmm::sizeRun(GiB, GiB, twoGpus(), {{0, kPlenty}, {1, 2 * GiB}});
  EXPECT_EQ(run.bytes, GiB);
  EXPECT_EQ(run.layout.stripes.size(), 8u);
  EXPECT_EQ(run.layout.roundedBytes, GiB);
  EXPECT_EQ(needOf(run.needs, 1).neededBytes(), 2 * GiB);  // all of its free memory: allowed
}

TEST(SizeRun, AnExplicitSizeAFullPeerCannotHoldNamesThePeerItsNeedAndItsFreeMemory) {
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              vmm::sizeRun(GiB, GiB, twoGpus(), {{0, kPlenty}, {1, GiB}});
            }),
            "--size 1.00 GiB needs 2.00 GiB on device 1: its stripes of A, B and C (4 of 8 per "
            "vector, 1.50 GiB) and, measured beside them, 512 MiB of one mapping-cost range; "
            "device 1 has only 1.00 GiB free; choose a smaller --size or leave device 1 out of "
            "--backing");
  // One byte short reads the same when rounded: then the figures are exact.
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              vmm::sizeRun(GiB, GiB, twoGpus(), {{0, kPlenty}, {1, 2 * GiB - 1}});
            }),
            "--size 1.00 GiB needs 2147483648 bytes on device 1: its stripes of A, B and C (4 of 8 "
            "per vector, 1.50 GiB) and, measured beside them, 512 MiB of one mapping-cost range; "
            "device 1 has only 2147483647 bytes free; choose a smaller --size or leave device 1 "
            "out of --backing");
}

TEST(SizeRun, AnExplicitSizeTheKernelsDeviceCannotHoldIsRefusedAsBefore) {
  // One stripe on the kernel's device: its stripes and references, 6 vectors, as the sample
  // checked before peers were counted.
  const vmm::RunShape shape{0, 1, {0}, {2 * MiB, 2 * MiB}, {}};
  EXPECT_EQ(messageOf<ms::UsageError>([&] {
              vmm::sizeRun(GiB, GiB, shape, {{0, 5 * GiB}});
            }),
            "--size 1.00 GiB needs 6.00 GiB on device 0: its stripes of A, B and C (1 of 1 per "
            "vector, 3.00 GiB) and, measured beside them, the 3 cuMemAlloc references of 1.00 "
            "GiB each; device 0 has only 5.00 GiB free; choose a smaller --size");
  const vmm::RunShape elsewhere{0, 1, {1}, {2 * MiB, 2 * MiB}, {}};
  EXPECT_EQ(messageOf<ms::UsageError>([&] {
              vmm::sizeRun(GiB, GiB, elsewhere, {{1, kPlenty}, {0, 2 * GiB}});
            }),
            "--size 1.00 GiB needs 3.00 GiB on device 0: the 3 cuMemAlloc references of 1.00 GiB "
            "each; device 0 has only 2.00 GiB free; choose a smaller --size");
}

TEST(SizeRun, AnExplicitSizeIsCheckedForTheElementSizeAndForOverflow) {
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              vmm::sizeRun(4101, GiB, twoGpus(), {{0, kPlenty}, {1, kPlenty}});
            }),
            "--size 4101 is not a multiple of 4 bytes (one element)");
  constexpr std::uint64_t kHuge = std::numeric_limits<std::uint64_t>::max() - 3;
  const std::string message = messageOf<ms::UsageError>([&] {
    vmm::sizeRun(kHuge, GiB, twoGpus(), {{0, kPlenty}, {1, kPlenty}});
  });
  EXPECT_EQ(message.rfind("--size 18446744073709551612 is too large: planStripes: ", 0), 0u)
      << message;
}

TEST(SizeRun, TheDefaultIsKeptWhenEveryDeviceHasRoom) {
  const vmm::RunSize run = vmm::sizeRun(std::nullopt, GiB, twoGpus(), {{0, 6 * GiB}, {1, 3 * GiB}});
  EXPECT_EQ(run.bytes, GiB);  // 4.5 of 6 GiB and 2 of 3 GiB: both within 80 %
}

TEST(SizeRun, TheDefaultShrinksUntilAFullPeerHasRoom) {
  // The kernel's device has plenty; the peer has 1 GiB free and needs a little more than twice
  // the vector size (1.5 x for its stripes, 0.5 x for half a cost range, whose 64 stripes round
  // up to 128 MiB units): 384 MiB is the largest size within 80 % of its free memory. The
  // proportional shrink lands a few 2 MiB steps below it.
  const vmm::RunSize run = vmm::sizeRun(std::nullopt, GiB, twoGpus(), {{0, kPlenty}, {1, GiB}});
  EXPECT_LE(run.bytes, 384 * MiB);
  EXPECT_GE(run.bytes, 360 * MiB);
  EXPECT_EQ(run.bytes % (2 * MiB), 0u);
  for (const vmm::DeviceNeed& need : run.needs)
    EXPECT_LE(need.neededBytes(), need.freeBytes / 10 * 8) << "device " << need.device;
  EXPECT_EQ(run.layout.requestedBytes, run.bytes);
}

TEST(SizeRun, TheDefaultShrinksForTheKernelsDeviceToo) {
  const vmm::RunShape shape{0, 1, {0}, {2 * MiB, 2 * MiB}, {}};
  const vmm::RunSize run = vmm::sizeRun(std::nullopt, GiB, shape, {{0, 3 * GiB}});
  EXPECT_LT(run.bytes, GiB);
  EXPECT_LE(run.needs[0].neededBytes(), 3 * GiB / 10 * 8);
  EXPECT_GE(run.bytes, 390 * MiB);  // 6 vectors in 2.4 GiB
}

TEST(SizeRun, NoRoomEvenForTheSmallestDefaultIsAnErrorNamingTheDevice) {
  EXPECT_EQ(messageOf<std::runtime_error>([] {
              vmm::sizeRun(std::nullopt, GiB, twoGpus(), {{0, kPlenty}, {1, 4 * MiB}});
            }),
            "device 1 has only 4.00 MiB free, too little for this run even with vectors of 2.00 "
            "MiB: its stripes of A, B and C (4 of 8 per vector, 24.0 MiB) and, measured beside "
            "them, 64.0 MiB of one mapping-cost range take 88.0 MiB there");
}

TEST(SizeRun, TheLayoutUsesTheRecommendedGranularityWhereEveryStripeHoldsOneUnit) {
  vmm::RunShape shape = twoGpus();
  shape.granularities = {2 * MiB, 32 * MiB};
  const vmm::RunSize large = vmm::sizeRun(GiB, GiB, shape, {{0, kPlenty}, {1, kPlenty}});
  EXPECT_EQ(large.layout.granularity, 32 * MiB);  // 128 MiB per stripe
  const vmm::RunSize small = vmm::sizeRun(64 * MiB, GiB, shape, {{0, kPlenty}, {1, kPlenty}});
  EXPECT_EQ(small.layout.granularity, 2 * MiB);  // 8 MiB per stripe
}

// Issue 34: a first run takes seconds. Without --size each vector is 256 MiB (three of them are
// 15 times an H100's or H200's 50 MB L2, so the kernel still runs at memory bandwidth), less only
// where a device holding part of the run has too little free memory.
TEST(DefaultSize, EachVectorIs256MiBUnlessADeviceIsShort) {
  EXPECT_EQ(vmm::kDefaultBytes, 256 * MiB);
  const vmm::RunShape shape{0, 1, {0}, {2 * MiB, 2 * MiB}, vmm::kCostStripeCounts};
  const vmm::RunSize plenty =
      vmm::sizeRun(std::nullopt, vmm::kDefaultBytes, shape, {{0, kPlenty}});
  EXPECT_EQ(plenty.bytes, 256 * MiB);
  EXPECT_EQ(plenty.layout.roundedBytes, 256 * MiB);
  const vmm::RunSize shortOfMemory =
      vmm::sizeRun(std::nullopt, vmm::kDefaultBytes, shape, {{0, 512 * MiB}});
  EXPECT_LT(shortOfMemory.bytes, 256 * MiB);
  EXPECT_GT(shortOfMemory.bytes, 0u);
}
