/**
 * @file fake_host_numa_driver.cpp
 * @brief The cu* functions of host_numa_allocation.cpp and memsamples_check.cpp, backed by a fake
 *        machine that enforces the documented rules of each call (see fake_host_numa_driver.hpp).
 *
 * cuda.h comes first so that its versioned-name macros rename these definitions exactly as they
 * rename the callers' calls.
 */
#include <cuda.h>

#include "fake_call_plan.hpp"
#include "fake_host_numa_driver.hpp"

#include <map>

namespace fakenuma {
namespace {

struct Allocation {
  std::size_t bytes = 0;
  int node = -1;
  bool released = false;
  int mappings = 0;
};

struct Mapping {
  std::size_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;
  std::vector<CUmemAccessDesc> access;
};

struct State {
  CUdeviceptr nextAddress = 0x7e0000000000ull;
  CUmemGenericAllocationHandle nextHandle =
      0;  // 0 is a valid handle: code must not treat it as none
  std::map<CUdeviceptr, std::size_t> reservations;
  std::size_t lastReserveAlignment = 0;
  std::map<CUmemGenericAllocationHandle, Allocation> allocations;
  std::map<CUdeviceptr, Mapping> mappings;
  memsamples::test::FakeCallPlan calls;
};

State& state() {
  static State instance;
  return instance;
}

// Records the call; the planned failure for it, or CUDA_SUCCESS.
CUresult enter(const char* function) {
  return state().calls.enter(function);
}

bool wholeGranules(std::size_t bytes) {
  return bytes > 0 && bytes % kGranularity == 0;
}

bool hostNumaPinned(const CUmemAllocationProp* prop) {
  return prop != nullptr && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
         prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && prop->location.id >= 0;
}

bool insideReservation(CUdeviceptr start, std::size_t bytes) {
  for (const auto& [base, size] : state().reservations) {
    if (start >= base && start + bytes <= base + size)
      return true;
  }
  return false;
}

void freeIfUnused(CUmemGenericAllocationHandle handle) {
  const auto found = state().allocations.find(handle);
  if (found != state().allocations.end() && found->second.released && found->second.mappings == 0)
    state().allocations.erase(found);
}

}  // namespace

void reset() {
  state() = State{};
}

void failCall(const std::string& function, int nth, CUresult result) {
  state().calls.fail(function, nth, result);
}

const std::vector<std::string>& driverCalls() {
  return state().calls.log();
}

Leftovers leftovers() {
  Leftovers left;
  left.reservations = state().reservations.size();
  left.mappings = state().mappings.size();
  for (const auto& [handle, allocation] : state().allocations)
    left.unreleasedHandles += allocation.released ? 0 : 1;
  return left;
}

std::size_t lastReserveAlignment() {
  return state().lastReserveAlignment;
}

int nodeMappedAt(CUdeviceptr address) {
  const auto found = state().mappings.find(address);
  if (found == state().mappings.end())
    return -1;
  return state().allocations.at(found->second.handle).node;
}

std::vector<CUmemAccessDesc> accessAt(CUdeviceptr address) {
  const auto found = state().mappings.find(address);
  return found == state().mappings.end() ? std::vector<CUmemAccessDesc>{} : found->second.access;
}

}  // namespace fakenuma

using fakenuma::enter;
using fakenuma::state;

extern "C" {

CUresult cuGetErrorName(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_OUT_OF_MEMORY   ? "CUDA_ERROR_OUT_OF_MEMORY"
          : error == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
                                              : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_OUT_OF_MEMORY   ? "out of memory"
          : error == CUDA_ERROR_INVALID_VALUE ? "invalid argument"
                                              : "unknown error";
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  if (const CUresult planned = enter("cuMemGetAllocationGranularity"))
    return planned;
  if (granularity == nullptr || !fakenuma::hostNumaPinned(prop))
    return CUDA_ERROR_INVALID_VALUE;
  *granularity = option == CU_MEM_ALLOC_GRANULARITY_RECOMMENDED ? fakenuma::kRecommendedGranularity
                                                                : fakenuma::kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* address, size_t bytes, size_t alignment, CUdeviceptr,
                             unsigned long long) {
  if (const CUresult planned = enter("cuMemAddressReserve"))
    return planned;
  if (address == nullptr || !fakenuma::wholeGranules(bytes) || alignment % fakenuma::kGranularity)
    return CUDA_ERROR_INVALID_VALUE;
  *address = state().nextAddress;
  state().reservations[*address] = bytes;
  state().lastReserveAlignment = alignment;
  state().nextAddress += bytes + fakenuma::kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr address, size_t bytes) {
  if (const CUresult planned = enter("cuMemAddressFree"))
    return planned;
  const auto found = state().reservations.find(address);
  if (found == state().reservations.end() || found->second != bytes)
    return CUDA_ERROR_INVALID_VALUE;
  for (const auto& [start, mapping] : state().mappings) {
    if (start >= address && start < address + bytes)
      return CUDA_ERROR_INVALID_VALUE;  // still mapped
  }
  state().reservations.erase(found);
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  if (const CUresult planned = enter("cuMemCreate"))
    return planned;
  if (handle == nullptr || flags != 0 || !fakenuma::hostNumaPinned(prop) ||
      !fakenuma::wholeGranules(bytes))
    return CUDA_ERROR_INVALID_VALUE;
  *handle = state().nextHandle++;
  state().allocations[*handle] = fakenuma::Allocation{bytes, prop->location.id, false, 0};
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (const CUresult planned = enter("cuMemRelease"))
    return planned;
  const auto found = state().allocations.find(handle);
  if (found == state().allocations.end() || found->second.released)
    return CUDA_ERROR_INVALID_VALUE;
  found->second.released = true;
  fakenuma::freeIfUnused(handle);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr address, size_t bytes, size_t offset,
                  CUmemGenericAllocationHandle handle, unsigned long long flags) {
  if (const CUresult planned = enter("cuMemMap"))
    return planned;
  const auto found = state().allocations.find(handle);
  if (found == state().allocations.end() || found->second.released || offset != 0 || flags != 0 ||
      bytes != found->second.bytes || !fakenuma::insideReservation(address, bytes) ||
      state().mappings.count(address) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  ++found->second.mappings;
  state().mappings[address] = fakenuma::Mapping{bytes, handle, {}};
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr address, size_t bytes) {
  if (const CUresult planned = enter("cuMemUnmap"))
    return planned;
  const auto found = state().mappings.find(address);
  if (found == state().mappings.end() || found->second.bytes != bytes)
    return CUDA_ERROR_INVALID_VALUE;
  const CUmemGenericAllocationHandle handle = found->second.handle;
  state().mappings.erase(found);
  --state().allocations.at(handle).mappings;
  fakenuma::freeIfUnused(handle);
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr address, size_t bytes, const CUmemAccessDesc* desc,
                        size_t count) {
  if (const CUresult planned = enter("cuMemSetAccess"))
    return planned;
  const auto found = state().mappings.find(address);
  if (found == state().mappings.end() || found->second.bytes != bytes || desc == nullptr ||
      count == 0)
    return CUDA_ERROR_INVALID_VALUE;
  found->second.access.assign(desc, desc + count);
  return CUDA_SUCCESS;
}

}  // extern "C"
