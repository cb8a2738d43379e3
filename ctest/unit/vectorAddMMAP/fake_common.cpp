/**
 * @file fake_common.cpp
 * @brief Stand-ins for the part of Common's driver half (Common/memsamples_cuda.cpp) that
 *        run_plan.cpp calls, written over the fake driver's calls as Common writes them over
 *        libcuda's. The real file also needs events, streams and launches, which the fake driver
 *        of these tests does not have, so it cannot be linked here.
 */
#include <cuda.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "fake_cuda_driver.hpp"
#include "memsamples.hpp"
#include "support/devices.hpp"

namespace memsamples {

// The fake's devices are all alike, so the "fastest" is the first one.
CUdevice selectDevice(const std::optional<long long>& requested, DeviceUse) {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  CUdevice device = 0;
  check(cuDeviceGet(&device, requested ? validateDeviceOrdinal(*requested, count) : 0),
        "cuDeviceGet");
  return device;
}

int deviceOrdinal(CUdevice device) {
  const int ordinal = fake::ordinalOfDevice(device);
  if (ordinal < 0)
    throw std::invalid_argument("deviceOrdinal: not a device of this machine");
  return ordinal;
}

std::string deviceName(CUdevice device) {
  return "Fake GPU " + std::to_string(deviceOrdinal(device));
}

PrimaryContext::PrimaryContext(CUdevice device) {
  check(cuDevicePrimaryCtxRetain(&context_, device), "cuDevicePrimaryCtxRetain");
  device_ = device;
}

void PrimaryContext::reset() noexcept {
  if (device_)
    (void)cuDevicePrimaryCtxRelease(*device_);
  device_.reset();
  context_ = nullptr;
}

ScopedContext::ScopedContext(CUcontext context) {
  check(cuCtxPushCurrent(context), "cuCtxPushCurrent");
}

ScopedContext::~ScopedContext() {
  CUcontext popped = nullptr;
  (void)cuCtxPopCurrent(&popped);
}

}  // namespace memsamples
