/**
 * @file fail_nth_call.cpp
 * @brief An LD_PRELOAD library that makes the Nth call of one CUDA driver function fail, so that
 *        a GPU test can prove a sample's error path releases everything (see fail_nth_call.hpp).
 *
 * Every interposed function is defined under the name the samples link against: cuda.h is
 * included first, so its macros rename `cuMemAlloc` to `cuMemAlloc_v2` here exactly as in the
 * samples. A call that is not to fail goes to the next definition in the lookup order (libcuda),
 * found with dlsym(RTLD_NEXT) at its first call: the library also gets preloaded into the GPU test
 * launcher, which must keep running, and report WAIVED, on machines without libcuda.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fail_nth_call.hpp"

// Exported whatever the build's default visibility: the checker finds these with dlsym.
#define MEMSAMPLES_EXPORT __attribute__((visibility("default")))
#define MEMSAMPLES_STRINGIFY_EXPANDED(name) #name
// The exported symbol of a driver function: its name after cuda.h's renaming macros.
#define MEMSAMPLES_SYMBOL(name) MEMSAMPLES_STRINGIFY_EXPANDED(name)

// The functions that can be made to fail: the VMM build and free, and the calls a sample's set-up
// makes (context, module, stream, allocations, copies, launch).
#define MEMSAMPLES_INTERPOSED(X)    \
  X(cuMemAddressReserve)            \
  X(cuMemAddressFree)               \
  X(cuMemCreate)                    \
  X(cuMemMap)                       \
  X(cuMemRelease)                   \
  X(cuMemSetAccess)                 \
  X(cuMemUnmap)                     \
  X(cuMemAlloc)                     \
  X(cuMemAllocManaged)              \
  X(cuMemHostAlloc)                 \
  X(cuMemHostRegister)              \
  X(cuModuleLoadData)               \
  X(cuStreamCreate)                 \
  X(cuCtxCreate)                    \
  X(cuLaunchKernel)                 \
  X(cuMemcpyHtoDAsync)              \
  X(cuMemcpyDtoHAsync)              \
  X(cuMemImportFromShareableHandle) \
  X(cuIpcOpenMemHandle)             \
  X(cuMemPoolImportPointer)

namespace {

// `##` keeps the people's name: k_cuMemAlloc, not k_cuMemAlloc_v2.
#define MEMSAMPLES_ENUM(name) k_##name,
enum Function : int { MEMSAMPLES_INTERPOSED(MEMSAMPLES_ENUM) kFunctionCount };
#undef MEMSAMPLES_ENUM

struct Names {
  const char* person;  // as cuda.h spells it for people: cuMemAlloc
  const char* symbol;  // as the samples link it: cuMemAlloc_v2
};
#define MEMSAMPLES_NAMES(name) {#name, MEMSAMPLES_SYMBOL(name)},
constexpr Names kNames[kFunctionCount] = {MEMSAMPLES_INTERPOSED(MEMSAMPLES_NAMES)};
#undef MEMSAMPLES_NAMES

constexpr const char* kPrefix = "memsamples_fail_nth_call: ";

// What MEMSAMPLES_FAIL_CALL asks for; target < 0: nothing fails.
int target = -1;
long nth = 0;
CUresult failure = CUDA_ERROR_OUT_OF_MEMORY;
// MEMSAMPLES_FAIL_KILL_ONCE: instead of failing, the process that creates this file dies. A plain
// pointer into the environment: a std::string here might be constructed after the constructor
// function below has set it, and so emptied again.
const char* killMarker = nullptr;

// The driver may be called from several threads (the samples' streams, the registry stress test),
// so the counts are atomic; the configuration above is written once, before main.
std::atomic<bool> armed{true};
std::atomic<long> counts[kFunctionCount];
std::atomic<void*> resolved[kFunctionCount];

[[noreturn]] void refuse(const std::string& message) {
  std::fprintf(stderr, "%s%s\n", kPrefix, message.c_str());
  _exit(1);  // at load time: nothing of the program has run, so there is nothing to clean up
}

// "4" -> 4; anything but a plain decimal in [min, max] -> false.
bool parseDecimal(const char* text, long min, long max, long& value) {
  if (*text == '\0' || std::strspn(text, "-0123456789") != std::strlen(text))
    return false;
  errno = 0;
  char* end = nullptr;
  value = std::strtol(text, &end, 10);
  return errno == 0 && *end == '\0' && value >= min && value <= max;
}

std::string knownFunctions() {
  std::string list;
  for (const Names& names : kNames)
    list += std::string(list.empty() ? "" : ", ") + names.person;
  return list;
}

__attribute__((constructor)) void readConfiguration() {
  using namespace memsamples::fail_nth_call;
  const char* call = std::getenv(kCallVariable);
  const char* result = std::getenv(kResultVariable);
  if (call == nullptr) {
    if (result != nullptr)
      refuse(std::string(kResultVariable) + " is set but " + kCallVariable +
             " is not, so nothing would fail");
    return;
  }
  const std::string value = call;
  const std::string usage = std::string(kCallVariable) + "=" + value +
                            ": expected <cuFunction>:<N> with N >= 1, e.g. cuMemMap:4";
  const std::size_t colon = value.rfind(':');
  if (colon == std::string::npos || !parseDecimal(value.c_str() + colon + 1, 1, LONG_MAX, nth))
    refuse(usage);
  const std::string name = value.substr(0, colon);
  for (int i = 0; i < kFunctionCount; ++i) {
    if (name == kNames[i].person || name == kNames[i].symbol)
      target = i;
  }
  if (target < 0)
    refuse(std::string(kCallVariable) + "=" + value + ": '" + name +
           "' is not a function this library can fail; it knows " + knownFunctions());
  if (const char* marker = std::getenv(kKillOnceVariable); marker != nullptr) {
    if (*marker != '/' || result != nullptr)
      refuse(std::string(kKillOnceVariable) + "=" + marker +
             ": expected an absolute path, and no " + kResultVariable + " beside it");
    killMarker = marker;  // the environment lives as long as the process
  }
  if (result != nullptr) {
    long code = 0;
    if (!parseDecimal(result, INT_MIN, INT_MAX, code) || code == 0)
      refuse(std::string(kResultVariable) + "=" + result +
             ": expected a CUresult other than 0 (CUDA_SUCCESS), e.g. 2 for "
             "CUDA_ERROR_OUT_OF_MEMORY");
    failure = static_cast<CUresult>(code);
  }
}

// The result to return instead of calling the driver, or CUDA_SUCCESS to call it.
CUresult injected(Function function);

// The driver's own definition of @p function, looked up on first use.
void* resolve(Function function) {
  void* address = resolved[function].load(std::memory_order_acquire);
  if (address == nullptr) {
    address = dlsym(RTLD_NEXT, kNames[function].symbol);
    if (address == nullptr) {
      std::fprintf(stderr, "%s%s is not defined by any library loaded after this one (%s)\n",
                   kPrefix, kNames[function].symbol, dlerror());
    }
    resolved[function].store(address, std::memory_order_release);
  }
  return address;
}

// Calls the driver's @p function with @p args unless this call is the one to fail. @p self, the
// interposing definition itself, only gives the function's type.
template <typename... Params, typename... Args>
CUresult forward(Function function, CUresult (*self)(Params...), Args... args) {
  (void)self;
  if (const CUresult result = injected(function); result != CUDA_SUCCESS)
    return result;
  void* address = resolve(function);
  if (address == nullptr)
    return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
  CUresult (*real)(Params...) = nullptr;
  static_assert(sizeof real == sizeof address, "a function pointer must fit in a void*");
  std::memcpy(&real, &address, sizeof real);  // POSIX dlsym's documented use
  return real(args...);
}

}  // namespace

extern "C" {

// Read by the rollback checker with dlsym(RTLD_DEFAULT); written with atomic builtins because
// dlsym hands out a plain address.
MEMSAMPLES_EXPORT unsigned long long memsamples_fail_nth_call_injected = 0;
MEMSAMPLES_EXPORT unsigned long long memsamples_fail_nth_call_last_reserved = 0;

MEMSAMPLES_EXPORT void memsamples_fail_nth_call_arm(void) {
  for (std::atomic<long>& count : counts)
    count.store(0);
  armed.store(true);
}

MEMSAMPLES_EXPORT void memsamples_fail_nth_call_disarm(void) {
  armed.store(false);
}

}  // extern "C"

namespace {

CUresult injected(Function function) {
  if (!armed.load())
    return CUDA_SUCCESS;
  const long call = counts[function].fetch_add(1) + 1;
  if (function != target || call != nth)
    return CUDA_SUCCESS;
  if (killMarker != nullptr) {
    // Several processes of one test (a parent's workers) may reach this call; the one that
    // creates the marker dies, the others carry on.
    const int marker = open(killMarker, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (marker < 0)
      return CUDA_SUCCESS;
    close(marker);
    std::fprintf(stderr, "%scall %ld of %s: process %d kills itself (injected)\n", kPrefix, call,
                 kNames[function].person, static_cast<int>(getpid()));
    raise(SIGKILL);
  }
  __atomic_fetch_add(&memsamples_fail_nth_call_injected, 1ull, __ATOMIC_SEQ_CST);
  // In the test log, so that a reader sees which failure the sample's message is about.
  std::fprintf(stderr, "%scall %ld of %s returns CUresult %d (injected)\n", kPrefix, call,
               kNames[function].person, static_cast<int>(failure));
  return failure;
}

}  // namespace

// ------------------------------------------------------------------------------ the interposers

extern "C" {

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags) {
  const CUresult result =
      forward(k_cuMemAddressReserve, cuMemAddressReserve, ptr, size, alignment, addr, flags);
  if (result == CUDA_SUCCESS && ptr != nullptr)
    __atomic_store_n(&memsamples_fail_nth_call_last_reserved, *ptr, __ATOMIC_SEQ_CST);
  return result;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return forward(k_cuMemAddressFree, cuMemAddressFree, ptr, size);
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  return forward(k_cuMemCreate, cuMemCreate, handle, size, prop, flags);
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags) {
  return forward(k_cuMemMap, cuMemMap, ptr, size, offset, handle, flags);
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  return forward(k_cuMemRelease, cuMemRelease, handle);
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                size_t count) {
  return forward(k_cuMemSetAccess, cuMemSetAccess, ptr, size, desc, count);
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return forward(k_cuMemUnmap, cuMemUnmap, ptr, size);
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  return forward(k_cuMemAlloc, cuMemAlloc, dptr, bytesize);
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return forward(k_cuMemAllocManaged, cuMemAllocManaged, dptr, bytesize, flags);
}

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return forward(k_cuMemHostAlloc, cuMemHostAlloc, pp, bytesize, Flags);
}

CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return forward(k_cuMemHostRegister, cuMemHostRegister, p, bytesize, Flags);
}

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  return forward(k_cuModuleLoadData, cuModuleLoadData, module, image);
}

CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return forward(k_cuStreamCreate, cuStreamCreate, phStream, Flags);
}

CUresult CUDAAPI cuCtxCreate(CUcontext* pctx, CUctxCreateParams* ctxCreateParams,
                             unsigned int flags, CUdevice dev) {
  return forward(k_cuCtxCreate, cuCtxCreate, pctx, ctxCreateParams, flags, dev);
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void** kernelParams,
                                void** extra) {
  return forward(k_cuLaunchKernel, cuLaunchKernel, f, gridDimX, gridDimY, gridDimZ, blockDimX,
                 blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                   CUstream hStream) {
  return forward(k_cuMemcpyHtoDAsync, cuMemcpyHtoDAsync, dstDevice, srcHost, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  return forward(k_cuMemcpyDtoHAsync, cuMemcpyDtoHAsync, dstHost, srcDevice, ByteCount, hStream);
}

CUresult CUDAAPI cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle,
                                                void* osHandle,
                                                CUmemAllocationHandleType shHandleType) {
  return forward(k_cuMemImportFromShareableHandle, cuMemImportFromShareableHandle, handle, osHandle,
                 shHandleType);
}

CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return forward(k_cuIpcOpenMemHandle, cuIpcOpenMemHandle, pdptr, handle, Flags);
}

CUresult CUDAAPI cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool,
                                        CUmemPoolPtrExportData* shareData) {
  return forward(k_cuMemPoolImportPointer, cuMemPoolImportPointer, ptr_out, pool, shareData);
}

}  // extern "C"
