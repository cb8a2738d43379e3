// The cu* functions that pool_attributes.cpp and memsamples_check.cpp call, as a fake pool that
// records what it was asked. cuda.h comes first so that its versioned names rename these
// definitions exactly as they rename the callers' calls.
#include <cuda.h>

#include <cstdint>
#include <map>
#include <vector>

#include "fake_pool_driver.hpp"

namespace fake_pool {

Driver& driver() {
  static Driver instance;
  return instance;
}

}  // namespace fake_pool

using fake_pool::driver;

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_VALUE   ? "CUDA_ERROR_INVALID_VALUE"
          : error == CUDA_ERROR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED"
                                              : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_VALUE   ? "invalid argument"
          : error == CUDA_ERROR_NOT_SUPPORTED ? "operation not supported"
                                              : "unknown error";
  return CUDA_SUCCESS;
}

// Step 2's over-budget watch: one registration at a time, delivered by fake_pool::notify().
CUresult CUDAAPI cuDeviceRegisterAsyncNotification(CUdevice device, CUasyncCallback callback,
                                                   void* userData,
                                                   CUasyncCallbackHandle* handle) {
  fake_pool::Driver& fake = driver();
  fake.calls.push_back("cuDeviceRegisterAsyncNotification");
  if (fake.registerAnswer != CUDA_SUCCESS) {
    *handle = reinterpret_cast<CUasyncCallbackHandle>(0xBAD);  // junk, as a failed call may leave
    return fake.registerAnswer;
  }
  fake.callback = callback;
  fake.userData = userData;
  fake.registeredDevice = device;
  *handle = fake.handle;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceUnregisterAsyncNotification(CUdevice device,
                                                     CUasyncCallbackHandle handle) {
  fake_pool::Driver& fake = driver();
  fake.calls.push_back("cuDeviceUnregisterAsyncNotification");
  fake.unregistered.push_back({device, handle});
  if (fake.unregisterAnswer != CUDA_SUCCESS)
    return fake.unregisterAnswer;
  if (handle == fake.handle)
    fake.callback = nullptr;
  return CUDA_SUCCESS;
}

void fake_pool::notify(CUasyncNotificationInfo info) {
  const Driver& fake = driver();
  if (fake.callback != nullptr)
    fake.callback(&info, fake.userData, fake.handle);
}

namespace {

bool isCounter(CUmemPool_attribute attribute) {
  return attribute == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD ||
         attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ||
         attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH ||
         attribute == CU_MEMPOOL_ATTR_USED_MEM_CURRENT ||
         attribute == CU_MEMPOOL_ATTR_USED_MEM_HIGH;
}

}  // namespace

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                       void* value) {
  fake_pool::Driver& fake = driver();
  fake.gets.push_back({pool, attribute});
  if (pool != fake.pool || attribute == fake.failAttribute)
    return CUDA_ERROR_INVALID_VALUE;
  // The driver writes exactly the attribute's type: 8 bytes for counters, 4 for rules.
  if (isCounter(attribute))
    *static_cast<cuuint64_t*>(value) = fake.counters[attribute];
  else
    *static_cast<int*>(value) = fake.rules[attribute];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                       void* value) {
  fake_pool::Driver& fake = driver();
  fake.sets.push_back({pool, attribute});
  if (pool != fake.pool || attribute == fake.failAttribute)
    return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ||
      attribute == CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    return CUDA_ERROR_INVALID_VALUE;  // read-only
  if (attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH ||
      attribute == CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
    // Only 0 may be written; it resets the mark to the current value.
    if (*static_cast<cuuint64_t*>(value) != 0)
      return CUDA_ERROR_INVALID_VALUE;
    const CUmemPool_attribute current = attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
                                            ? CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
                                            : CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
    fake.counters[attribute] = fake.counters[current];
    return CUDA_SUCCESS;
  }
  if (isCounter(attribute))
    fake.counters[attribute] = *static_cast<cuuint64_t*>(value);
  else
    fake.rules[attribute] = *static_cast<int*>(value);
  return CUDA_SUCCESS;
}

// --- Step 8: pool creation, access, one block's use -------------------------------------------

namespace fake_pool {

bool called(const std::string& name) {
  for (const std::string& call : driver().calls)
    if (call == name)
      return true;
  return false;
}

}  // namespace fake_pool

namespace {

/// The pools step 8 makes: any handle but the attribute tests' pool.
CUmemoryPool madePool() { return reinterpret_cast<CUmemoryPool>(0x3000); }

}  // namespace

CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool* pool, CUmemLocation*, CUmemAllocationType) {
  driver().calls.push_back("cuMemGetDefaultMemPool");
  *pool = reinterpret_cast<CUmemoryPool>(0x4000);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  driver().calls.push_back("cuDeviceGetAttribute");
  *value = attribute == CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED
               ? driver().hostPoolsSupported
               : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps*) {
  driver().calls.push_back("cuMemPoolCreate");
  if (driver().createAnswer != CUDA_SUCCESS)
    return driver().createAnswer;
  ++driver().poolsCreated;
  *pool = madePool();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool) {
  driver().calls.push_back("cuMemPoolDestroy");
  ++driver().poolsDestroyed;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool, const CUmemAccessDesc*, size_t) {
  driver().calls.push_back("cuMemPoolSetAccess");
  return driver().accessAnswer;
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* pointer, size_t bytes, CUmemoryPool,
                                         CUstream) {
  driver().calls.push_back("cuMemAllocFromPoolAsync");
  driver().memory.assign(bytes / sizeof(std::uint32_t), 0);
  *pointer = reinterpret_cast<CUdeviceptr>(driver().memory.data());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr pointer, unsigned int value, size_t count,
                                  CUstream) {
  driver().calls.push_back("cuMemsetD32Async");
  auto* words = reinterpret_cast<std::uint32_t*>(pointer);
  for (size_t i = driver().wrongWords; i < count; ++i)
    words[i] = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream) {
  driver().calls.push_back("cuStreamSynchronize");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr, CUstream) {
  driver().calls.push_back("cuMemFreeAsync");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr) {
  driver().calls.push_back("cuMemFree");
  return CUDA_SUCCESS;
}
