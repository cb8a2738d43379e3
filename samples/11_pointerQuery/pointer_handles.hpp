/**
 * @file pointer_handles.hpp
 * @brief Steps 7 to 9 of 11_pointerQuery: what a pointer can be handed to outside CUDA. A dma-buf
 *        file descriptor of each kind the device allows, SYNC_MEMOPS set and read back, and the
 *        PCI bus id of the pointer's device, there and back.
 */
#pragma once

#include <cuda.h>

#include <iosfwd>

#include "pointer_expect.hpp"
#include "pointer_kinds.hpp"
#include "support/checklist.hpp"

namespace pointer_query {

/// Step 7: for each row dmaBufPlan() allows on @p device, a dma-buf file descriptor of the whole
/// allocation (cuMemGetHandleForAddressRange), closed at once; one line on @p out names the rows
/// exported and the two attributes that decided. @throws memsamples::CudaError;
/// std::system_error when close fails.
void exportDmaBufs(const Specimens& made, CUdevice device, memsamples::Checklist& checks,
                   std::ostream& out);

/// Step 8: SYNC_MEMOPS of @p block read, set (cuPointerSetAttribute) and read again; it must be
/// on afterwards. @throws memsamples::CudaError.
void turnOnSyncMemops(const Known& block, memsamples::Checklist& checks, std::ostream& out);

/// Step 9: the PCI bus id of @p device (cuDeviceGetPCIBusId), and the device that id names
/// (cuDeviceGetByPCIBusId), which must be @p device. @throws memsamples::CudaError.
void roundTripBusId(CUdevice device, memsamples::Checklist& checks, std::ostream& out);

}  // namespace pointer_query
