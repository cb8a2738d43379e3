// The cu* functions of perDeviceResource_measure.cpp and memsamples_check.cpp, recording what
// they were asked. cuda.h comes first so that its versioned names (cuMemGetInfo -> _v2) rename
// these definitions exactly as they rename the callers' calls.
#include <cuda.h>

#include "fake_measure_driver.hpp"

namespace fake_measure {

Driver& driver() {
  static Driver instance;
  return instance;
}

void reset(cuuint64_t threshold) {
  driver() = Driver{};
  driver().releaseThreshold = threshold;
}

}  // namespace fake_measure

using fake_measure::driver;

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_HANDLE ? "CUDA_ERROR_INVALID_HANDLE" : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_HANDLE ? "invalid resource handle" : "unknown error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  const int call = ++driver().streamSynchronizeCalls;
  driver().synchronizedStreams.push_back(stream);
  return call == driver().failStreamSynchronizeCall ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(size_t* freeBytes, size_t* totalBytes) {
  ++driver().memGetInfoCalls;
  *freeBytes = std::size_t{1} << 30;
  *totalBytes = std::size_t{2} << 30;
  return CUDA_SUCCESS;
}

namespace {

// The one pool attribute the measure file uses; any other is refused.
cuuint64_t* releaseThreshold(CUmemoryPool pool, CUmemPool_attribute attribute) {
  driver().poolsUsed.push_back(pool);
  return attribute == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD ? &driver().releaseThreshold : nullptr;
}

}  // namespace

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                       void* value) {
  cuuint64_t* threshold = releaseThreshold(pool, attribute);
  if (threshold == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *static_cast<cuuint64_t*>(value) = *threshold;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                       void* value) {
  cuuint64_t* threshold = releaseThreshold(pool, attribute);
  if (threshold == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *threshold = *static_cast<cuuint64_t*>(value);
  driver().thresholdsSet.push_back(*threshold);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  driver().poolsUsed.push_back(pool);
  driver().trimmedTo.push_back(minBytesToKeep);
  return CUDA_SUCCESS;
}

// The releases of a DeviceSetup's owners: linked (Devices owns DeviceSetups), never called (the
// tests make none).
CUresult CUDAAPI cuCtxDestroy(CUcontext) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuModuleUnload(CUmodule) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuMemFreeHost(void*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

namespace memsamples {

CUresult drainAndDestroyStream(CUstream) noexcept {
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace memsamples
