/**
 * @file pointer_classify.hpp
 * @brief classifyPointer(): given any address, what kind of memory it is, which device and range
 *        it belongs to, and which copy and free calls fit it. The part of 11_pointerQuery to copy
 *        into your own code: it needs cuda.h and one driver call, cuPointerGetAttributes (and
 *        memsamples::check(), which you may replace by your own error handling).
 *
 * classify() is plain C++ on the driver's answers, so it is unit tested against made-up answers
 * (ctest/unit/pointerQuery); classifyPointer() asks the driver, and is tested against a fake one.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace pointer_query {

/**
 * Every answer of one cuPointerGetAttributes() call about one address. Each member starts at the
 * value that means "no answer": for an address the driver does not know, the call returns
 * CUDA_SUCCESS and leaves some outputs as they were, so an output left uninitialised would be
 * read as garbage. Booleans and enumerations land in zeroed 64-bit words, whatever width the
 * driver writes them in (cuda.h says "a boolean" without a C type).
 */
struct PointerFacts {
  std::uint64_t memoryType = 0;     ///< MEMORY_TYPE: 0 (unknown), CU_MEMORYTYPE_HOST or _DEVICE.
  CUdeviceptr devicePointer = 0;    ///< DEVICE_POINTER: the address a kernel uses.
  void* hostPointer = nullptr;      ///< HOST_POINTER: the address the CPU uses.
  CUcontext context = nullptr;      ///< CONTEXT: the context that allocated or registered it.
  std::uint64_t isManaged = 0;      ///< IS_MANAGED: cuMemAllocManaged memory.
  int deviceOrdinal = -1;           ///< DEVICE_ORDINAL: the device it was allocated against.
  CUdeviceptr rangeStart = 0;       ///< RANGE_START_ADDR: the allocation, or VMM reservation.
  std::size_t rangeSize = 0;        ///< RANGE_SIZE: its size.
  std::uint64_t mapped = 0;         ///< MAPPED: backed by physical memory now.
  std::uint64_t handleTypes = 0;    ///< ALLOWED_HANDLE_TYPES: CUmemAllocationHandleType bits.
  CUmemoryPool memPool = nullptr;   ///< MEMPOOL_HANDLE: the pool it came from, if any.
  /// ACCESS_FLAGS (CU_POINTER_ATTRIBUTE_ACCESS_FLAG_*): not in PointerQuery, since cuda.h's list
  /// for the plural call leaves it out; 11_pointerQuery asks the singular call for it.
  std::uint64_t accessFlags = 0;
  std::uint64_t legacyIpc = 0;      ///< IS_LEGACY_CUDA_IPC_CAPABLE: cuIpcGetMemHandle works.
  std::uint64_t syncMemops = 0;     ///< SYNC_MEMOPS: synchronous copies always synchronize.
};

/// The three arrays of one cuPointerGetAttributes() call: how many attributes, which, and where
/// each answer lands (a member of facts): every attribute cuda.h lists for the plural call but
/// BUFFER_ID and IS_HW_DECOMPRESS_CAPABLE. Not copyable: the answers point into this object.
struct PointerQuery {
  static constexpr unsigned int kCount = 13;  ///< Attributes asked.

  PointerQuery() = default;
  PointerQuery(const PointerQuery&) = delete;
  PointerQuery& operator=(const PointerQuery&) = delete;

  PointerFacts facts;  ///< The answers, each initialised to "no answer".

  /// The attributes asked, in the order of PointerFacts' members.
  CUpointer_attribute asked[kCount] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE,     CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
      CU_POINTER_ATTRIBUTE_HOST_POINTER,    CU_POINTER_ATTRIBUTE_CONTEXT,
      CU_POINTER_ATTRIBUTE_IS_MANAGED,      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
      CU_POINTER_ATTRIBUTE_MAPPED,          CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
      CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,  CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
      CU_POINTER_ATTRIBUTE_SYNC_MEMOPS};

  /// Where the driver writes the answer to each of asked, in the same order.
  void* answers[kCount] = {
      &facts.memoryType,  &facts.devicePointer, &facts.hostPointer, &facts.context,
      &facts.isManaged,   &facts.deviceOrdinal, &facts.rangeStart,  &facts.rangeSize,
      &facts.mapped,      &facts.handleTypes,   &facts.memPool,     &facts.legacyIpc,
      &facts.syncMemops};
};

/// The kinds of memory classify() tells apart.
enum class PointerKind {
  NotCuda,     ///< Memory the driver does not know: malloc, the stack, freed, out of range.
  Device,      ///< cuMemAlloc (or cuMemAllocPitch) device memory.
  Pool,        ///< Device memory from a memory pool: cuMemAllocAsync, cuMemAllocFromPoolAsync.
  Vmm,         ///< A VMM mapping: cuMemCreate + cuMemMap in a cuMemAddressReserve range.
  Managed,     ///< cuMemAllocManaged: pages that move between host and devices.
  PinnedHost,  ///< Page-locked host memory: cuMemAllocHost, cuMemHostAlloc, cuMemHostRegister.
};

/// What classify() concludes about one address.
struct PointerClass {
  PointerKind kind = PointerKind::NotCuda;  ///< The kind of memory.
  int device = -1;             ///< The device it was allocated against; -1 when none.
  CUdeviceptr rangeStart = 0;  ///< The range it belongs to (for VMM, the whole reservation).
  std::size_t rangeSize = 0;   ///< The range's size; 0 when the driver named none.
  std::string copyWith;        ///< The copy calls that fit it.
  std::string freeWith;        ///< The call that gives it back.
};

/// The kind's short name for tables: "device", "pool", "vmm", "managed", "pinned", "not CUDA".
const char* kindName(PointerKind kind);

/// The kind, device, range and fitting calls that the driver's @p facts imply. Plain C++: the
/// driver is not called. Throws only std::bad_alloc.
PointerClass classify(const PointerFacts& facts);

/// Asks the driver about @p address with one cuPointerGetAttributes() call (every output
/// initialised first). Needs a current context. @throws memsamples::CudaError.
PointerFacts askDriver(CUdeviceptr address);

/// classify(askDriver(@p address)): any address, the driver's or not. @throws CudaError.
PointerClass classifyPointer(CUdeviceptr address);

}  // namespace pointer_query
