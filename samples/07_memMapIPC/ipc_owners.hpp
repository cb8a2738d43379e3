/**
 * @file ipc_owners.hpp
 * @brief Owners for what the memMapIPC lesson creates or imports: they release on an error path
 *        only; every creating call, and the good path's release, is written in memMapIPC.cpp and
 *        memMapIPC_worker.cpp. And the worker's grant of access to an imported pool.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <exception>
#include <utility>

#include "memsamples.hpp"
#include "support/vmm_owners.hpp"
#include "worker_processes.hpp"

namespace memsamples::ipc {

/// cuMemRelease: a physical allocation lives on while it is mapped, so releasing right after
/// cuMemMap is the usual order (the worker's). Common's (support/vmm_owners.hpp), as in 04, 05
/// and 08. The parent keeps its handles until every job has exported them.
using memsamples::OwnedAllocationHandle;
/// cuMemPoolDestroy, for a created or an imported pool (after the allocations from it).
using OwnedMemoryPool = DriverHandle<CUmemoryPool, cuMemPoolDestroy>;
/// cuIpcCloseMemHandle, for a pointer that cuIpcOpenMemHandle returned.
using OwnedIpcMapping = DriverHandle<CUdeviceptr, cuIpcCloseMemHandle>;
/// cuMemFree, for memory from cuMemAllocFromPoolAsync or cuMemPoolImportPointer on an error
/// path: cuMemFree takes both, but does not wait for work queued on them (Buffers does).
using OwnedPoolMemory = DriverHandle<CUdeviceptr, cuMemFree>;


/// cuMemUnmap (its answer ignored: where cuMemMap had not succeeded yet, nothing is mapped),
/// then cuMemAddressFree: how MappedRange gives a range back on an error path.
inline CUresult unmapThenFree(CUdeviceptr base, std::size_t bytes) {
  (void)cuMemUnmap(base, bytes);
  return cuMemAddressFree(base, bytes);
}

/// A reserved virtual range and the allocation mapped into it, undone with unmapThenFree():
/// Common's OwnedRange (support/vmm_owners.hpp). cuMemAddressReserve writes the range into
/// out(); this only undoes it, on an error path. The good path unmaps and frees with get(), and
/// empties the owner with release() only after cuMemAddressFree succeeded.
using MappedRange = OwnedRange<unmapThenFree>;

/**
 * A worker's access to a pool it imported, granted only where it is missing: cuda.h says nothing
 * of an imported pool's default access (the pool's own device has it, another one does not until
 * it is granted), so the worker asks (cuMemPoolGetAccess) and grants read-write to @p device
 * (cuMemPoolSetAccess) unless the pool grants it already. Unit tested on a fake driver
 * (ctest/unit/memMapIPC/pool_access_test.cpp). @throws CudaError naming the call that failed.
 */
// [pool-access]
inline void grantPoolAccess(CUmemoryPool pool, int device) {
  CUmemLocation location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
  CUmemAccess_flags granted = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  check(cuMemPoolGetAccess(&granted, pool, &location), "cuMemPoolGetAccess");
  if (granted != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    const CUmemAccessDesc access = {location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    check(cuMemPoolSetAccess(pool, &access, 1), "cuMemPoolSetAccess");
  }
}
// [pool-access]

/**
 * A, B and C of one path, as the parent made them or as a worker imported them: one kind of
 * owner per way of making them, of which a way of sharing uses one (the pool way two). Members are
 * destroyed in reverse order of declaration: mappings and handles, then legacy memory, then pool
 * allocations, and the pool last, after everything allocated from it. Before any of them, when
 * an error unwinds, the parent's workers are killed (freeing memory that another process still
 * has imported, with cuIpcOpenMemHandle or cuMemPoolImportPointer, is undefined), and the
 * stream's queued work completes.
 */
struct Buffers {
  /// Empty owners for buffers that work on @p stream uses. With @p endFirst (the parent's
  /// workers), an error that unwinds past these buffers kills and reaps the workers first.
  explicit Buffers(CUstream stream, Workers* endFirst = nullptr) noexcept
      : Buffers(stream, 0, endFirst) {}
  /// The same, with ranges of @p rangeBytes each (the VMM way's): cuMemAddressReserve may write
  /// into range[i].out().
  Buffers(CUstream stream, std::size_t rangeBytes, Workers* endFirst = nullptr) noexcept
      : range{MappedRange(rangeBytes), MappedRange(rangeBytes), MappedRange(rangeBytes)},
        stream_(stream),
        endFirst_(endFirst),
        exceptionsAtStart_(std::uncaught_exceptions()) {}
  /// On an error path: ends the workers and waits for the stream; then the members release.
  ~Buffers() {
    if (std::uncaught_exceptions() <= exceptionsAtStart_)
      return;
    if (endFirst_ != nullptr)
      endFirst_->killAll();
    (void)cuStreamSynchronize(stream_);
  }

  OwnedMemoryPool pool;             ///< cuMemPoolCreate, or cuMemPoolImportFromShareableHandle.
  OwnedPoolMemory pooled[3];        ///< Pointers: cuMemAllocFromPoolAsync, cuMemPoolImportPointer.
  OwnedDeviceMemory memory[3];      ///< cuMemAlloc (the parent's legacy path).
  OwnedIpcMapping opened[3];        ///< cuIpcOpenMemHandle (a worker's legacy path).
  OwnedAllocationHandle handle[3];  ///< cuMemCreate, or cuMemImportFromShareableHandle.
  MappedRange range[3];             ///< cuMemAddressReserve, then cuMemMap.
  /// A, B and C as plain addresses, whichever owner above holds them: a copy of range[i].get(),
  /// memory[i].get(), pooled[i].get() or opened[i].get(), so that the helpers the three ways
  /// share (Parent::writeInputs, Worker::use) take one array, whatever the way.
  CUdeviceptr pointer[3] = {};

 private:
  CUstream stream_;
  Workers* endFirst_;
  int exceptionsAtStart_;
};

}  // namespace memsamples::ipc
