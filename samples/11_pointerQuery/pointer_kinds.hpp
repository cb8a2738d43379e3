/**
 * @file pointer_kinds.hpp
 * @brief Step 2 and step 10 of 11_pointerQuery: one pointer of every kind of memory the course
 *        makes, and the counter-examples, each with what the lesson knows about it; and their
 *        release. Every creating call is written in pointer_kinds.cpp, one function per kind.
 */
#pragma once

#include <cuda.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "memsamples.hpp"
#include "pointer_expect.hpp"
#include "support/vmm_owners.hpp"

namespace pointer_query {

/// Host memory from std::malloc or std::aligned_alloc, given back with std::free.
struct FreeHostMemory {
  void operator()(void* memory) const noexcept { std::free(memory); }  ///< std::free(memory).
};
using HostBuffer = std::unique_ptr<void, FreeHostMemory>;  ///< malloc'd memory, owned.

/// The bytes of every allocation the lesson makes: one VMM granule on the devices the course
/// runs on, and a multiple of the host page size (cuMemGetHandleForAddressRange needs that).
inline constexpr std::size_t kBytes = 2u << 20;

/// Every pointer the lesson asks about, and the owners that release them on an error path
/// (declared in the order they are made, so an error releases them in reverse). Keep it a local
/// of the lesson: the counter-example onTheStack must be on the stack.
struct Specimens {
  std::vector<Known> rows;  ///< What the lesson knows, one row per pointer, in table order.

  memsamples::OwnedDeviceMemory device;            ///< cuMemAlloc.
  memsamples::OwnedPinnedHostMemory allocHost;     ///< cuMemAllocHost.
  memsamples::OwnedPinnedHostMemory hostMapped;    ///< cuMemHostAlloc(PORTABLE | DEVICEMAP).
  memsamples::OwnedPinnedHostMemory hostWc;        ///< cuMemHostAlloc(WRITECOMBINED | ...).
  HostBuffer registeredPages;                      ///< The pages cuMemHostRegister pins...
  memsamples::OwnedHostRegistration registration;  ///< ... and their registration.
  memsamples::OwnedDeviceMemory managed;           ///< cuMemAllocManaged (cuMemFree).
  memsamples::AddressRange reservation;            ///< cuMemAddressReserve: two granules.
  memsamples::Mapping mapping;                     ///< cuMemMap of the first granule...
  memsamples::Mapping secondMapping;               ///< ... and of the second.
  memsamples::OwnedDeviceMemory poolBlock;  ///< cuMemAllocAsync (cuMemFree on an error path).
  memsamples::OwnedStream stream;           ///< The pool's stream: drained before poolBlock dies.
  HostBuffer plainMalloc;                   ///< Counter-example: std::malloc.
  char onTheStack = 0;                      ///< Counter-example: a byte on the stack.
};

/// Step 2: makes every kind the device supports on @p device (device @p ordinal), with the
/// lesson's context current; a kind the device lacks (managed, VMM, pools) is a waived row with
/// the reason. @throws memsamples::CudaError; std::bad_alloc when malloc fails.
void makeSpecimens(Specimens& made, CUdevice device, int ordinal);

/// Step 10: releases everything makeSpecimens() made, in reverse order, each call checked.
/// @throws memsamples::CudaError (the owners release the rest).
void freeSpecimens(Specimens& made);

/// The row made as @p made, or nullptr where the device did not make it.
const Known* findRow(const Specimens& specimens, Made made);

}  // namespace pointer_query
