/**
 * @file query_test.cpp
 * @brief queryDeviceTopology() and queryPeerLinks() (Common's, shared with 05 and 06),
 *        stripedGranularity() and stripedGranularities() against fake machines: one GPU, GPUs
 *        without peer access, a peer without VMM, devices with different granularities, a driver
 *        that refuses a link attribute.
 */
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "run_plan.hpp"
#include "fake_cuda_driver.hpp"
#include "striped_test_support.hpp"
#include "striped_vmm.hpp"

namespace vmm = memsamples::vmm;
using namespace striped_test;

namespace {

using QueryDeviceTopology = FakeDriverTest;
using QueryPeerLinks = FakeDriverTest;
using StripedGranularity = FakeDriverTest;
using StripedGranularities = FakeDriverTest;

using Matrix = std::vector<std::vector<bool>>;

fake::Machine machineOf(std::size_t devices, std::vector<std::string> peers = {}) {
  return {std::vector<fake::Device>(devices), std::move(peers)};
}

}  // namespace

TEST_F(QueryDeviceTopology, OneGpuReachesItselfWithoutAskingThePeerQuery) {
  const vmm::DeviceTopology topology = vmm::queryDeviceTopology();
  EXPECT_EQ(topology.vmmSupported, std::vector<bool>{true});
  EXPECT_EQ(topology.canAccessPeer, (Matrix{{true}}));
  EXPECT_EQ(fake::callCount("cuDeviceCanAccessPeer"), 0);
  EXPECT_EQ(vmm::discoverBackingDevices(0, topology), std::vector<int>{0});
}

TEST_F(QueryDeviceTopology, TwoGpusWithoutPeerAccessStayApart) {
  fake::reset(machineOf(2, {"10", "01"}));
  const vmm::DeviceTopology topology = vmm::queryDeviceTopology();
  EXPECT_EQ(topology.vmmSupported, (std::vector<bool>{true, true}));
  EXPECT_EQ(topology.canAccessPeer, (Matrix{{true, false}, {false, true}}));
  EXPECT_EQ(vmm::discoverBackingDevices(1, topology), std::vector<int>{1});
}

TEST_F(QueryDeviceTopology, APeerWithoutVmmIsReachableButDoesNotBackStripes) {
  fake::Machine machine = machineOf(3);
  machine.devices[1].vmm = false;
  fake::reset(machine);
  const vmm::DeviceTopology topology = vmm::queryDeviceTopology();
  EXPECT_EQ(topology.vmmSupported, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(topology.canAccessPeer, (Matrix(3, std::vector<bool>(3, true))));
  EXPECT_EQ(vmm::discoverBackingDevices(0, topology), (std::vector<int>{0, 2}));
}

TEST_F(QueryDeviceTopology, KeepsAnAsymmetricMatrixAsTheDriverGivesIt) {
  // 0 reaches 2 but not the reverse; 1 reaches 0 but not the reverse.
  fake::reset(machineOf(3, {"101", "110", "001"}));
  const vmm::DeviceTopology topology = vmm::queryDeviceTopology();
  EXPECT_EQ(topology.canAccessPeer,
            (Matrix{{true, false, true}, {true, true, false}, {false, false, true}}));
  EXPECT_EQ(fake::callCount("cuDeviceCanAccessPeer"), 6);  // every ordered pair of two devices
}

TEST_F(QueryDeviceTopology, AFailedQueryNamesTheCall) {
  fake::reset(machineOf(2));
  fake::failCall("cuDeviceGetAttribute", 2, CUDA_ERROR_NOT_INITIALIZED);
  const memsamples::CudaError error = cudaErrorOf([] { vmm::queryDeviceTopology(); });
  EXPECT_EQ(error.result(), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(withoutLine(error.what()),
            "cuDeviceGetAttribute failed at peer_topology.cpp:N: CUDA_ERROR_NOT_INITIALIZED "
            "(initialization error)");
}

TEST_F(QueryPeerLinks, AsksEveryOrderedPairAccessorFirstAndSkipsTheDiagonal) {
  // 1 reaches 0's memory, 0 does not reach 1's.
  fake::reset(machineOf(2, {"10", "11"}));
  const memsamples::LinkMatrix links = memsamples::queryPeerLinks(2);
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(fake::callCount("cuDeviceGetP2PAttribute"), 6);  // 3 attributes x 2 ordered pairs
  EXPECT_TRUE(links[0][1].accessSupported);                  // owner 0, accessor 1
  EXPECT_FALSE(links[1][0].accessSupported);
  EXPECT_TRUE(links[0][1].nativeAtomics);
  EXPECT_EQ(links[0][1].performanceRank, 0);
  EXPECT_EQ(links[0][1].failure, "");
  EXPECT_EQ(links[0][0].failure, "");  // never asked
}

TEST_F(QueryPeerLinks, ARefusedAttributeIsKeptNotThrown) {
  fake::reset(machineOf(2));
  fake::failCall("cuDeviceGetP2PAttribute", 1, CUDA_ERROR_NOT_SUPPORTED);
  const memsamples::LinkMatrix links = memsamples::queryPeerLinks(2);
  EXPECT_EQ(links[0][1].failure,
            "cuDeviceGetP2PAttribute(PERFORMANCE_RANK): " +
                memsamples::describeResult(CUDA_ERROR_NOT_SUPPORTED));
  EXPECT_EQ(links[1][0].failure, "");  // the other direction still answered
  EXPECT_TRUE(links[1][0].accessSupported);
}

TEST_F(StripedGranularity, IsTheMinimumGranularityOfOneGpu) {
  // The fake's recommended granularity is larger, so asking for it would show here.
  EXPECT_EQ(vmm::stripedGranularity({0}, {0}), fake::kDefaultGranularity);
  EXPECT_EQ(fake::callCount("cuMemGetAllocationGranularity"), 2);  // once as backing, once mapping
}

TEST_F(StripedGranularity, TakesTheLargestOfTheBackingAndMappingDevices) {
  fake::reset(
      {{fake::Device{true, 2 * MiB}, fake::Device{true, 8 * MiB}, fake::Device{true, 4 * MiB}},
       {}});
  EXPECT_EQ(vmm::stripedGranularity({0, 2}, {0}), 4 * MiB);
  // A device that only maps the range counts too: its mappings must be aligned for it.
  EXPECT_EQ(vmm::stripedGranularity({0}, {0, 1}), 8 * MiB);
  EXPECT_EQ(vmm::stripedGranularity({2, 0}, {2}), 4 * MiB);
}

TEST_F(StripedGranularity, ADeviceWithoutVmmIsAnErrorNamingTheCall) {
  fake::Machine machine = machineOf(2);
  machine.devices[1].vmm = false;
  fake::reset(machine);
  const memsamples::CudaError error = cudaErrorOf([] { vmm::stripedGranularity({0, 1}, {0}); });
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemGetAllocationGranularity failed at run_plan.cpp:N: CUDA_ERROR_NOT_SUPPORTED "
            "(operation not supported)");
}

TEST_F(StripedGranularities, AsksEachDeviceForBothAndTakesTheLargestOfEach) {
  fake::reset({{fake::Device{true, 2 * MiB, 32 * MiB}, fake::Device{true, 8 * MiB, 16 * MiB},
                fake::Device{true, 4 * MiB, 64 * MiB}},
               {}});
  const vmm::Granularities backed = vmm::stripedGranularities({0, 2}, {0});
  EXPECT_EQ(backed.minimum, 4 * MiB);
  EXPECT_EQ(backed.recommended, 64 * MiB);
  // Each device is asked once per kind and per role.
  EXPECT_EQ(fake::callCount("cuMemGetAllocationGranularity"), 6);
  const vmm::Granularities mapped = vmm::stripedGranularities({0}, {0, 1});
  EXPECT_EQ(mapped.minimum, 8 * MiB);
  EXPECT_EQ(mapped.recommended, 32 * MiB);
}

TEST_F(StripedGranularities, ADeviceWithoutVmmIsAnErrorNamingTheCall) {
  fake::Machine machine = machineOf(2);
  machine.devices[1].vmm = false;
  fake::reset(machine);
  const memsamples::CudaError error = cudaErrorOf([] { vmm::stripedGranularities({0}, {0, 1}); });
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemGetAllocationGranularity failed at run_plan.cpp:N: CUDA_ERROR_NOT_SUPPORTED "
            "(operation not supported)");
}
