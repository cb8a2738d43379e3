/**
 * @file preload_probe.cpp
 * @brief Proves that the fault-injection library was really preloaded: a program without libcuda
 *        looks up cuMemMap and calls it once.
 *
 * The loader ignores a preload it cannot open (`LD_PRELOAD=/nonexistent true` exits 0), so "the
 * program ran" proves nothing. This probe links no driver: cuMemMap can only come from the
 * preloaded library, and its first call must come back with the injected failure
 * (MEMSAMPLES_FAIL_CALL=cuMemMap:1, CUDA_ERROR_OUT_OF_MEMORY by default) and raise the library's
 * injection count. Exit 0 and "preload: cuMemMap interposed" only then; 3 with the reason
 * otherwise (not 1: that is the library's refusal of a bad MEMSAMPLES_FAIL_CALL, which must stop
 * the process before main() runs).
 */
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "fail_nth_call.hpp"

namespace {

constexpr int kNotInterposed = 3;

int refuse(const char* reason) {
  std::fprintf(stderr, "preload probe: %s\n", reason);
  return kNotInterposed;
}

}  // namespace

int main() {
  using Map = CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);
  // No libcuda here: a cuMemMap in the process is the preloaded library's.
  void* address = dlsym(RTLD_DEFAULT, "cuMemMap");
  void* count = dlsym(RTLD_DEFAULT, memsamples::fail_nth_call::kInjectedCount);
  if (address == nullptr || count == nullptr)
    return refuse("cuMemMap is not defined: the fault-injection library was not loaded");

  Map map = nullptr;
  std::memcpy(&map, &address, sizeof map);  // POSIX dlsym's documented use
  const CUresult result = map(0, 0, 0, 0, 0);
  const unsigned long long injected = *static_cast<unsigned long long*>(count);
  if (result != CUDA_ERROR_OUT_OF_MEMORY || injected != 1) {
    std::fprintf(stderr, "preload probe: cuMemMap returned %d after %llu injections\n",
                 static_cast<int>(result), injected);
    return refuse("the first cuMemMap was not the injected failure");
  }
  std::printf("preload: cuMemMap interposed, call 1 failed as asked (CUresult %d)\n",
              static_cast<int>(result));
  return 0;
}
