/**
 * @file pointer_handles.cpp
 * @brief Steps 7 to 9 of 11_pointerQuery: see pointer_handles.hpp.
 */
#include "pointer_handles.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ostream>
#include <string>
#include <system_error>

#include "memsamples.hpp"

namespace ms = memsamples;

namespace pointer_query {

void exportDmaBufs(const Specimens& made, CUdevice device, ms::Checklist& checks,
                   std::ostream& out) {
  // A dma-buf is how Linux drivers share memory: a NIC's driver imports it for GPUDirect RDMA.
  // cuda.h says which memory may be exported, and these two attributes say whether this device
  // can (dmaBufPlan()).
  const int dmaBuf = ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
  const int hostAllocDmaBuf =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED);

  std::string exported;
  for (const Known& known : made.rows) {
    const DmaBufPlan plan = dmaBufPlan(known.made, dmaBuf != 0, hostAllocDmaBuf != 0);
    if (!known.waived.empty() || !plan.ask)
      continue;

    // The whole allocation: page-aligned, and (for VMM) wholly mapped.
    int fd = -1;
    ms::check(cuMemGetHandleForAddressRange(&fd, known.address, known.bytes,
                                            CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
              "cuMemGetHandleForAddressRange");
    if (close(fd) != 0)
      throw std::system_error(errno, std::generic_category(), "close of a dma-buf descriptor");
    checks.expect(fd >= 0, known.label + ": dma-buf", "a file descriptor", std::to_string(fd));
    exported += " " + known.label;
  }
  out << "dma-buf (DMA_BUF_SUPPORTED " << dmaBuf << ", HOST_ALLOC_DMA_BUF_SUPPORTED "
      << hostAllocDmaBuf << "):" << (exported.empty() ? " none" : exported) << '\n';
}

void turnOnSyncMemops(const Known& block, ms::Checklist& checks, std::ostream& out) {
  // Booleans land in zeroed words: the driver writes their low bytes.
  std::uint64_t before = 0;
  ms::check(cuPointerGetAttribute(&before, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, block.address),
            "cuPointerGetAttribute");

  // From now on every synchronous copy to or from the block waits until the copy is done,
  // even where it could return early (a copy from pageable memory, once staged).
  const unsigned int on = 1;
  ms::check(cuPointerSetAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, block.address),
            "cuPointerSetAttribute");

  std::uint64_t after = 0;
  ms::check(cuPointerGetAttribute(&after, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, block.address),
            "cuPointerGetAttribute");
  checks.expect(after != 0, block.label + ": SYNC_MEMOPS once set", "1", std::to_string(after));
  out << "SYNC_MEMOPS of " << block.label << ": " << before << " -> " << after << '\n';
}

void roundTripBusId(CUdevice device, ms::Checklist& checks, std::ostream& out) {
  // The name the device has outside CUDA (sysfs, nvidia-smi, a NIC's driver), and back.
  char busId[32] = {};
  ms::check(cuDeviceGetPCIBusId(busId, sizeof busId, device), "cuDeviceGetPCIBusId");
  CUdevice back = -1;
  ms::check(cuDeviceGetByPCIBusId(&back, busId), "cuDeviceGetByPCIBusId");
  checks.expect(back == device, "cuDeviceGetByPCIBusId", "the device itself", "another device");
  out << "PCI bus id " << busId << " -> device " << ms::deviceOrdinal(back) << '\n';
}

}  // namespace pointer_query
