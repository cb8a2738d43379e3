// A stand-in libcuda.so.1 for a machine that 08_multicastReduce would run on: a driver as new as
// the toolkit (cuInit, cuDriverGetVersion and the error strings come from
// ctest/old_driver/old_libcuda.cpp, built with this toolkit's CUDA_VERSION) and two GPUs with
// multicast support, compute capability 9.0, cooperative launches and peer access to each other.
// It answers the questions the sample asks to choose its team and nothing else; every multicast
// entry point says it was reached and aborts. With NVLink multicast turned off (NCCL_NVLS_ENABLE=0), the
// sample must choose its team here and then waive without reaching any of them: at exit, the
// stand-in says how many devices were asked about multicast support (2: the team was chosen).
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kDevices = 2;

/// Counts the CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED queries and reports them at exit, on the
/// stdout the sample's own WAIVED line went to (not in a process that never asked, such as the
/// GPU test launcher, which only loads this library to see that it can).
struct MulticastQueries {
  int count = 0;
  ~MulticastQueries() {
    if (count > 0)
      std::printf("fake driver: CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED asked %d times\n", count);
  }
} multicastQueries;

[[noreturn]] void reached(const char* call) {
  std::fprintf(stderr, "fake driver: %s was called, though multicast is turned off\n", call);
  std::abort();
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (count == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *count = kDevices;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr || ordinal < 0 || ordinal >= kDevices)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (value == nullptr || device < 0 || device >= kDevices)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {  // an H200's answers
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
      *value = 1;
      ++multicastQueries.count;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *value = 1980000;
      break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
      *value = 1;
      break;
    default:
      *value = 0;
      break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int* canAccess, CUdevice device, CUdevice peer) {
  if (canAccess == nullptr || device < 0 || device >= kDevices || peer < 0 || peer >= kDevices)
    return CUDA_ERROR_INVALID_DEVICE;
  *canAccess = device != peer ? 1 : 0;  // both GPUs on one NVSwitch
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMulticastGetGranularity(size_t*, const CUmulticastObjectProp*,
                                           CUmulticastGranularity_flags) {
  reached("cuMulticastGetGranularity");
}

CUresult CUDAAPI cuMulticastCreate(CUmemGenericAllocationHandle*, const CUmulticastObjectProp*) {
  reached("cuMulticastCreate");
}

CUresult CUDAAPI cuMulticastAddDevice(CUmemGenericAllocationHandle, CUdevice) {
  reached("cuMulticastAddDevice");
}

CUresult CUDAAPI cuMulticastBindMem(CUmemGenericAllocationHandle, size_t,
                                    CUmemGenericAllocationHandle, size_t, size_t,
                                    unsigned long long) {
  reached("cuMulticastBindMem");
}

CUresult CUDAAPI cuMulticastBindAddr(CUmemGenericAllocationHandle, size_t, CUdeviceptr, size_t,
                                     unsigned long long) {
  reached("cuMulticastBindAddr");
}

}  // extern "C"
