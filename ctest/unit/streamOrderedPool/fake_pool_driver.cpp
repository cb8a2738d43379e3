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
  *text = error == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_VALUE ? "invalid argument" : "unknown error";
  return CUDA_SUCCESS;
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
