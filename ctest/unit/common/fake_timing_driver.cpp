// A fake driver for timing_test.cpp, linked instead of libcuda (a link seam): Common's
// memsamples_cuda.cpp is compiled into the test as it is, and its calls land here. A stream is a
// log entry per call; a host function queued with cuLaunchHostFunc runs on its own thread, as the
// driver runs it, and the log notes when it returns; cuStreamSynchronize waits for it.
#include "fake_timing_driver.hpp"

#include <mutex>
#include <thread>

namespace memsamples::test {

namespace {
std::mutex logMutex;
std::thread hostFunction;
}  // namespace

FakeCallPlan& timingDriver() {
  static FakeCallPlan plan;
  return plan;
}

CUresult enterTimingDriver(const char* function) {
  const std::lock_guard<std::mutex> lock(logMutex);
  return timingDriver().enter(function);
}

void finishHostFunction() {
  if (hostFunction.joinable())
    hostFunction.join();
}

}  // namespace memsamples::test

using memsamples::test::enterTimingDriver;

extern "C" {

CUresult CUDAAPI cuLaunchHostFunc(CUstream, CUhostFn fn, void* userData) {
  if (const CUresult planned = enterTimingDriver("cuLaunchHostFunc"); planned != CUDA_SUCCESS)
    return planned;
  memsamples::test::finishHostFunction();
  memsamples::test::hostFunction = std::thread([fn, userData] {
    fn(userData);
    enterTimingDriver("host function returned");
  });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream) {
  const CUresult planned = enterTimingDriver("cuStreamSynchronize");
  memsamples::test::finishHostFunction();
  return planned;
}

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int) {
  static int events = 0;
  *event = reinterpret_cast<CUevent>(static_cast<std::uintptr_t>(++events));
  return enterTimingDriver("cuEventCreate");
}

CUresult CUDAAPI cuEventRecord(CUevent, CUstream) {
  return enterTimingDriver("cuEventRecord");
}

CUresult CUDAAPI cuEventElapsedTime(float* milliseconds, CUevent, CUevent) {
  *milliseconds = 2.0f;
  return enterTimingDriver("cuEventElapsedTime");
}

CUresult CUDAAPI cuEventDestroy(CUevent) {
  return enterTimingDriver("cuEventDestroy");
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  *name = error == CUDA_ERROR_LAUNCH_FAILED ? "CUDA_ERROR_LAUNCH_FAILED" : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult, const char** text) {
  *text = "a failure the test planned";
  return CUDA_SUCCESS;
}

// cuDriverGetVersion, the last of libcuda's few strong imports (support/weak_driver.hpp), is
// fake_device_driver.cpp's; the rest of memsamples_cuda.cpp's calls are weak and never made here.

}  // extern "C"
