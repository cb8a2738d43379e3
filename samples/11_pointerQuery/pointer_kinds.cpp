/**
 * @file pointer_kinds.cpp
 * @brief One pointer of every kind, and their release: see pointer_kinds.hpp. Each function
 *        makes one kind with the calls the course's lessons use for it, and writes down what
 *        the lesson knows about it: that is what step 4 holds the driver's answers against.
 */
#include "pointer_kinds.hpp"

#include <cstring>
#include <new>
#include <string>

namespace ms = memsamples;

namespace pointer_query {

namespace {

CUdeviceptr asDevicePointer(const void* host) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(host));
}

/// A row with its label, how it was made, and its address (also the kernels' address).
Known row(const char* label, Made made, CUdeviceptr address, std::size_t bytes) {
  Known known;
  known.label = label;
  known.made = made;
  known.address = address;
  known.bytes = bytes;
  known.devicePointer = address;
  return known;
}

/// A row the device could not make, and why.
Known waivedRow(const char* label, Made made, std::string reason) {
  Known known = row(label, made, 0, 0);
  known.waived = std::move(reason);
  return known;
}

void makeDevice(Specimens& made) {
  ms::check(cuMemAlloc(made.device.out(), kBytes), "cuMemAlloc");
  made.rows.push_back(row("cuMemAlloc", Made::DeviceAlloc, made.device.get(), kBytes));
}

/// Page-locked host memory, from @p label's call with @p flags. The device reaches it at the
/// address cuMemHostGetDevicePointer gives: with unified addressing the same as the host's,
/// except for write-combined memory, where cuda.h says to ask.
void addHostRow(Specimens& made, const char* label, Made kind, void* host, unsigned int flags) {
  Known known = row(label, kind, asDevicePointer(host), kBytes);
  ms::check(cuMemHostGetDevicePointer(&known.devicePointer, host, 0),
            "cuMemHostGetDevicePointer");
  known.hostFlags = flags;
  made.rows.push_back(known);
}

void makeHostKinds(Specimens& made) {
  ms::check(cuMemAllocHost(made.allocHost.out(), kBytes), "cuMemAllocHost");
  addHostRow(made, "cuMemAllocHost", Made::AllocHost, made.allocHost.get(), 0);

  // Portable: every context may use it, not only the one that allocated it. Device-mapped: a
  // kernel may read and write it in place.
  const unsigned int mapped = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
  ms::check(cuMemHostAlloc(made.hostMapped.out(), kBytes, mapped), "cuMemHostAlloc");
  addHostRow(made, "cuMemHostAlloc PORT|MAP", Made::HostAllocMapped, made.hostMapped.get(),
             mapped);

  // Write-combined: fast for the CPU to write and the GPU to read, very slow for the CPU to
  // read back.
  const unsigned int combined = CU_MEMHOSTALLOC_WRITECOMBINED | CU_MEMHOSTALLOC_DEVICEMAP;
  ms::check(cuMemHostAlloc(made.hostWc.out(), kBytes, combined), "cuMemHostAlloc");
  addHostRow(made, "cuMemHostAlloc WC|MAP", Made::HostAllocWc, made.hostWc.get(), combined);
}

/// Pages from the C library, touched, then pinned and mapped for the device.
void makeRegistered(Specimens& made) {
  made.registeredPages.reset(std::aligned_alloc(4096, kBytes));
  if (!made.registeredPages)
    throw std::bad_alloc();
  std::memset(made.registeredPages.get(), 0, kBytes);

  void* pages = made.registeredPages.get();
  ms::check(cuMemHostRegister(pages, kBytes, CU_MEMHOSTREGISTER_DEVICEMAP), "cuMemHostRegister");
  made.registration = ms::OwnedHostRegistration(pages);
  addHostRow(made, "cuMemHostRegister", Made::Registered, pages, 0);
}

void makeManaged(Specimens& made, CUdevice device) {
  const char* label = "cuMemAllocManaged";
  if (ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) == 0) {
    made.rows.push_back(waivedRow(label, Made::Managed, "no managed memory on this device"));
    return;
  }
  // Never more managed memory than the device has free: an over-subscribed managed
  // allocation can stall every process on a shared GPU. (This guards, it judges nothing.)
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  if (freeBytes < 2 * kBytes) {
    made.rows.push_back(waivedRow(label, Made::Managed, "less than 4 MiB of device memory free"));
    return;
  }
  ms::check(cuMemAllocManaged(made.managed.out(), kBytes, CU_MEM_ATTACH_GLOBAL),
            "cuMemAllocManaged");
  made.rows.push_back(row(label, Made::Managed, made.managed.get(), kBytes));
}

//! [vmm-kind]
/// Two granules of device memory, each its own allocation, mapped side by side in one
/// reservation: the reservation is one range (RANGE_START_ADDR, RANGE_SIZE), each mapping
/// another (cuMemGetAddressRange), and the whole reservation is mapped, as a dma-buf needs.
void makeVmm(Specimens& made, CUdevice device, int ordinal) {
  const char* label = "cuMemCreate+cuMemMap";
  if (ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
    made.rows.push_back(waivedRow(label, Made::Vmm, "no virtual memory management"));
    return;
  }
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  // Ask for a POSIX file descriptor handle where the device has one: ALLOWED_HANDLE_TYPES
  // then says so.
  const CUdevice_attribute posixFd =
      CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED;
  if (ms::deviceAttribute(device, posixFd) != 0)
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

  std::size_t granule = 0;
  ms::check(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity");

  // Reserve two granules aligned to one.
  CUdeviceptr base = 0;
  ms::check(cuMemAddressReserve(&base, 2 * granule, granule, 0, 0), "cuMemAddressReserve");
  made.reservation.own(base, 2 * granule);

  // Make one granule of memory and map it at the start, then another right after it. Each
  // mapping keeps its memory: a handle can go as soon as it is mapped, and step 6 gets the
  // first one back from its address alone.
  ms::OwnedAllocationHandle first;
  ms::check(cuMemCreate(first.out(), granule, &prop, 0), "cuMemCreate");
  ms::check(cuMemMap(base, granule, 0, first.get(), 0), "cuMemMap");
  made.mapping.own(base, granule);
  ms::check(cuMemRelease(first.release()), "cuMemRelease");

  ms::OwnedAllocationHandle second;
  ms::check(cuMemCreate(second.out(), granule, &prop, 0), "cuMemCreate");
  ms::check(cuMemMap(base + granule, granule, 0, second.get(), 0), "cuMemMap");
  made.secondMapping.own(base + granule, granule);
  ms::check(cuMemRelease(second.release()), "cuMemRelease");

  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ms::check(cuMemSetAccess(base, 2 * granule, &access, 1), "cuMemSetAccess");

  Known known = row(label, Made::Vmm, base, granule);
  known.reservation = base;
  known.reservationBytes = 2 * granule;
  known.handleTypes = prop.requestedHandleTypes;
  made.rows.push_back(known);
}
//! [vmm-kind]

/// A block from the device's current memory pool, allocated in stream order and waited for.
void makePool(Specimens& made, CUdevice device, int ordinal) {
  const char* label = "cuMemAllocAsync";
  if (ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) == 0) {
    made.rows.push_back(waivedRow(label, Made::Pool, "no memory pools"));
    return;
  }
  CUmemLocation location = {};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = ordinal;
  CUmemoryPool current = nullptr;
  ms::check(cuMemGetMemPool(&current, &location, CU_MEM_ALLOCATION_TYPE_PINNED),
            "cuMemGetMemPool");

  ms::check(cuStreamCreate(made.stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ms::check(cuMemAllocAsync(made.poolBlock.out(), kBytes, made.stream.get()), "cuMemAllocAsync");
  ms::check(cuStreamSynchronize(made.stream.get()), "cuStreamSynchronize");

  Known known = row(label, Made::Pool, made.poolBlock.get(), kBytes);
  known.pool = current;
  made.rows.push_back(known);
}

/// Addresses the driver must not take for its memory: plain malloc, the stack, one byte past
/// the cuMemAlloc block, and a block freed before the question. The freed block is made last,
/// so that no later allocation can reuse its address.
void makeCounterExamples(Specimens& made) {
  made.plainMalloc.reset(std::malloc(64));
  if (!made.plainMalloc)
    throw std::bad_alloc();
  made.rows.push_back(row("malloc", Made::Malloc, asDevicePointer(made.plainMalloc.get()), 64));
  made.rows.push_back(row("stack", Made::Stack, asDevicePointer(&made.onTheStack), 1));

  Known past = row("cuMemAlloc + size", Made::OnePast, made.device.get() + kBytes, 0);
  past.devicePointer = made.device.get();  // the allocation it lies just past
  made.rows.push_back(past);

  ms::OwnedDeviceMemory freed;
  ms::check(cuMemAlloc(freed.out(), kBytes), "cuMemAlloc");
  const CUdeviceptr was = freed.get();
  ms::check(cuMemFree(freed.release()), "cuMemFree");
  made.rows.push_back(row("freed cuMemAlloc", Made::Freed, was, 0));
}

}  // namespace

void makeSpecimens(Specimens& made, CUdevice device, int ordinal) {
  makeDevice(made);
  makeHostKinds(made);
  makeRegistered(made);
  makeManaged(made, device);
  makeVmm(made, device, ordinal);
  makePool(made, device, ordinal);
  makeCounterExamples(made);
}

void freeSpecimens(Specimens& made) {
  // In reverse order of making. The pool block goes back in stream order, and the stream is
  // drained before it is destroyed.
  if (made.poolBlock.get() != 0) {
    ms::check(cuMemFreeAsync(made.poolBlock.release(), made.stream.get()), "cuMemFreeAsync");
    ms::check(cuStreamSynchronize(made.stream.get()), "cuStreamSynchronize");
    ms::check(cuStreamDestroy(made.stream.release()), "cuStreamDestroy");
  }

  // Unmap before the range is freed; each owner is emptied only once its call succeeded.
  if (made.mapping.get() != 0) {
    const std::size_t granule = findRow(made, Made::Vmm)->bytes;
    ms::check(cuMemUnmap(made.secondMapping.get(), granule), "cuMemUnmap");
    made.secondMapping.release();
    ms::check(cuMemUnmap(made.mapping.get(), granule), "cuMemUnmap");
    made.mapping.release();
    ms::check(cuMemAddressFree(made.reservation.get(), 2 * granule), "cuMemAddressFree");
    made.reservation.release();
  }

  if (made.managed.get() != 0)
    ms::check(cuMemFree(made.managed.release()), "cuMemFree");

  ms::check(cuMemHostUnregister(made.registration.release()), "cuMemHostUnregister");
  made.registeredPages.reset();

  ms::check(cuMemFreeHost(made.hostWc.release()), "cuMemFreeHost");
  ms::check(cuMemFreeHost(made.hostMapped.release()), "cuMemFreeHost");
  ms::check(cuMemFreeHost(made.allocHost.release()), "cuMemFreeHost");
  ms::check(cuMemFree(made.device.release()), "cuMemFree");
  made.plainMalloc.reset();
}

const Known* findRow(const Specimens& specimens, Made made) {
  for (const Known& known : specimens.rows)
    if (known.made == made && known.waived.empty())
      return &known;
  return nullptr;
}

}  // namespace pointer_query
