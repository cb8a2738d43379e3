/**
 * @file release_proof.hpp
 * @brief How the memMapIPC parent decides that it released a path's memory, from what the
 *        driver says about its own addresses: a verdict that depends on this run alone.
 *
 * Free device memory (cuMemGetInfo) is the whole device's: on a shared GPU another process
 * allocates or frees at any moment, so it can neither prove nor disprove a release. The
 * driver's answers about this process's own addresses can: an allocation that
 * cuPointerGetAttributes found mapped right after it was created must no longer be mapped once
 * it is released. A pool must also count no bytes in use (CU_MEMPOOL_ATTR_USED_MEM_CURRENT) once
 * its allocations' frees completed.
 *
 * Why the plural cuPointerGetAttributes, and not cuMemGetAddressRange or cuPointerGetAttribute:
 * about an address it does not know (a freed one), the plural call answers CUDA_SUCCESS with
 * default values (MAPPED 0, and a RANGE_SIZE it cannot answer left untouched), where the other
 * two return an error that compute-sanitizer's memcheck counts as an API error. So the proof of
 * the release costs a learner who runs the sanitizer no error.
 *
 * askDriverAbout() asks (unit tested on a fake driver); releaseProblems() decides (unit tested).
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memsamples::ipc {

/// What cuPointerGetAttributes said about one address at one moment. Every value starts at 0,
/// which is what an attribute the driver leaves unanswered keeps.
struct AddressAnswer {
  CUresult result = CUDA_ERROR_NOT_FOUND;  ///< Its answer (not asked yet: NOT_FOUND).
  int mapped = 0;        ///< CU_POINTER_ATTRIBUTE_MAPPED (a bool, in a zeroed int).
  CUdeviceptr base = 0;  ///< CU_POINTER_ATTRIBUTE_RANGE_START_ADDR.
  std::size_t size = 0;  ///< CU_POINTER_ATTRIBUTE_RANGE_SIZE (0: not answered).
};

/// Asks cuPointerGetAttributes about @p pointer: MAPPED, RANGE_START_ADDR and RANGE_SIZE, each
/// answer in a value initialised to 0. Needs the context that made or mapped the address to be
/// current. Throws nothing (the answer's result says whether the driver could answer).
AddressAnswer askDriverAbout(CUdeviceptr pointer) noexcept;

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
 * allocation must have been found mapped before (and, where the driver gave a range, a range
 * that holds its address) and must not be after: answered CUDA_SUCCESS with MAPPED 0, or with a
 * range that does not hold the address. An error after the release is no proof (a driver that
 * cannot answer), and neither is an allocation the driver did not know before. A pool must
 * count 0 bytes in use.
 */
std::vector<std::string> releaseProblems(const ReleaseEvidence& evidence);

}  // namespace memsamples::ipc
