/**
 * @file release_proof.hpp
 * @brief How the memMapIPC parent decides that it released a path's memory, from what the
 *        driver says about its own addresses: a verdict that depends on this run alone.
 *
 * Free device memory (cuMemGetInfo) is the whole device's: on a shared GPU another process
 * allocates or frees at any moment, so it can neither prove nor disprove a release. The
 * driver's answers about this process's own addresses can: an allocation that
 * cuMemGetAddressRange found right after it was created must be unknown to it once it is
 * released (answered CUDA_ERROR_NOT_FOUND or CUDA_ERROR_INVALID_VALUE). A pool must also count
 * no bytes in use (CU_MEMPOOL_ATTR_USED_MEM_CURRENT) once its allocations' frees completed.
 *
 * No driver calls here: Parent (memMapIPC_measure.hpp) asks the questions; this is the
 * decision, unit tested in ctest/unit/memMapIPC.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memsamples::ipc {

/// What cuMemGetAddressRange said about one address at one moment.
struct AddressAnswer {
  CUresult result = CUDA_ERROR_NOT_FOUND;  ///< Its answer.
  CUdeviceptr base = 0;                    ///< The range's base (when it answered CUDA_SUCCESS).
  std::size_t size = 0;                    ///< The range's size (when it answered CUDA_SUCCESS).
};

/// One allocation of the parent: its address, and the answers before and after the release.
struct AllocationProbe {
  CUdeviceptr pointer = 0;  ///< Where the allocation starts.
  AddressAnswer before;     ///< Asked right after it was created.
  AddressAnswer after;      ///< Asked once the good path or the owners released it.
};

/// What is judged about one path's release.
struct ReleaseEvidence {
  std::vector<AllocationProbe> allocations;  ///< A, B and C.
  /// The pool's CU_MEMPOOL_ATTR_USED_MEM_CURRENT after every free completed (the pool path's
  /// good path only: on an error path the pool is gone before anyone can ask).
  std::optional<std::uint64_t> poolBytesInUse;
};

/**
 * The problems with @p evidence, one sentence each; none when the release is proved. Each
 * allocation must have been found before (a range that holds its address) and must not be
 * after: an answer of CUDA_ERROR_NOT_FOUND or CUDA_ERROR_INVALID_VALUE, or a range that does not
 * hold the address. Any other error after the release is no proof (a driver that cannot
 * answer), and neither is an allocation the driver did not see before. A pool must count 0
 * bytes in use.
 */
std::vector<std::string> releaseProblems(const ReleaseEvidence& evidence);

}  // namespace memsamples::ipc
