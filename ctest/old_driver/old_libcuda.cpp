// A stand-in for the libcuda.so.1 of an NVIDIA driver of an older CUDA major version than the
// toolkit's: it reports CUDA MEMSAMPLES_OLD_DRIVER_VERSION and exports only what every driver has
// had for years, so none of the entry points that CUDA 13's cuda.h binds to (cuCtxCreate_v4,
// cuEventElapsedTime_v2, cuMemPrefetchBatchAsync...) exists. A sample run against it must start,
// see the old version and waive before it needs anything else. Two stand-ins build these four
// functions in too, with a version of the toolkit's major version: same_major_libcuda.cpp (fake
// devices, no newer entry points) and 08_multicastReduce's two multicast GPUs (CUDA_VERSION).
#include <cuda.h>

extern "C" {

CUresult CUDAAPI cuInit(unsigned int flags) {
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = MEMSAMPLES_OLD_DRIVER_VERSION;
  return CUDA_SUCCESS;
}

// The samples import these two strongly, so the loader needs them; the waiver never asks them
// anything. They answer as a real driver does for a value it does not know.
CUresult CUDAAPI cuGetErrorName(CUresult, const char** name) {
  if (name != nullptr)
    *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult, const char** text) {
  if (text != nullptr)
    *text = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
