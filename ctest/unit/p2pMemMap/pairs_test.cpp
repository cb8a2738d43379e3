// Which ordered pairs 05_p2pMemMap tests, on fake machines, and when it is waived instead;
// --pairs parsing and the VMM-path precondition.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "p2p_logic.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
using memsamples::test::messageOf;
namespace p2p = memsamples::p2p;

namespace {

using Pairs = std::vector<p2p::DevicePair>;

// vmmFlags: one character per device, '1' = supports VMM. access: one row per ACCESSOR,
// access[b][a] == '1' when device b can access device a's memory (cuDeviceCanAccessPeer(b, a));
// the diagonal is set for you.
p2p::DeviceTopology machine(const std::string& vmmFlags, const std::vector<std::string>& access) {
  p2p::DeviceTopology result;
  for (const char flag : vmmFlags)
    result.vmmSupported.push_back(flag == '1');
  for (std::size_t b = 0; b < access.size(); ++b) {
    std::vector<bool> row;
    for (std::size_t a = 0; a < access[b].size(); ++a)
      row.push_back(a == b || access[b][a] == '1');
    result.canAccessPeer.push_back(row);
  }
  return result;
}

p2p::DeviceTopology oneGpu() {
  return machine("1", {"1"});
}
p2p::DeviceTopology twoWithoutAccess() {
  return machine("11", {"10", "01"});
}
p2p::DeviceTopology twoConnected() {
  return machine("11", {"11", "11"});
}
// Two islands: 0 <-> 1 and 2 <-> 3, nothing across.
p2p::DeviceTopology fourPartial() {
  return machine("1111", {"1100", "1100", "0011", "0011"});
}
// Device 1 can access device 0's memory, device 0 cannot access device 1's.
p2p::DeviceTopology asymmetric() {
  return machine("11", {"10", "11"});
}

std::string waiverOf(const p2p::DeviceTopology& topology, const Pairs& requested = {},
                     std::optional<long long> device = std::nullopt) {
  return messageOf<ms::WaivedError>([&] { p2p::planPairs(topology, requested, device); });
}

std::string usageOf(const p2p::DeviceTopology& topology, const Pairs& requested,
                    std::optional<long long> device = std::nullopt) {
  return messageOf<ms::UsageError>([&] { p2p::planPairs(topology, requested, device); });
}

std::string parseError(const std::string& text) {
  return messageOf<ms::UsageError>([&] { p2p::parsePairList(text); });
}

}  // namespace

// ---------------------------------------------------------------------------------- formatting

TEST(FormatPair, OwnerColonAccessor) {
  EXPECT_EQ(p2p::formatPair({0, 1}), "0:1");
  EXPECT_EQ(p2p::formatPair({12, 3}), "12:3");
}

TEST(FormatBothWays, LowerDeviceFirstWhateverTheDirection) {
  EXPECT_EQ(p2p::formatBothWays({0, 1}), "0<->1");
  EXPECT_EQ(p2p::formatBothWays({3, 1}), "1<->3");
  EXPECT_EQ(p2p::formatBothWays({2, 2}), "2<->2");  // a loopback pair
}

TEST(FormatPairList, CommaSeparatedOrNone) {
  EXPECT_EQ(p2p::formatPairList({}), "(none)");
  EXPECT_EQ(p2p::formatPairList({{0, 1}}), "0:1");
  EXPECT_EQ(p2p::formatPairList({{0, 1}, {1, 0}, {2, 3}}), "0:1, 1:0, 2:3");
}

// ------------------------------------------------------------------------------------- --pairs

TEST(ParsePairList, ReadsOrderedPairsInTheirOrder) {
  EXPECT_EQ(p2p::parsePairList("0:1"), (Pairs{{0, 1}}));
  EXPECT_EQ(p2p::parsePairList("1:0,0:1,3:2"), (Pairs{{1, 0}, {0, 1}, {3, 2}}));
  EXPECT_EQ(p2p::parsePairList("10:7"), (Pairs{{10, 7}}));
}

TEST(ParsePairList, BothDirectionsAreDifferentPairs) {
  EXPECT_EQ(p2p::parsePairList("0:1,1:0").size(), 2u);
}

TEST(ParsePairList, RefusesEmptyText) {
  EXPECT_EQ(parseError(""), "--pairs needs a non-empty value such as 0:1,1:0");
}

TEST(ParsePairList, RefusesItemsWithoutExactlyOneColon) {
  EXPECT_EQ(parseError("01"), "invalid pair '01' for --pairs: expected OWNER:ACCESSOR such as 0:1");
  EXPECT_EQ(parseError("0:1:2"),
            "invalid pair '0:1:2' for --pairs: expected OWNER:ACCESSOR such as 0:1");
  EXPECT_EQ(parseError("0:1,"), "invalid pair '' for --pairs: expected OWNER:ACCESSOR such as 0:1");
  EXPECT_EQ(parseError("0-1"),
            "invalid pair '0-1' for --pairs: expected OWNER:ACCESSOR such as 0:1");
}

TEST(ParsePairList, RefusesNonNumbersAndNegativeOrdinals) {
  EXPECT_EQ(parseError("a:1"), "invalid value 'a' for --pairs: expected an integer");
  EXPECT_EQ(parseError("0:"), "invalid value '' for --pairs: expected an integer");
  EXPECT_EQ(parseError("0: 1"), "invalid value ' 1' for --pairs: expected an integer");
  EXPECT_EQ(parseError("-1:0"), "value '-1' for --pairs is out of range [0, 1023]");
  EXPECT_EQ(parseError("0:5000"), "value '5000' for --pairs is out of range [0, 1023]");
}

TEST(ParsePairList, RefusesADevicePairedWithItself) {
  EXPECT_EQ(parseError("1:1"),
            "--pairs: 1:1 names one device twice; a pair needs two different devices");
}

TEST(ParsePairList, RefusesDuplicates) {
  EXPECT_EQ(parseError("0:1,1:0,0:1"), "--pairs lists 0:1 twice");
}

// ------------------------------------------------------------------------------ one GPU: waived

TEST(PlanPairs, OneGpuIsWaivedWithTheExactReason) {
  EXPECT_EQ(waiverOf(oneGpu()), "needs 2 or more GPUs with peer access; this machine has 1");
}

TEST(PlanPairs, NoGpuIsWaivedToo) {
  EXPECT_EQ(waiverOf(machine("", {})), "needs 2 or more GPUs with peer access; this machine has 0");
}

TEST(PlanPairs, OneGpuIsWaivedWhenTheOptionsNameItsDevice) {
  EXPECT_EQ(waiverOf(oneGpu(), {}, 0), "needs 2 or more GPUs with peer access; this machine has 1");
}

TEST(PlanPairs, ADeviceTheMachineLacksIsAUsageErrorBeforeTheOneGpuWaiver) {
  // A typo is refused (exit 1) even where the machine would be waived (exit 2).
  EXPECT_EQ(usageOf(oneGpu(), {}, 7),
            "--device 7 is out of range: this machine has 1 CUDA device (valid: 0)");
  EXPECT_EQ(usageOf(oneGpu(), {{0, 1}}),
            "--pairs names device 1 (in 0:1), but this machine has 1 CUDA device");
  EXPECT_EQ(usageOf(oneGpu(), {{3, 0}}, 0),
            "--pairs names device 3 (in 3:0), but this machine has 1 CUDA device");
}

TEST(PlanPairs, NoGpuIsWaivedWhateverTheOptionsName) {
  // Without any device there is nothing to compare a device number with.
  EXPECT_EQ(waiverOf(machine("", {}), {{0, 1}}, 3),
            "needs 2 or more GPUs with peer access; this machine has 0");
}

TEST(CheckRequestedDevices, AcceptsDevicesThatExist) {
  EXPECT_NO_THROW(p2p::checkRequestedDevices(2, {{0, 1}, {1, 0}}, 1));
  EXPECT_NO_THROW(p2p::checkRequestedDevices(1, {}, 0));
  EXPECT_NO_THROW(p2p::checkRequestedDevices(1, {}, std::nullopt));
}

TEST(CheckRequestedDevices, NamesTheOptionTheDeviceAndTheCount) {
  const auto usage = [](int count, const Pairs& requested, std::optional<long long> device) {
    return messageOf<ms::UsageError>([&] { p2p::checkRequestedDevices(count, requested, device); });
  };
  EXPECT_EQ(usage(1, {}, 99),
            "--device 99 is out of range: this machine has 1 CUDA device (valid: 0)");
  EXPECT_EQ(usage(2, {}, -1),
            "--device -1 is out of range: this machine has 2 CUDA devices (valid: 0..1)");
  EXPECT_EQ(usage(2, {{0, 1}, {0, 99}}, std::nullopt),
            "--pairs names device 99 (in 0:99), but this machine has 2 CUDA devices");
  // --device is checked first when both are wrong.
  EXPECT_EQ(usage(1, {{5, 0}}, 4),
            "--device 4 is out of range: this machine has 1 CUDA device (valid: 0)");
}

TEST(CheckRequestedDevices, ChecksNothingOnAMachineWithoutDevices) {
  EXPECT_NO_THROW(p2p::checkRequestedDevices(0, {{0, 99}}, 7));
}

// ------------------------------------------------------------------ two GPUs without access

TEST(PlanPairs, TwoGpusWithoutAccessAreWaivedNamingBothPairs) {
  EXPECT_EQ(waiverOf(twoWithoutAccess()),
            "needs 2 or more GPUs with peer access; no pair of this machine's 2 GPUs has it "
            "(cuDeviceCanAccessPeer is 0 for owner:accessor 0:1, 1:0)");
}

TEST(PlanPairs, RequestedPairsWithoutAccessAreWaivedNamingThem) {
  EXPECT_EQ(waiverOf(twoWithoutAccess(), {{1, 0}}),
            "needs 2 or more GPUs with peer access; none of the requested pairs has it "
            "(cuDeviceCanAccessPeer is 0 for owner:accessor 1:0)");
}

// ------------------------------------------------------------------------- two connected GPUs

TEST(PlanPairs, TwoConnectedGpusTestBothDirections) {
  const p2p::PairPlan plan = p2p::planPairs(twoConnected(), {}, std::nullopt);
  EXPECT_EQ(plan.tested, (Pairs{{0, 1}, {1, 0}}));
  EXPECT_TRUE(plan.lacking.empty());
  EXPECT_EQ(plan.devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.bidirectional, (Pairs{{0, 1}}));
  // One endpoint per device; not a loopback plan.
  EXPECT_EQ(plan.endpoints, (std::vector<int>{0, 1}));
  EXPECT_FALSE(plan.loopback);
}

TEST(PlanPairs, OneRequestedDirectionHasNoBidirectionalMeasurement) {
  const p2p::PairPlan plan = p2p::planPairs(twoConnected(), {{1, 0}}, std::nullopt);
  EXPECT_EQ(plan.tested, (Pairs{{1, 0}}));
  EXPECT_EQ(plan.devices, (std::vector<int>{0, 1}));
  EXPECT_TRUE(plan.bidirectional.empty());
}

TEST(PlanPairs, RequestedPairsKeepTheirOrder) {
  const p2p::PairPlan plan = p2p::planPairs(twoConnected(), {{1, 0}, {0, 1}}, std::nullopt);
  EXPECT_EQ(plan.tested, (Pairs{{1, 0}, {0, 1}}));
  // Listed once, owner < accessor, whichever direction was requested first.
  EXPECT_EQ(plan.bidirectional, (Pairs{{0, 1}}));
}

// ------------------------------------------------------------------ four GPUs, partial access

TEST(PlanPairs, FourGpusPartialAccessTestsTheIslandsAndNamesTheRest) {
  const p2p::PairPlan plan = p2p::planPairs(fourPartial(), {}, std::nullopt);
  EXPECT_EQ(plan.tested, (Pairs{{0, 1}, {1, 0}, {2, 3}, {3, 2}}));
  EXPECT_EQ(plan.lacking, (Pairs{{0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 0}, {2, 1}, {3, 0}, {3, 1}}));
  EXPECT_EQ(plan.devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(plan.bidirectional, (Pairs{{0, 1}, {2, 3}}));
}

TEST(PlanPairs, DeviceOptionKeepsThePairsInvolvingThatDevice) {
  const p2p::PairPlan plan = p2p::planPairs(fourPartial(), {}, 2);
  EXPECT_EQ(plan.tested, (Pairs{{2, 3}, {3, 2}}));
  EXPECT_EQ(plan.lacking, (Pairs{{0, 2}, {1, 2}, {2, 0}, {2, 1}}));
  EXPECT_EQ(plan.devices, (std::vector<int>{2, 3}));
  EXPECT_EQ(plan.bidirectional, (Pairs{{2, 3}}));
  EXPECT_EQ(plan.endpoints, (std::vector<int>{2, 3}));
}

TEST(PlanPairs, RequestedPairsAcrossTheIslandsAreListedAsLacking) {
  const p2p::PairPlan plan = p2p::planPairs(fourPartial(), {{0, 2}, {1, 0}}, std::nullopt);
  EXPECT_EQ(plan.tested, (Pairs{{1, 0}}));
  EXPECT_EQ(plan.lacking, (Pairs{{0, 2}}));
  EXPECT_EQ(plan.devices, (std::vector<int>{0, 1}));
}

TEST(PlanPairs, OnlyCrossIslandPairsRequestedIsWaived) {
  EXPECT_EQ(waiverOf(fourPartial(), {{0, 2}, {3, 1}}),
            "needs 2 or more GPUs with peer access; none of the requested pairs has it "
            "(cuDeviceCanAccessPeer is 0 for owner:accessor 0:2, 3:1)");
}

TEST(PlanPairs, PairsAndDeviceTogetherMustLeaveSomething) {
  EXPECT_EQ(usageOf(fourPartial(), {{0, 1}}, 3),
            "--pairs lists no pair that involves --device 3; nothing to test");
}

// ------------------------------------------------------------------------- asymmetric access

TEST(PlanPairs, AsymmetricAccessTestsOnlyTheDirectionThatExists) {
  // canAccessPeer[1][0]: device 1 reaches device 0's memory, so pair 0:1 (owner 0) works.
  const p2p::PairPlan plan = p2p::planPairs(asymmetric(), {}, std::nullopt);
  EXPECT_EQ(plan.tested, (Pairs{{0, 1}}));
  EXPECT_EQ(plan.lacking, (Pairs{{1, 0}}));
  EXPECT_EQ(plan.devices, (std::vector<int>{0, 1}));
  EXPECT_TRUE(plan.bidirectional.empty());
}

TEST(PlanPairs, AsymmetricAccessWaivesTheMissingDirectionAlone) {
  EXPECT_EQ(waiverOf(asymmetric(), {{1, 0}}),
            "needs 2 or more GPUs with peer access; none of the requested pairs has it "
            "(cuDeviceCanAccessPeer is 0 for owner:accessor 1:0)");
}

// ------------------------------------------------------------------------------ usage errors

TEST(PlanPairs, RequestedDeviceMustExist) {
  EXPECT_EQ(usageOf(twoConnected(), {{0, 2}}),
            "--pairs names device 2 (in 0:2), but this machine has 2 CUDA devices");
  EXPECT_EQ(usageOf(fourPartial(), {{7, 1}}),
            "--pairs names device 7 (in 7:1), but this machine has 4 CUDA devices");
}

TEST(PlanPairs, DeviceOptionMustExist) {
  EXPECT_EQ(usageOf(twoConnected(), {}, 5),
            "--device 5 is out of range: this machine has 2 CUDA devices (valid: 0..1)");
}

TEST(PlanPairs, MalformedTopologyIsAProgrammingError) {
  p2p::DeviceTopology broken = twoConnected();
  broken.canAccessPeer.pop_back();
  EXPECT_EQ(messageOf<std::invalid_argument>([&] { p2p::planPairs(broken, {}, std::nullopt); }),
            "device topology: the peer matrix has 1 rows for 2 devices");
  broken = twoConnected();
  broken.canAccessPeer[1].pop_back();
  EXPECT_EQ(messageOf<std::invalid_argument>([&] { p2p::planPairs(broken, {}, std::nullopt); }),
            "device topology: a peer matrix row has 1 columns for 2 devices");
}

// --------------------------------------------------------------------------------- VMM path

TEST(VmmPathUnavailable, BothDevicesSupportingVmmCanRunIt) {
  EXPECT_EQ(p2p::vmmPathUnavailable(twoConnected(), {0, 1}), std::nullopt);
}

TEST(VmmPathUnavailable, NamesTheDeviceWithoutVmm) {
  const p2p::DeviceTopology topology = machine("101", {"111", "111", "111"});
  EXPECT_EQ(p2p::vmmPathUnavailable(topology, {0, 1}).value_or(""),
            "device 1 does not support virtual memory management "
            "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
  // The owner's flag counts as much as the accessor's.
  EXPECT_EQ(p2p::vmmPathUnavailable(topology, {1, 2}).value_or(""),
            "device 1 does not support virtual memory management "
            "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
  EXPECT_EQ(p2p::vmmPathUnavailable(topology, {0, 2}), std::nullopt);
}

TEST(VmmPathUnavailable, NamesBothDevicesWhenNeitherHasVmm) {
  EXPECT_EQ(p2p::vmmPathUnavailable(machine("00", {"11", "11"}), {1, 0}).value_or(""),
            "devices 0,1 do not support virtual memory management "
            "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
}

TEST(VmmPathUnavailable, DeviceOutsideTheTopologyThrows) {
  EXPECT_THROW(p2p::vmmPathUnavailable(twoConnected(), {0, 5}), std::out_of_range);
}

// ---------------------------------------------------------------------------------- loopback

// checkOptions() refuses --pairs with --loopback.
TEST(CheckLoopbackOptions, RefusesPairsWithLoopback) {
  EXPECT_EQ(
      messageOf<ms::UsageError>([] { p2p::checkOptions("0:1", true, std::nullopt, std::nullopt); }),
      "--pairs cannot be combined with --loopback: a loopback run tests the one pair N:N "
      "of the chosen device (pick it with --device N)");
}

TEST(CheckLoopbackOptions, AcceptsEachAlone) {
  EXPECT_NO_THROW(p2p::checkOptions("", true, std::nullopt, std::nullopt));
  EXPECT_NO_THROW(p2p::checkOptions("0:1,1:0", false, std::nullopt, std::nullopt));
  EXPECT_NO_THROW(p2p::checkOptions("", false, std::nullopt, std::nullopt));
}

TEST(PlanLoopback, OneGpuTestsItsOnePairWithTwoEndpoints) {
  // The machine planPairs() waives is exactly the one --loopback is for.
  const p2p::PairPlan plan = p2p::planLoopback(oneGpu(), 0);
  EXPECT_TRUE(plan.loopback);
  EXPECT_EQ(plan.tested, (Pairs{{0, 0}}));
  EXPECT_TRUE(plan.lacking.empty());
  EXPECT_EQ(plan.devices, (std::vector<int>{0}));
  EXPECT_EQ(plan.bidirectional, (Pairs{{0, 0}}));  // two streams of one device, both ways
  EXPECT_EQ(plan.endpoints, (std::vector<int>{0, 0}));
}

TEST(PlanLoopback, UsesTheChosenDeviceOfALargerMachineWhateverItsAccess) {
  // Peer access plays no part: here no device can access another one, and device 1 has no VMM.
  const p2p::PairPlan plan = p2p::planLoopback(machine("101", {"100", "010", "001"}), 2);
  EXPECT_EQ(plan.tested, (Pairs{{2, 2}}));
  EXPECT_EQ(plan.devices, (std::vector<int>{2}));
  EXPECT_EQ(plan.endpoints, (std::vector<int>{2, 2}));
}

TEST(PlanLoopback, NoGpuIsWaived) {
  EXPECT_EQ(messageOf<ms::WaivedError>([] { p2p::planLoopback(machine("", {}), 0); }),
            "--loopback needs 1 GPU; this machine has 0");
}

TEST(PlanLoopback, DeviceMustExist) {
  EXPECT_EQ(messageOf<ms::UsageError>([] { p2p::planLoopback(twoConnected(), 2); }),
            "--device 2 is out of range: this machine has 2 CUDA devices (valid: 0..1)");
  EXPECT_EQ(messageOf<ms::UsageError>([] { p2p::planLoopback(oneGpu(), -1); }),
            "--device -1 is out of range: this machine has 1 CUDA device (valid: 0)");
}

TEST(PlanLoopback, MalformedTopologyIsAProgrammingError) {
  p2p::DeviceTopology broken = oneGpu();
  broken.canAccessPeer.clear();
  EXPECT_EQ(messageOf<std::invalid_argument>([&] { p2p::planLoopback(broken, 0); }),
            "device topology: the peer matrix has 0 rows for 1 devices");
}

// ---------------------------------------------------------------------------------- endpoints

TEST(Endpoints, OneEndpointPerDevicePlaysBothRoles) {
  const p2p::PairPlan plan = p2p::planPairs(fourPartial(), {}, 2);  // endpoints {2, 3}
  EXPECT_EQ(p2p::ownerEndpoint(plan, {2, 3}), 0u);
  EXPECT_EQ(p2p::accessorEndpoint(plan, {2, 3}), 1u);
  EXPECT_EQ(p2p::ownerEndpoint(plan, {3, 2}), 1u);
  EXPECT_EQ(p2p::accessorEndpoint(plan, {3, 2}), 0u);
  // The diagonal's copy runs on the device's one endpoint.
  EXPECT_EQ(p2p::ownerEndpoint(plan, {3, 3}), 1u);
  EXPECT_EQ(p2p::accessorEndpoint(plan, {3, 3}), 1u);
}

TEST(Endpoints, LoopbackOwnerAndAccessorAreDifferentEndpoints) {
  const p2p::PairPlan plan = p2p::planLoopback(fourPartial(), 1);  // endpoints {1, 1}
  EXPECT_EQ(p2p::ownerEndpoint(plan, {1, 1}), 0u);
  EXPECT_EQ(p2p::accessorEndpoint(plan, {1, 1}), 1u);
}

TEST(Endpoints, DeviceWithoutEndpointThrowsNamingIt) {
  const p2p::PairPlan plan = p2p::planLoopback(fourPartial(), 1);
  EXPECT_EQ(messageOf<std::invalid_argument>([&] {
              p2p::ownerEndpoint(plan, {0, 1});
            }),
            "ownerEndpoint: the plan has no endpoint on device 0 (owner of 0:1)");
  EXPECT_EQ(messageOf<std::invalid_argument>([&] {
              p2p::accessorEndpoint(plan, {1, 3});
            }),
            "accessorEndpoint: the plan has no endpoint on device 3 (accessor of 1:3)");
}

TEST(NeedsPeerAccess, OnlyAcrossDevices) {
  EXPECT_TRUE(p2p::needsPeerAccess({0, 1}));
  EXPECT_TRUE(p2p::needsPeerAccess({1, 0}));
  EXPECT_FALSE(p2p::needsPeerAccess({2, 2}));  // one context: cuCtxEnablePeerAccess refuses it
}

TEST(VmmMappingDevices, OwnerAndAccessorEachOnce) {
  EXPECT_EQ(p2p::vmmMappingDevices({0, 1}), (std::vector<int>{0, 1}));
  EXPECT_EQ(p2p::vmmMappingDevices({3, 1}), (std::vector<int>{3, 1}));
  EXPECT_EQ(p2p::vmmMappingDevices({2, 2}), (std::vector<int>{2}));
}

TEST(BuffersPerDevice, ThreeForThePathsOrTwoPerEndpoint) {
  EXPECT_EQ(p2p::buffersPerDevice(p2p::planPairs(twoConnected(), {}, std::nullopt)), 3);
  EXPECT_EQ(p2p::buffersPerDevice(p2p::planPairs(fourPartial(), {}, std::nullopt)), 3);
  EXPECT_EQ(p2p::buffersPerDevice(p2p::planLoopback(oneGpu(), 0)), 4);
  p2p::PairPlan empty;
  EXPECT_EQ(p2p::buffersPerDevice(empty), 3);
}

// ------------------------------------------------------------------------------------ options

TEST(CheckOptions, ReadsWhatTheCommandLineAsks) {
  const p2p::Request request = p2p::checkOptions("0:1,1:0", false, 1, 4096);
  EXPECT_EQ(request.pairs, (Pairs{{0, 1}, {1, 0}}));
  EXPECT_FALSE(request.loopback);
  EXPECT_EQ(request.device, 1);
  EXPECT_EQ(request.size, 4096u);
  const p2p::Request none = p2p::checkOptions("", true, std::nullopt, std::nullopt);
  EXPECT_TRUE(none.pairs.empty());
  EXPECT_TRUE(none.loopback);
  EXPECT_EQ(none.size, std::nullopt);
}

// A size no GPU could hold three buffers of is a usage error before any device is asked: it
// used to be judged against free memory only after the one-GPU waiver.
TEST(CheckOptions, RefusesASizeNoGpuHolds) {
  const auto sizeError = [](std::uint64_t size) {
    return messageOf<ms::UsageError>([&] { p2p::checkOptions("", false, std::nullopt, size); });
  };
  EXPECT_EQ(sizeError(99999999ull << 30),
            "--size 107374181326258176 (95.4 PiB) is more than this sample takes: at most 1T "
            "per buffer");
  EXPECT_EQ(sizeError(UINT64_MAX),
            "--size 18446744073709551615 (16.0 EiB) is more than this sample takes: at most 1T "
            "per buffer");
  EXPECT_EQ(sizeError(p2p::kMaxBufferBytes), "(no exception)");
  EXPECT_EQ(sizeError(p2p::kMaxBufferBytes + 4),
            "--size 1099511627780 (1.00 TiB) is more than this sample takes: at most 1T per "
            "buffer");
}

TEST(CheckOptions, RefusesASizeThatIsNotWholeFloats) {
  EXPECT_EQ(messageOf<ms::UsageError>([] { p2p::checkOptions("", false, std::nullopt, 4098); }),
            "--size 4098 is not a multiple of 4 bytes (one element)");
  EXPECT_EQ(messageOf<ms::UsageError>([] { p2p::checkOptions("", false, std::nullopt, 4); }),
            "(no exception)");
}

TEST(CheckOptions, RefusesBadPairsAndPairsWithLoopback) {
  EXPECT_EQ(messageOf<ms::UsageError>([] { p2p::checkOptions("1:1", false, std::nullopt, {}); }),
            "--pairs: 1:1 names one device twice; a pair needs two different devices");
  EXPECT_NE(messageOf<ms::UsageError>([] { p2p::checkOptions("0:1", true, std::nullopt, {}); })
                .find("--pairs cannot be combined with --loopback"),
            std::string::npos);
}
