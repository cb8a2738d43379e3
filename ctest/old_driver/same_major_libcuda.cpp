// A stand-in for the libcuda.so.1 of a driver of the toolkit's major version but an older minor
// one (NVIDIA's minor version compatibility runs the samples there): cuInit, cuDriverGetVersion
// and the error strings come from old_libcuda.cpp, built with that version, and this file adds
// the devices, each answering only the questions asked before a context exists. It lacks every
// other entry point, cuMemPrefetchBatchAsync among them, so a sample's weak import of one is null
// and requireEntryPoint() must waive naming it. The tests of ctest/CMakeLists.txt and
// 00_memoryQueryDrv run samples against it:
//   MEMSAMPLES_FAKE_COMPUTE_MODES   one compute mode per device, comma-separated: DEFAULT,
//                                   PROHIBITED or EXCLUSIVE_PROCESS (default: DEFAULT,DEFAULT)
// Every pair of devices can access each other, but cuDeviceGetP2PAttribute refuses every
// question (CUDA_ERROR_NOT_SUPPORTED), as some virtual GPUs do. cuCtxCreate refuses too: with
// CUDA_ERROR_DEVICE_UNAVAILABLE on an EXCLUSIVE_PROCESS device (another process holds it), with
// CUDA_ERROR_NOT_SUPPORTED elsewhere (this stand-in makes no contexts).
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// The compute mode of every device, from MEMSAMPLES_FAKE_COMPUTE_MODES; an unknown name stops
/// the process, so that a typo in a test cannot pass unnoticed.
std::vector<int> computeModes() {
  const char* variable = std::getenv("MEMSAMPLES_FAKE_COMPUTE_MODES");
  const std::string list = variable != nullptr ? variable : "DEFAULT,DEFAULT";
  std::vector<int> modes;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    if (name == "DEFAULT") {
      modes.push_back(CU_COMPUTEMODE_DEFAULT);
    } else if (name == "PROHIBITED") {
      modes.push_back(CU_COMPUTEMODE_PROHIBITED);
    } else if (name == "EXCLUSIVE_PROCESS") {
      modes.push_back(CU_COMPUTEMODE_EXCLUSIVE_PROCESS);
    } else {
      std::fprintf(stderr, "fake driver: MEMSAMPLES_FAKE_COMPUTE_MODES=%s: '%s' is no mode\n",
                   list.c_str(), name.c_str());
      std::abort();
    }
    start = comma + 1;
  }
  return modes;
}

int deviceCount() {
  return static_cast<int>(computeModes().size());
}

bool isDevice(CUdevice device) {
  return device >= 0 && device < deviceCount();
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (count == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *count = deviceCount();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr || !isDevice(ordinal))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (value == nullptr || !isDevice(device))
    return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
      *value = computeModes()[static_cast<std::size_t>(device)];
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *value = 1980000;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:  // what 06 asks before its contexts
      *value = 1;
      break;
    default:  // no VMM, no managed memory, no NUMA: nothing more to ask about
      *value = 0;
      break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice device) {
  if (name == nullptr || length <= 0 || !isDevice(device))
    return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<std::size_t>(length), "Stand-in GPU %d", device);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  if (bytes == nullptr || !isDevice(device))
    return CUDA_ERROR_INVALID_VALUE;
  *bytes = size_t{1} << 30;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char* busId, int length, CUdevice device) {
  if (busId == nullptr || length <= 0 || !isDevice(device))
    return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(busId, static_cast<std::size_t>(length), "0000:%02x:00.0", device + 0x40);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int* canAccess, CUdevice device, CUdevice peer) {
  if (canAccess == nullptr || !isDevice(device) || !isDevice(peer) || device == peer)
    return CUDA_ERROR_INVALID_DEVICE;
  *canAccess = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetP2PAttribute(int*, CUdevice_P2PAttribute, CUdevice, CUdevice) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuCtxCreate(CUcontext*, CUctxCreateParams*, unsigned int, CUdevice device) {
  if (!isDevice(device))
    return CUDA_ERROR_INVALID_DEVICE;
  if (computeModes()[static_cast<std::size_t>(device)] == CU_COMPUTEMODE_EXCLUSIVE_PROCESS)
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // extern "C"
