// The driver probe behind 03_managedAdvisePrefetch's note on the `[5]` time ("Step 5 again,
// timed", README, Going deeper), exactly as it ran on an NVIDIA H100 80GB HBM3 (driver
// 580.159.04) on 2026-12-07, in the same call as a GPU run of 02, 03, 06 and 07; not a sample and
// not built by CMake (only this comment was added). It times the two host -> GPU prefetches of
// step 5 (A and B, 64 MiB each, just rewritten by the CPU) between two events and on the host
// clock, six times with A and B read-mostly, six times without. Build and run:
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include docs/probes/prefetch_probe.cpp
//       -L/usr/local/cuda/lib64/stubs -lcuda -o /tmp/pf && /tmp/pf
// A failed call prints its name and exits 1; the process exit releases what it held.
#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_; cuGetErrorString(r_, &s_); std::printf("%s: %s\n", #x, s_); return 1; } } while (0)
int main() {
  using clk = std::chrono::steady_clock;
  CK(cuInit(0)); CUdevice dev; CK(cuDeviceGet(&dev, 0)); CUcontext ctx; CK(cuCtxCreate(&ctx, nullptr, 0, dev));
  const size_t bytes = 64ull << 20;
  CUdeviceptr a, b; CK(cuMemAllocManaged(&a, bytes, CU_MEM_ATTACH_GLOBAL)); CK(cuMemAllocManaged(&b, bytes, CU_MEM_ATTACH_GLOBAL));
  CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e0, e1; CK(cuEventCreate(&e0, 0)); CK(cuEventCreate(&e1, 0));
  CUmemLocation gpu = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, host = {CU_MEM_LOCATION_TYPE_HOST, 0};
  for (int readMostly = 1; readMostly >= 0; --readMostly) {
    for (CUdeviceptr p : {a, b})
      CK(cuMemAdvise(p, bytes, readMostly ? CU_MEM_ADVISE_SET_READ_MOSTLY : CU_MEM_ADVISE_UNSET_READ_MOSTLY, gpu));
    for (int rep = 0; rep < 6; ++rep) {
      if (!readMostly) { CK(cuMemPrefetchAsync(a, bytes, host, 0, s)); CK(cuMemPrefetchAsync(b, bytes, host, 0, s)); CK(cuStreamSynchronize(s)); }
      std::memset((void*)a, rep + 1, bytes); std::memset((void*)b, rep + 2, bytes);
      CK(cuStreamSynchronize(s));
      auto t0 = clk::now(); CK(cuEventRecord(e0, s));
      CK(cuMemPrefetchAsync(a, bytes, gpu, 0, s)); CK(cuMemPrefetchAsync(b, bytes, gpu, 0, s));
      auto t1 = clk::now(); CK(cuEventRecord(e1, s)); CK(cuStreamSynchronize(s)); auto t2 = clk::now();
      float ms = 0; CK(cuEventElapsedTime(&ms, e0, e1));
      std::printf("readMostly=%d rep %d: events %.2f ms; host inside the 2 prefetch calls %.2f ms; host total %.2f ms (128 MiB: %.1f GB/s by events)\n",
                  readMostly, rep, ms, std::chrono::duration<double, std::milli>(t1 - t0).count(),
                  std::chrono::duration<double, std::milli>(t2 - t0).count(), 2.0 * bytes / (ms * 1e6));
    }
  }
  cuMemFree(a); cuMemFree(b); cuStreamDestroy(s); cuCtxDestroy(ctx);
  return 0;
}
