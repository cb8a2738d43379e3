// A fake libcuda for a whole run of 11_pointerQuery on a machine without a GPU: the lesson's own
// files and Common's driver half, linked against these definitions (a link seam) instead of the
// driver. It keeps every allocation, mapping, handle and descriptor the lesson makes, answers
// about them as cuda.h describes (and as the H100 answered: DMA_BUF_SUPPORTED 1,
// HOST_ALLOC_DMA_BUF_SUPPORTED 0, cuMemHostGetFlags of cuMemAllocHost memory 0x2), answers an
// unknown address as the real driver does (the plural call: CUDA_SUCCESS, MAPPED = 0, the rest
// untouched; the singular calls: CUDA_ERROR_INVALID_VALUE), and plays compute-sanitizer's part:
// cuCtxDestroy fails, saying why, when anything is still allocated, mapped or retained, when a
// dma-buf descriptor is still open, or when a call returned an error the run did not expect
// (FAKE_EXPECTED_ERRORS, default 0). FAKE_LIMITED=1 makes a device without managed memory, VMM,
// pools or dma-buf, that reads pageable memory.
#include <cuda.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fake_answers.hpp"
#include "pointer_classify.hpp"

using fake_answers::answer;
using fake_answers::put;

namespace {

using pointer_query::PointerFacts;

CUcontext const kContext = reinterpret_cast<CUcontext>(std::uintptr_t{0xc0});
CUmemoryPool const kPool = reinterpret_cast<CUmemoryPool>(std::uintptr_t{0x9001});
CUstream const kStream = reinterpret_cast<CUstream>(std::uintptr_t{0x5000});
constexpr std::size_t kGranule = 2u << 20;

bool limited() {
  const char* value = std::getenv("FAKE_LIMITED");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

/// One range the fake knows: its answers, and what the lesson must give back.
struct Range {
  std::size_t size = 0;
  PointerFacts facts;
  unsigned int hostFlags = 0;
  bool hostFlagsKnown = false;  // cuMemAllocHost / cuMemHostAlloc memory
  const char* kind = "";
};

struct Handle {
  std::size_t size = 0;
  CUmemAllocationProp prop = {};
  int references = 0;
};

struct Mapping {
  std::size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
};

struct State {
  std::map<CUdeviceptr, Range> ranges;                      // allocations by base
  std::map<CUdeviceptr, std::size_t> reservations;          // cuMemAddressReserve
  std::map<CUdeviceptr, Mapping> mappings;                  // cuMemMap
  std::map<CUmemGenericAllocationHandle, Handle> handles;   // cuMemCreate
  std::vector<int> descriptors;                             // dma-buf fds handed out
  CUdeviceptr nextDevice = 0x7f0000000000;
  CUdeviceptr nextHost = 0x500000000000;
  CUmemGenericAllocationHandle nextHandle = 1;
  bool contextLive = false;
  int errors = 0;
  std::string problems;
};

State& state() {
  static State instance;
  return instance;
}

CUresult refuse(const char* call) {
  ++state().errors;
  std::fprintf(stderr, "fake driver: %s refused (an API error for compute-sanitizer)\n", call);
  return CUDA_ERROR_INVALID_VALUE;
}

/// The range holding @p address, or nullptr.
const Range* find(CUdeviceptr address, CUdeviceptr* base = nullptr) {
  for (const auto& [start, range] : state().ranges) {
    if (address >= start && address < start + range.size) {
      if (base)
        *base = start;
      return &range;
    }
  }
  return nullptr;
}

CUdeviceptr deviceAddress(std::size_t bytes) {
  const CUdeviceptr address = state().nextDevice;
  state().nextDevice += (bytes + kGranule - 1) / kGranule * kGranule;  // contiguous blocks
  return address;
}

Range deviceRange(CUdeviceptr address, std::size_t bytes, const char* kind) {
  Range range;
  range.size = bytes;
  range.kind = kind;
  range.facts.memoryType = CU_MEMORYTYPE_DEVICE;
  range.facts.devicePointer = address;
  range.facts.context = kContext;
  range.facts.deviceOrdinal = 0;
  range.facts.rangeStart = address;
  range.facts.rangeSize = bytes;
  range.facts.mapped = 1;
  range.facts.accessFlags = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
  return range;
}

Range hostRange(void* host, std::size_t bytes, unsigned int flags, bool allocated,
                const char* kind) {
  Range range;
  range.size = bytes;
  range.kind = kind;
  range.facts.memoryType = CU_MEMORYTYPE_HOST;
  range.facts.devicePointer = reinterpret_cast<CUdeviceptr>(host);
  range.facts.hostPointer = host;
  range.facts.context = kContext;
  range.facts.deviceOrdinal = 0;
  range.facts.mapped = 1;
  range.hostFlags = flags | CU_MEMHOSTALLOC_DEVICEMAP;  // unified addressing implies it
  range.hostFlagsKnown = allocated;
  return range;
}

}  // namespace

// --- Errors, the driver, the device ---------------------------------------------------------

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_VALUE ? "invalid argument" : "unknown error";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal != 0)
    return refuse("cuDeviceGet");
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice) {
  std::snprintf(name, static_cast<std::size_t>(length), "Fake GPU");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
      *value = CU_COMPUTEMODE_DEFAULT;
      break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
      *value = limited() ? 1 : 0;
      break;
    case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
      *value = limited() ? 0 : 1;
      break;
    default:
      *value = 1;
      break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetPCIBusId(char* busId, int length, CUdevice) {
  std::snprintf(busId, static_cast<std::size_t>(length), "0000:00:06.0");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice* device, const char* busId) {
  if (std::strcmp(busId, "0000:00:06.0") != 0)
    return refuse("cuDeviceGetByPCIBusId");
  *device = 0;
  return CUDA_SUCCESS;
}

// --- The context: where the fake says what the run left behind --------------------------------

CUresult CUDAAPI cuCtxCreate(CUcontext* context, CUctxCreateParams*, unsigned int, CUdevice) {
  state().contextLive = true;
  *context = kContext;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxDestroy(CUcontext context) {
  State& s = state();
  if (context != kContext || !s.contextLive)
    return refuse("cuCtxDestroy");
  s.contextLive = false;
  std::string left;
  for (const auto& [base, range] : s.ranges)
    left += std::string(" ") + range.kind;
  if (!s.reservations.empty())
    left += " a reservation";
  if (!s.mappings.empty())
    left += " a mapping";
  for (const auto& [id, handle] : s.handles)
    if (handle.references > 0)
      left += " an allocation handle";
  for (int fd : s.descriptors)
    if (fcntl(fd, F_GETFD) != -1)
      left += " an open dma-buf descriptor";
  const char* expected = std::getenv("FAKE_EXPECTED_ERRORS");
  const int allowed = expected ? std::atoi(expected) : 0;
  if (!left.empty() || s.errors != allowed) {
    std::fprintf(stderr, "FAKE: left behind:%s; API errors %d (expected %d)\n",
                 left.empty() ? " nothing" : left.c_str(), s.errors, allowed);
    return CUDA_ERROR_UNKNOWN;
  }
  return CUDA_SUCCESS;
}

// --- Memory ---------------------------------------------------------------------------------

CUresult CUDAAPI cuMemGetInfo(std::size_t* freeBytes, std::size_t* totalBytes) {
  *freeBytes = std::size_t{64} << 30;
  *totalBytes = std::size_t{80} << 30;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* address, std::size_t bytes) {
  *address = deviceAddress(bytes);
  Range range = deviceRange(*address, bytes, "cuMemAlloc");
  range.facts.legacyIpc = 1;
  state().ranges[*address] = range;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr address) {
  const auto found = state().ranges.find(address);
  if (found == state().ranges.end())
    return refuse("cuMemFree");
  state().ranges.erase(found);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* address, std::size_t bytes, unsigned int) {
  *address = deviceAddress(bytes);
  Range range = deviceRange(*address, bytes, "cuMemAllocManaged");
  range.facts.isManaged = 1;
  range.facts.hostPointer = reinterpret_cast<void*>(*address);
  state().ranges[*address] = range;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostAlloc(void** host, std::size_t bytes, unsigned int flags) {
  *host = reinterpret_cast<void*>(state().nextHost);
  state().nextHost += bytes + kGranule;
  state().ranges[reinterpret_cast<CUdeviceptr>(*host)] =
      hostRange(*host, bytes, flags, true, "cuMemHostAlloc");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocHost(void** host, std::size_t bytes) {
  return cuMemHostAlloc(host, bytes, 0);
}
CUresult CUDAAPI cuMemFreeHost(void* host) {
  const auto found = state().ranges.find(reinterpret_cast<CUdeviceptr>(host));
  if (found == state().ranges.end() || !found->second.hostFlagsKnown)
    return refuse("cuMemFreeHost");
  state().ranges.erase(found);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostRegister(void* host, std::size_t bytes, unsigned int flags) {
  state().ranges[reinterpret_cast<CUdeviceptr>(host)] =
      hostRange(host, bytes, flags, false, "cuMemHostRegister");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostUnregister(void* host) {
  const auto found = state().ranges.find(reinterpret_cast<CUdeviceptr>(host));
  if (found == state().ranges.end() || found->second.hostFlagsKnown)
    return refuse("cuMemHostUnregister");
  state().ranges.erase(found);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* device, void* host, unsigned int) {
  const Range* range = find(reinterpret_cast<CUdeviceptr>(host));
  if (range == nullptr || range->facts.memoryType != CU_MEMORYTYPE_HOST)
    return refuse("cuMemHostGetDevicePointer");
  *device = range->facts.devicePointer;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetFlags(unsigned int* flags, void* host) {
  const Range* range = find(reinterpret_cast<CUdeviceptr>(host));
  if (range == nullptr || !range->hostFlagsKnown)
    return refuse("cuMemHostGetFlags");
  *flags = range->hostFlags;
  return CUDA_SUCCESS;
}

// --- Virtual memory management -----------------------------------------------------------------

CUresult CUDAAPI cuMemGetAllocationGranularity(std::size_t* granularity,
                                               const CUmemAllocationProp*,
                                               CUmemAllocationGranularity_flags) {
  *granularity = kGranule;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* address, std::size_t bytes, std::size_t,
                                     CUdeviceptr, unsigned long long) {
  *address = deviceAddress(bytes);
  state().reservations[*address] = bytes;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr address, std::size_t bytes) {
  const auto found = state().reservations.find(address);
  if (found == state().reservations.end() || found->second != bytes)
    return refuse("cuMemAddressFree");
  for (const auto& [base, mapping] : state().mappings)
    if (base >= address && base < address + bytes)
      return refuse("cuMemAddressFree (still mapped)");
  state().reservations.erase(found);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, std::size_t bytes,
                             const CUmemAllocationProp* prop, unsigned long long) {
  *handle = state().nextHandle++;
  state().handles[*handle] = Handle{bytes, *prop, 1};
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  const auto found = state().handles.find(handle);
  if (found == state().handles.end() || found->second.references <= 0)
    return refuse("cuMemRelease");
  --found->second.references;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemMap(CUdeviceptr address, std::size_t bytes, std::size_t,
                          CUmemGenericAllocationHandle handle, unsigned long long) {
  State& s = state();
  const auto handleFound = s.handles.find(handle);
  if (handleFound == s.handles.end())
    return refuse("cuMemMap");
  for (const auto& [base, size] : s.reservations) {
    if (address >= base && address + bytes <= base + size) {
      s.mappings[address] = Mapping{bytes, handle};
      ++handleFound->second.references;  // the mapping keeps the memory
      Range range = deviceRange(address, bytes, "a VMM mapping");
      range.facts.context = nullptr;
      range.facts.rangeStart = base;
      range.facts.rangeSize = size;
      range.facts.handleTypes = handleFound->second.prop.requestedHandleTypes;
      s.ranges[address] = range;
      return CUDA_SUCCESS;
    }
  }
  return refuse("cuMemMap (outside every reservation)");
}
CUresult CUDAAPI cuMemUnmap(CUdeviceptr address, std::size_t bytes) {
  State& s = state();
  const auto found = s.mappings.find(address);
  if (found == s.mappings.end() || found->second.size != bytes)
    return refuse("cuMemUnmap");
  --s.handles[found->second.handle].references;
  s.mappings.erase(found);
  s.ranges.erase(address);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr, std::size_t, const CUmemAccessDesc*, std::size_t) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* address) {
  const auto found = state().mappings.find(reinterpret_cast<CUdeviceptr>(address));
  if (found == state().mappings.end())
    return refuse("cuMemRetainAllocationHandle");
  ++state().handles[found->second.handle].references;
  *handle = found->second.handle;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                        CUmemGenericAllocationHandle handle) {
  const auto found = state().handles.find(handle);
  if (found == state().handles.end() || found->second.references <= 0)
    return refuse("cuMemGetAllocationPropertiesFromHandle");
  *prop = found->second.prop;
  return CUDA_SUCCESS;
}

// --- Pools and streams ------------------------------------------------------------------------

CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation*, CUmemAllocationType) {
  *pool = kPool;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  *stream = kStream;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  return stream == kStream ? CUDA_SUCCESS : refuse("cuStreamDestroy");
}
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* address, std::size_t bytes, CUstream) {
  *address = deviceAddress(bytes);
  Range range = deviceRange(*address, bytes, "cuMemAllocAsync");
  range.facts.context = nullptr;
  range.facts.memPool = kPool;
  state().ranges[*address] = range;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr address, CUstream) { return cuMemFree(address); }

// --- The questions ------------------------------------------------------------------------------

CUresult CUDAAPI cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes,
                                        void** data, CUdeviceptr address) {
  const Range* range = find(address);
  for (unsigned int i = 0; i < count; ++i) {
    if (range == nullptr) {
      // An address nobody allocated: MAPPED says 0; everything else is left as it was.
      if (attributes[i] == CU_POINTER_ATTRIBUTE_MAPPED)
        put(data[i], false);
      continue;
    }
    // cuda.h's list for the plural call leaves ACCESS_FLAGS out: treated as a bad argument.
    if (attributes[i] == CU_POINTER_ATTRIBUTE_ACCESS_FLAGS ||
        !answer(attributes[i], range->facts, data[i]))
      return refuse("cuPointerGetAttributes (an attribute outside its list)");
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                       CUdeviceptr address) {
  const Range* range = find(address);
  if (range == nullptr || !answer(attribute, range->facts, data))
    return refuse("cuPointerGetAttribute");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerSetAttribute(const void* value, CUpointer_attribute attribute,
                                       CUdeviceptr address) {
  CUdeviceptr base = 0;
  if (find(address, &base) == nullptr || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
    return refuse("cuPointerSetAttribute");
  unsigned int on = 0;
  std::memcpy(&on, value, sizeof on);
  state().ranges[base].facts.syncMemops = on;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* base, std::size_t* size, CUdeviceptr address) {
  CUdeviceptr start = 0;
  const Range* range = find(address, &start);
  if (range == nullptr)
    return refuse("cuMemGetAddressRange");
  *base = start;  // for VMM, the mapping
  *size = range->size;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetHandleForAddressRange(void* handle, CUdeviceptr address,
                                               std::size_t bytes, CUmemRangeHandleType type,
                                               unsigned long long) {
  const Range* range = find(address);
  const bool allowed = range != nullptr && range->facts.memoryType == CU_MEMORYTYPE_DEVICE &&
                       range->facts.isManaged == 0 && range->facts.memPool == nullptr;
  if (!allowed || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || address % 4096 != 0 ||
      bytes % 4096 != 0)
    return refuse("cuMemGetHandleForAddressRange");
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  state().descriptors.push_back(fd);
  put(handle, fd);
  return CUDA_SUCCESS;
}
