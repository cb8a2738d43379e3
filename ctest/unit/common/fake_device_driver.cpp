// A fake driver of devices and versions for device_selection_test.cpp, linked instead of libcuda
// (a link seam) together with fake_timing_driver.cpp: Common's memsamples_cuda.cpp reads devices,
// compute modes and the driver version from it, and retains primary contexts. An entry point
// neither fake defines stays a null weak import (support/weak_driver.hpp), as on a driver that
// lacks it.
#include "fake_device_driver.hpp"

#include <cuda.h>

namespace memsamples::test {

FakeDevices& fakeDevices() {
  static FakeDevices devices;
  return devices;
}

}  // namespace memsamples::test

using memsamples::test::FakeDevices;
using memsamples::test::fakeDevices;

extern "C" {

// checkDriverInit's and requireEntryPoint's query; one of libcuda's few strong imports.
CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = fakeDevices().driverVersion;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = static_cast<int>(fakeDevices().computeModes.size());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= static_cast<int>(fakeDevices().computeModes.size()))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;  // as opaque as the real ones, to Common
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  const FakeDevices& devices = fakeDevices();
  if (device < 0 || device >= static_cast<int>(devices.computeModes.size()))
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
      *value = devices.computeModes[device];
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = devices.multiprocessors[device];
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *value = 1980000;
      break;
    default:
      *value = 0;
      break;
  }
  return CUDA_SUCCESS;
}

// A primary context of a device whose mode forbids it is refused as the driver refuses it.
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  const FakeDevices& devices = fakeDevices();
  if (device < 0 || device >= static_cast<int>(devices.computeModes.size()))
    return CUDA_ERROR_INVALID_DEVICE;
  if (devices.computeModes[device] != CU_COMPUTEMODE_DEFAULT)
    return CUDA_ERROR_DEVICE_UNAVAILABLE;  // PROHIBITED, or EXCLUSIVE_PROCESS and held elsewhere
  *context = reinterpret_cast<CUcontext>(&fakeDevices());  // any address will do: never used
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
  return CUDA_SUCCESS;
}

}  // extern "C"
