// The driver probe behind 10_streamOrderedPool's "What a pair costs" table, exactly as it ran on
// the H200 of 2026-12-07 (in the same call as the validation run of commit 61c70b6); not a sample
// and not built by CMake. It times cuMemAllocAsync + cuMemFreeAsync pairs of 16 MiB at release
// threshold UINT64_MAX (medians of 2,000 pairs) for four loop shapes, on the device's default pool
// and on an explicit pool, three rounds, then with an over-budget notification registered, and
// cuMemAlloc + cuMemFree of the same size (median of 500). Build and run:
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include docs/probes/pool_pair_probe.cpp
//       -L/usr/local/cuda/lib64/stubs -lcuda -o /tmp/pp && /tmp/pp
// A failed call prints its name and exits 1; the process exit releases what it held.
#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { std::printf("%s failed %d\n", #x, r); std::exit(1);} } while (0)
using Clock = std::chrono::steady_clock;
static double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
static const size_t kBytes = 16u << 20;
// per-call timed, `perStep` pairs then sync
static double perCall(CUstream s, int pairs, int perStep, bool sync) {
  std::vector<double> t;
  for (int i = 0; i < pairs; ++i) {
    CUdeviceptr p;
    auto a = Clock::now();
    CK(cuMemAllocAsync(&p, kBytes, s));
    auto b = Clock::now();
    auto c = Clock::now();
    CK(cuMemFreeAsync(p, s));
    auto d = Clock::now();
    t.push_back(us(a, b) + us(c, d));
    if (sync && (i + 1) % perStep == 0) CK(cuStreamSynchronize(s));
  }
  CK(cuStreamSynchronize(s));
  return median(t);
}
static double wholeLoop(CUstream s, int pairs) {
  auto a = Clock::now();
  for (int i = 0; i < pairs; ++i) { CUdeviceptr p; CK(cuMemAllocAsync(&p, kBytes, s)); CK(cuMemFreeAsync(p, s)); }
  auto b = Clock::now();
  CK(cuStreamSynchronize(s));
  return us(a, b) / pairs;
}
static double allocFree(int pairs) {
  std::vector<double> t;
  for (int i = 0; i < pairs; ++i) {
    CUdeviceptr p;
    auto a = Clock::now(); CK(cuMemAlloc(&p, kBytes)); auto b = Clock::now();
    auto c = Clock::now(); CK(cuMemFree(p)); auto d = Clock::now();
    t.push_back(us(a, b) + us(c, d));
  }
  return median(t);
}
static void onNote(CUasyncNotificationInfo*, void*, CUasyncCallbackHandle) {}
int main() {
  CK(cuInit(0)); CUdevice dev; CK(cuDeviceGet(&dev, 0)); CUcontext ctx; CK(cuCtxCreate(&ctx, nullptr, 0, dev));
  CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUmemoryPool def; CK(cuDeviceGetDefaultMemPool(&def, dev));
  cuuint64_t mx = UINT64_MAX; CK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &mx));
  CUmemPoolProps props = {}; props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED; props.location.type = CU_MEM_LOCATION_TYPE_DEVICE; props.location.id = 0;
  CUmemoryPool pool; CK(cuMemPoolCreate(&pool, &props)); CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &mx));
  for (int round = 0; round < 3; ++round) {
    CK(cuDeviceSetMemPool(dev, def));
    std::printf("round %d default pool: perCall sync/1 %.2f sync/8 %.2f nosync %.2f wholeLoop %.2f | cuMemAlloc+Free %.2f\n", round,
      perCall(s, 2000, 1, true), perCall(s, 2000, 8, true), perCall(s, 2000, 8, false), wholeLoop(s, 2000), allocFree(500));
    CK(cuDeviceSetMemPool(dev, pool));
    std::printf("round %d explicit pool: perCall sync/1 %.2f sync/8 %.2f nosync %.2f wholeLoop %.2f\n", round,
      perCall(s, 2000, 1, true), perCall(s, 2000, 8, true), perCall(s, 2000, 8, false), wholeLoop(s, 2000));
  }
  CUasyncCallbackHandle h; CUresult r = cuDeviceRegisterAsyncNotification(dev, onNote, nullptr, &h);
  std::printf("registered notification: %d\n", r);
  for (int round = 0; round < 2; ++round)
    std::printf("with notification, explicit pool: sync/1 %.2f sync/8 %.2f nosync %.2f wholeLoop %.2f | cuMemAlloc+Free %.2f\n",
      perCall(s, 2000, 1, true), perCall(s, 2000, 8, true), perCall(s, 2000, 8, false), wholeLoop(s, 2000), allocFree(500));
  if (r == CUDA_SUCCESS) CK(cuDeviceUnregisterAsyncNotification(dev, h));
  CK(cuDeviceSetMemPool(dev, def)); CK(cuMemPoolDestroy(pool)); CK(cuStreamDestroy(s)); CK(cuCtxDestroy(ctx));
  return 0;
}
