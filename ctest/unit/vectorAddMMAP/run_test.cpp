/**
 * @file run_test.cpp
 * @brief The lesson's two planning calls of 02_vectorAddMMAP against the fake driver:
 *        chooseDevices() (what it refuses, waives and prints) and sizeRun(options, devices,
 *        report) (each device's free memory asked in a context of that device).
 */
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "fake_cuda_driver.hpp"
#include "memsamples.hpp"
#include "printed_text.hpp"
#include "run_plan.hpp"
#include "striped_test_support.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
namespace vmm = memsamples::vmm;
using memsamples::test::cellsOf;
using memsamples::test::Grid;
using memsamples::test::messageOf;
using namespace striped_test;

namespace {

using ChooseDevices = FakeDriverTest;
using SizeRunOnTheDriver = FakeDriverTest;

// A report whose human text can be read back.
struct Captured {
  std::ostringstream text;
  ms::Report report{&text};
};

}  // namespace

TEST_F(ChooseDevices, OneGpuBacksAndMapsItsOwnRangeAndSaysSo) {
  Captured captured;
  const vmm::RunDevices devices = vmm::chooseDevices(vmm::RunOptions{}, captured.report);
  EXPECT_EQ(devices.ordinal, 0);
  EXPECT_EQ(devices.roles.backing, std::vector<int>{0});
  EXPECT_EQ(devices.roles.mapping, std::vector<int>{0});
  EXPECT_EQ(devices.stripes, 1);
  EXPECT_EQ(devices.granularities.minimum, fake::kDefaultGranularity);
  EXPECT_EQ(devices.granularities.recommended, fake::kDefaultRecommendedGranularity);
  // Two lines: the device, then the roles, stripes and granularities, each field in a cell.
  EXPECT_EQ(cellsOf(captured.text.str()),
            (Grid{{"Device 0: Fake GPU 0"},
                  {"Backing devices: 0", "mapping devices: 0", "stripes: 1",
                   "granularity: 2.00 MiB minimum, 32.0 MiB recommended"}}));
  const std::string json = captured.report.json().dump();
  EXPECT_TRUE(contains(json, "\"backingDevices\": [0]")) << json;
}

TEST_F(ChooseDevices, TwoPeersBackEightStripesAndTheGivenDeviceRunsTheKernel) {
  fake::reset({{fake::Device{}, fake::Device{}}, {}});
  vmm::RunOptions options;
  options.common.device = 1;
  options.stripes = 8;
  Captured ignored;
  const vmm::RunDevices devices = vmm::chooseDevices(options, ignored.report);
  EXPECT_EQ(devices.ordinal, 1);
  EXPECT_EQ(devices.roles.backing, (std::vector<int>{1, 0}));
  EXPECT_EQ(devices.stripes, 8);
}

TEST_F(ChooseDevices, AListedDeviceTheMachineLacksIsAUsageErrorEvenWhereTheSampleWouldBeWaived) {
  fake::Machine machine;
  machine.devices[0].vmm = false;
  fake::reset(machine);
  vmm::RunOptions options;
  options.backing = {0, 5};
  Captured ignored;
  EXPECT_EQ(messageOf<ms::UsageError>([&] { vmm::chooseDevices(options, ignored.report); }),
            "--backing lists device 5, but this machine has 1 CUDA device (valid: 0)");
}

TEST_F(ChooseDevices, ADeviceWithoutVmmWaivesTheSample) {
  fake::Machine machine;
  machine.devices[0].vmm = false;
  fake::reset(machine);
  Captured ignored;
  EXPECT_EQ(messageOf<ms::WaivedError>([&] {
              vmm::chooseDevices(vmm::RunOptions{}, ignored.report);
            }),
            "device 0 does not support virtual memory management "
            "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
}

TEST_F(SizeRunOnTheDriver, AsksEachDeviceInItsOwnContextAndGivesThePeersContextBack) {
  // Device 1 has 1 GiB free: the same refusal as sizeRun() on those numbers, so the free memory
  // of each device was read with that device's context current.
  fake::Machine machine{{fake::Device{}, fake::Device{}}, {}};
  machine.devices[1].freeBytes = 1ull << 30;
  fake::reset(machine);
  vmm::RunOptions options;
  options.stripes = 8;
  options.sizeBytes = 64 * MiB;
  Captured ignored;
  const vmm::RunDevices devices = vmm::chooseDevices(options, ignored.report);
  fake::makeCurrent(0);  // the lesson's own context
  const vmm::RunSize size = vmm::sizeRun(options, devices, ignored.report);
  EXPECT_EQ(size.bytes, 64 * MiB);
  ASSERT_EQ(size.needs.size(), 2u);
  EXPECT_EQ(size.needs[0].freeBytes, machine.devices[0].freeBytes);
  EXPECT_EQ(size.needs[1].freeBytes, 1ull << 30);
  EXPECT_EQ(fake::callCount("cuDevicePrimaryCtxRetain"), 1);  // the peer's only
  EXPECT_EQ(fake::retainedPrimaryContexts(), 0);
  EXPECT_EQ(fake::currentDevices(), std::vector<int>{0});

  options.sizeBytes = 1ull << 30;
  const vmm::RunShape shape{0, 8, {0, 1}, devices.granularities, vmm::kCostStripeCounts};
  EXPECT_EQ(messageOf<ms::UsageError>([&] {
              vmm::sizeRun(options, devices, ignored.report);
            }),
            messageOf<ms::UsageError>([&] {
              vmm::sizeRun(options.sizeBytes, vmm::kDefaultBytes, shape,
                           {{0, machine.devices[0].freeBytes}, {1, 1ull << 30}});
            }));
  EXPECT_EQ(fake::retainedPrimaryContexts(), 0);
  EXPECT_EQ(fake::currentDevices(), std::vector<int>{0});
}

TEST_F(SizeRunOnTheDriver, PrintsTheSizeTheStripesAndTheGranularityUsed) {
  vmm::RunOptions options;
  options.sizeBytes = 4100;
  options.stripes = 3;
  Captured ignored;
  const vmm::RunDevices devices = vmm::chooseDevices(options, ignored.report);
  fake::makeCurrent(0);
  Captured captured;
  const vmm::RunSize size = vmm::sizeRun(options, devices, captured.report);
  EXPECT_EQ(size.layout.roundedBytes, 6 * MiB);
  // One line, with each number the plan chose and the granularity it used.
  const std::string text = captured.text.str();
  ASSERT_EQ(cellsOf(text).size(), 1u) << text;
  for (const char* fact :
       {"1025 floats (4.00 KiB) each", "6.00 MiB mapped in 3 stripes of 2.00 MiB",
        "(minimum granularity"}) {
    EXPECT_TRUE(contains(text, fact)) << fact << " is not in: " << text;
  }
}
