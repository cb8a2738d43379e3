/**
 * @file pointer_expect.hpp
 * @brief What the driver must answer about each pointer 11_pointerQuery made, since the lesson
 *        knows how it made it, and the table that shows the answers. Plain C++ on cuda.h's
 *        types: nothing here calls the driver (unit tested in ctest/unit/pointerQuery).
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pointer_classify.hpp"
#include "support/checklist.hpp"  // memsamples::AttributeMismatch

namespace pointer_query {

/// How the lesson made a pointer: one row of the table each.
enum class Made {
  DeviceAlloc,     ///< cuMemAlloc.
  AllocHost,       ///< cuMemAllocHost.
  HostAllocMapped, ///< cuMemHostAlloc(PORTABLE | DEVICEMAP).
  HostAllocWc,     ///< cuMemHostAlloc(WRITECOMBINED | DEVICEMAP).
  Registered,      ///< malloc'd pages registered with cuMemHostRegister(DEVICEMAP).
  Managed,         ///< cuMemAllocManaged.
  Vmm,             ///< cuMemCreate + cuMemMap at the start of a two-granule reservation.
  Pool,            ///< cuMemAllocAsync from the device's current pool.
  Malloc,          ///< Plain malloc: a counter-example.
  Stack,           ///< A variable on the stack: a counter-example.
  OnePast,         ///< One byte past the end of the cuMemAlloc row: a counter-example.
  Freed,           ///< cuMemAlloc memory, freed with cuMemFree before the question.
};

/// What the lesson knows about one pointer, since it made it.
struct Known {
  std::string label;            ///< The table's first column, e.g. "cuMemAlloc".
  Made made = Made::Malloc;     ///< How it was made.
  CUdeviceptr address = 0;      ///< The address asked about.
  std::size_t bytes = 0;        ///< The allocation's size (0 for a bare address).
  CUdeviceptr devicePointer = 0;  ///< The address a kernel uses, as the creating calls said.
  CUdeviceptr reservation = 0;    ///< VMM: the reserved range it was mapped into.
  std::size_t reservationBytes = 0;  ///< VMM: the reserved range's size.
  CUmemoryPool pool = nullptr;       ///< Pool: the pool it came from.
  std::uint64_t handleTypes = 0;     ///< VMM: the handle types cuMemCreate was asked for.
  unsigned int hostFlags = 0;        ///< cuMemHostAlloc: the flags it was given.
  std::string waived;           ///< Not made on this device, and why (empty: made).
};

/// What the lesson knows about its own run.
struct RunFacts {
  CUcontext context = nullptr;  ///< The lesson's context (current during the questions).
  int ordinal = 0;              ///< Its device's ordinal.
  bool pageableAccess = false;  ///< CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: then the
                                ///< driver may know plain malloc and stack memory too.
};

/// The result of checking one row: every mismatch, and how many checks ran.
struct RowCheck {
  std::vector<memsamples::AttributeMismatch> mismatches;  ///< The answers that were wrong.
  std::size_t checks = 0;                                 ///< Answers compared.
};

/// The kind classify() must name for a pointer made as @p made.
PointerKind expectedKind(Made made);

/// True for the rows of cuMemAllocHost and cuMemHostAlloc memory: cuMemHostGetFlags answers
/// for those only (cuda.h: it fails for any other pointer, registered memory included).
bool hasHostFlags(Made made);

/// Compares the cuPointerGetAttributes answers @p got (and classify()'s @p verdict) with what
/// the lesson knows about the pointer @p known. Only answers that cuda.h or the way the pointer
/// was made fix are compared; the others are shown, not judged (see the README).
RowCheck checkAnswers(const Known& known, const PointerFacts& got, const PointerClass& verdict,
                      const RunFacts& run);

/// cuMemGetAddressRange's answer [@p base, @p base + @p size) for a device-side address:
/// cuMemAlloc memory starting it, pool and managed memory within it, a VMM mapping starting it
/// and within the reservation.
RowCheck checkAddressRange(const Known& known, CUdeviceptr base, std::size_t size);

/// The singular call's ACCESS_FLAGS answer @p flags: read and write for the lesson's own device
/// memory (cuMemAlloc, the VMM mapping after cuMemSetAccess, the pool); shown for the others.
RowCheck checkAccess(const Known& known, std::uint64_t flags);

/// cuMemHostGetFlags' answer @p flags: every flag the allocation asked for (the driver may add
/// CU_MEMHOSTALLOC_DEVICEMAP, which unified addressing implies).
RowCheck checkHostFlags(const Known& known, unsigned int flags);

/// cuMemGetAllocationPropertiesFromHandle's answer @p prop for the handle retained from the VMM
/// row @p known: device memory of device @p ordinal, with the handle types cuMemCreate was given.
RowCheck checkAllocationProperties(const Known& known, const CUmemAllocationProp& prop,
                                   int ordinal);

/// Every answer of @p got for people, one indented line each, with classify()'s copy and free
/// calls from @p verdict (`--verbose`).
std::string describeFacts(const PointerFacts& got, const PointerClass& verdict);

/// Whether step 7 asks cuMemGetHandleForAddressRange for a dma-buf of a row, or why not.
struct DmaBufPlan {
  bool ask = false;    ///< True: ask; the range is page-aligned and wholly one allocation.
  std::string reason;  ///< When not: why, one sentence.
};

/// The plan for a pointer made as @p made, on a device whose CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
/// is @p dmaBuf and CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED @p hostAllocDmaBuf (cuda.h
/// allows cuMemAlloc memory and a fully mapped VMM range under the first, cuMemAllocHost and
/// cuMemHostAlloc memory under the second, and nothing else).
DmaBufPlan dmaBufPlan(Made made, bool dmaBuf, bool hostAllocDmaBuf);

/// The table's heading line (no newline).
std::string tableHeader();

/// One table row: @p known's label, then each answer of @p got in a few characters, relative to
/// the row's own address, then classify()'s kind; a wrong answer is marked with '!'.
std::string tableRow(const Known& known, const PointerFacts& got, const PointerClass& verdict,
                     const RowCheck& check, const RunFacts& run);

/// @p value in hexadecimal: "0x2".
std::string hexText(std::uint64_t value);

/// A byte count in at most five characters: "512", "64K", "2M", "1.5G".
std::string shortBytes(std::uint64_t bytes);

}  // namespace pointer_query
