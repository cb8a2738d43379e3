// Common's driver half against fake devices (fake_device_driver.cpp): selectDevice() reads each
// device's compute mode, requireComputeMode() and a refused PrimaryContext waive a device a sample
// cannot use, and requireEntryPoint() waives where the driver lacks an entry point, i.e. its weak
// import is null.
#include <gtest/gtest.h>

#include "fake_device_driver.hpp"
#include "memsamples.hpp"
#include "support/devices.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
using memsamples::test::fakeDevices;
using memsamples::test::messageOf;

namespace {

/// Two fake devices: @p mode0 with 132 SMs (the faster) and @p mode1 with 80.
void twoDevices(int mode0, int mode1) {
  fakeDevices().computeModes = {mode0, mode1};
  fakeDevices().multiprocessors = {132, 80};
}

}  // namespace

TEST(SelectDevice, ReadsEachDevicesComputeMode) {
  twoDevices(CU_COMPUTEMODE_PROHIBITED, CU_COMPUTEMODE_DEFAULT);
  EXPECT_EQ(ms::deviceOrdinal(ms::selectDevice({})), 1);  // the faster one admits no context
  EXPECT_EQ(messageOf<ms::WaivedError>([] { ms::selectDevice(0); }),
            "device 0 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created");

  twoDevices(CU_COMPUTEMODE_EXCLUSIVE_PROCESS, CU_COMPUTEMODE_DEFAULT);
  EXPECT_EQ(ms::deviceOrdinal(ms::selectDevice({})), 0);
  EXPECT_EQ(ms::deviceOrdinal(ms::selectDevice({}, ms::DeviceUse::SeveralProcesses)), 1);
}

TEST(SelectDevice, NoDeviceWaives) {
  fakeDevices().computeModes = {};
  fakeDevices().multiprocessors = {};
  EXPECT_EQ(messageOf<ms::WaivedError>([] { ms::selectDevice({}); }), "no CUDA device found");
}

TEST(RequireComputeMode, WaivesOnlyWhatTheModeForbids) {
  twoDevices(CU_COMPUTEMODE_DEFAULT, CU_COMPUTEMODE_EXCLUSIVE_PROCESS);
  CUdevice device = 0;
  ASSERT_EQ(cuDeviceGet(&device, 1), CUDA_SUCCESS);
  EXPECT_NO_THROW(ms::requireComputeMode(device));
  EXPECT_EQ(messageOf<ms::WaivedError>(
                [&] { ms::requireComputeMode(device, ms::DeviceUse::SeveralProcesses); }),
            "device 1 is in compute mode EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS): one "
            "process at a time may have a context on it, and this sample needs several");

  twoDevices(CU_COMPUTEMODE_DEFAULT, CU_COMPUTEMODE_PROHIBITED);
  EXPECT_THROW(ms::requireComputeMode(device), ms::WaivedError);
}

TEST(PrimaryContext, ARetainTheComputeModeForbidsWaivesNamingTheMode) {
  twoDevices(CU_COMPUTEMODE_DEFAULT, CU_COMPUTEMODE_PROHIBITED);
  EXPECT_NO_THROW(ms::PrimaryContext(0));
  EXPECT_EQ(messageOf<ms::WaivedError>([] { ms::PrimaryContext refused(1); }),
            "device 1 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created");
  // An EXCLUSIVE_PROCESS device another process holds: the driver's error, which runSample()
  // waives in turn (runner_test).
  twoDevices(CU_COMPUTEMODE_DEFAULT, CU_COMPUTEMODE_EXCLUSIVE_PROCESS);
  try {
    ms::PrimaryContext busy(1);
    ADD_FAILURE() << "the retain was not refused";
  } catch (const ms::CudaError& error) {
    EXPECT_EQ(error.result(), CUDA_ERROR_DEVICE_UNAVAILABLE);
  }
}

TEST(RequireEntryPoint, AMissingEntryPointWaivesNamingItAndBothVersions) {
  // Neither fake defines cuMemPrefetchBatchAsync: its weak import is null here, as it is where
  // the driver lacks it.
  fakeDevices().driverVersion = 13000;
  auto* const entryPoint = &cuMemPrefetchBatchAsync;
  ASSERT_TRUE(entryPoint == nullptr);
  EXPECT_EQ(messageOf<ms::WaivedError>(
                [] { ms::requireEntryPoint(cuMemPrefetchBatchAsync, "cuMemPrefetchBatchAsync"); }),
            ms::missingEntryPointReason("cuMemPrefetchBatchAsync", 13000, CUDA_VERSION));
  EXPECT_EQ(
      ms::missingEntryPointReason("cuMemPrefetchBatchAsync", 13000, CUDA_VERSION)
          .rfind("the NVIDIA driver (CUDA 13.0) has no cuMemPrefetchBatchAsync, which this sample "
                 "(built with CUDA ",
                 0),
      0u);
}

TEST(RequireEntryPoint, APresentEntryPointPasses) {
  EXPECT_NO_THROW(ms::requireEntryPoint(cuDeviceGetCount, "cuDeviceGetCount"));
}
