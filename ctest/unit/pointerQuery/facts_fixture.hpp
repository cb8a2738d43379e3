// Made-up driver answers for each kind of pointer 11_pointerQuery makes, as cuda.h describes
// them: shared by the unit tests of classify() and of the expected answers.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "pointer_classify.hpp"
#include "pointer_expect.hpp"

namespace pointer_test {

inline CUcontext ourContext() {
  return reinterpret_cast<CUcontext>(std::uintptr_t{0xc0});
}
inline CUmemoryPool ourPool() {
  return reinterpret_cast<CUmemoryPool>(std::uintptr_t{0x9001});
}
inline constexpr CUdeviceptr kAddress = 0x7f0000200000;
inline constexpr std::size_t kBytes = 2u << 20;

inline pointer_query::RunFacts run() {
  pointer_query::RunFacts facts;
  facts.context = ourContext();
  facts.ordinal = 0;
  return facts;
}

/// What the lesson knows about a pointer made as @p made at kAddress.
inline pointer_query::Known known(pointer_query::Made made) {
  pointer_query::Known k;
  k.label = "row";
  k.made = made;
  k.address = kAddress;
  k.bytes = kBytes;
  k.devicePointer = kAddress;
  if (made == pointer_query::Made::Vmm) {
    k.reservation = kAddress;
    k.reservationBytes = 2 * kBytes;
    k.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  }
  if (made == pointer_query::Made::Pool)
    k.pool = ourPool();
  if (made == pointer_query::Made::HostAllocMapped)
    k.hostFlags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
  if (made == pointer_query::Made::OnePast) {
    k.address = kAddress + kBytes;
    k.devicePointer = kAddress;
    k.bytes = 0;
  }
  return k;
}

/// The answers a correct driver gives about a pointer made as @p made at kAddress.
inline pointer_query::PointerFacts rightAnswers(pointer_query::Made made) {
  using pointer_query::Made;
  pointer_query::PointerFacts f;
  switch (made) {
    case Made::DeviceAlloc:
    case Made::Vmm:
    case Made::Pool:
      f.memoryType = CU_MEMORYTYPE_DEVICE;
      f.devicePointer = kAddress;
      f.context = made == Made::DeviceAlloc ? ourContext() : nullptr;
      f.deviceOrdinal = 0;
      f.rangeStart = kAddress;
      f.rangeSize = made == Made::Vmm ? 2 * kBytes : kBytes;
      f.mapped = 1;
      f.accessFlags = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
      f.legacyIpc = made == Made::DeviceAlloc ? 1 : 0;
      f.handleTypes = made == Made::Vmm ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0;
      f.memPool = made == Made::Pool ? ourPool() : nullptr;
      break;
    case Made::AllocHost:
    case Made::HostAllocMapped:
    case Made::HostAllocWc:
    case Made::Registered:
      f.memoryType = CU_MEMORYTYPE_HOST;
      f.devicePointer = kAddress;
      f.hostPointer = reinterpret_cast<void*>(kAddress);
      f.context = ourContext();
      f.deviceOrdinal = 0;
      f.mapped = 1;
      f.accessFlags = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
      break;
    case Made::Managed:
      f.memoryType = CU_MEMORYTYPE_DEVICE;
      f.devicePointer = kAddress;
      f.hostPointer = reinterpret_cast<void*>(kAddress);
      f.context = ourContext();
      f.isManaged = 1;
      f.deviceOrdinal = 0;
      f.rangeStart = kAddress;
      f.rangeSize = kBytes;
      f.mapped = 1;
      break;
    case Made::Malloc:
    case Made::Stack:
    case Made::OnePast:
    case Made::Freed:
      break;
  }
  return f;
}

}  // namespace pointer_test
