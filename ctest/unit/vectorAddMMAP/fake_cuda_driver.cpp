/**
 * @file fake_cuda_driver.cpp
 * @brief The cu* functions of striped_vmm.cpp, run_plan.cpp and memsamples_check.cpp, backed by
 *        a fake machine that enforces the documented rules of each call (see
 *        fake_cuda_driver.hpp).
 *
 * cuda.h comes first so that its versioned-name macros rename these definitions exactly as they
 * rename the callers' calls: a symbol defined here under another name would leave the caller
 * pointing at libcuda, and the link, not the test, would fail.
 */
#include <cuda.h>

#include "fake_call_plan.hpp"
#include "fake_cuda_driver.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fake {
namespace {

// The host page: reservations are sized in it even when the granularity is not involved.
constexpr std::uint64_t kPage = 4096;
// CUdevice is an opaque handle: the fake hands out values that are not ordinals, so code that
// passes an ordinal where a CUdevice belongs (or the reverse) fails here.
constexpr CUdevice kFirstDeviceHandle = 1000;

struct Allocation {
  int device = 0;
  std::uint64_t bytes = 0;
  bool released = false;  // the handle is gone; mappings may still hold the memory
  int mappings = 0;
};

struct Mapping {
  std::uint64_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;
  std::vector<CUmemAccessDesc> access;
};

struct State {
  Machine machine;
  CUdeviceptr nextAddress = 0x7f0000000000ull;
  // Handles start at 0 on purpose: the code under test must not treat 0 as "no handle".
  CUmemGenericAllocationHandle nextHandle = 0;
  std::map<CUdeviceptr, std::uint64_t> reservations;
  std::map<CUmemGenericAllocationHandle, Allocation> allocations;
  std::map<CUdeviceptr, Mapping> mappings;
  memsamples::test::FakeCallPlan calls;
  std::uint64_t lastAlignment = 0;
  std::vector<int> contextStack;  // the device of each current context, the top one last
  std::map<int, int> primaryRetains;
};

State& state() {
  static State instance;
  return instance;
}

// Records the call; returns the planned failure for it, or CUDA_SUCCESS to go on.
CUresult enter(const char* function) {
  return state().calls.enter(function);
}

int deviceCount() {
  return static_cast<int>(state().machine.devices.size());
}

bool validOrdinal(int ordinal) {
  return ordinal >= 0 && ordinal < deviceCount();
}

// A context is an opaque pointer: the fake's encode their device and are never dereferenced.
constexpr std::uintptr_t kFirstContext = 0xC000;
CUcontext contextOf(int ordinal) {
  return reinterpret_cast<CUcontext>(kFirstContext + static_cast<std::uintptr_t>(ordinal));
}
int deviceOfContext(CUcontext context) {
  const auto value = reinterpret_cast<std::uintptr_t>(context);
  const int ordinal = value >= kFirstContext ? static_cast<int>(value - kFirstContext) : -1;
  return validOrdinal(ordinal) ? ordinal : -1;
}

// The ordinal of a CUdevice handle from cuDeviceGet; CUDA_ERROR_INVALID_DEVICE for any other
// value.
CUresult ordinalOf(CUdevice device, int& ordinal) {
  ordinal = device - kFirstDeviceHandle;
  return validOrdinal(ordinal) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// The device a pinned-device allocation property names, or -1 when the property is not one.
int propertyDevice(const CUmemAllocationProp* prop) {
  if (prop == nullptr || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || !validOrdinal(prop->location.id)) {
    return -1;
  }
  return prop->location.id;
}

// Whether device a can access device b's memory; a device always reaches its own.
bool canAccess(int a, int b) {
  const auto& peers = state().machine.peers;
  return a == b || peers.empty() ||
         peers.at(static_cast<std::size_t>(a)).at(static_cast<std::size_t>(b)) == '1';
}

std::uint64_t granularityOf(int ordinal) {
  return state().machine.devices[static_cast<std::size_t>(ordinal)].granularity;
}

bool overlapsReservation(CUdeviceptr start, std::uint64_t bytes) {
  for (const auto& [base, size] : state().reservations) {
    if (start < base + size && base < start + bytes)
      return true;
  }
  return false;
}

bool insideReservation(CUdeviceptr start, std::uint64_t bytes) {
  for (const auto& [base, size] : state().reservations) {
    if (start >= base && start + bytes <= base + size)
      return true;
  }
  return false;
}

bool overlapsMapping(CUdeviceptr start, std::uint64_t bytes) {
  for (const auto& [address, mapping] : state().mappings) {
    if (start < address + mapping.bytes && address < start + bytes)
      return true;
  }
  return false;
}

// The starts of the mappings that exactly tile [start, start + bytes); empty when they do not
// (a hole, or a mapping cut at either end).
std::vector<CUdeviceptr> wholeMappings(CUdeviceptr start, std::uint64_t bytes) {
  std::vector<CUdeviceptr> covered;
  CUdeviceptr position = start;
  while (position < start + bytes) {
    const auto found = state().mappings.find(position);
    if (found == state().mappings.end())
      return {};
    covered.push_back(position);
    position += found->second.bytes;
  }
  if (position != start + bytes)
    return {};
  return covered;
}

// The memory of an allocation lives while its handle or any mapping does.
void freeIfUnused(CUmemGenericAllocationHandle handle) {
  const auto found = state().allocations.find(handle);
  if (found != state().allocations.end() && found->second.released && found->second.mappings == 0)
    state().allocations.erase(found);
}

struct ResultText {
  CUresult result;
  const char* name;
  const char* text;
};
// The driver's own words for the results a test is likely to use.
constexpr ResultText kResultTexts[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

// cuGetErrorName and cuGetErrorString: @p field of @p error's entry.
CUresult lookUpText(const char* function, CUresult error, const char** text,
                    const char* ResultText::*field) {
  if (const CUresult planned = enter(function))
    return planned;
  for (const ResultText& entry : kResultTexts) {
    if (entry.result == error) {
      *text = entry.*field;
      return CUDA_SUCCESS;
    }
  }
  *text = nullptr;  // what the real driver does for a value it does not know
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

// ------------------------------------------------------------------------------ the control API

void reset(const Machine& machine) {
  state() = State{};
  state().machine = machine;
}

void failCall(const std::string& function, int nth, CUresult result) {
  state().calls.fail(function, nth, result);
}

const std::vector<std::string>& callLog() {
  return state().calls.log();
}

std::vector<std::string> driverCalls() {
  std::vector<std::string> calls;
  for (const std::string& call : state().calls.log()) {
    if (call != "cuGetErrorName" && call != "cuGetErrorString")
      calls.push_back(call);
  }
  return calls;
}

int callCount(const std::string& function) {
  return state().calls.count(function);
}

std::string Leftovers::describe() const {
  return std::to_string(reservations) + " reservations, " + std::to_string(mappings) +
         " mappings, " + std::to_string(unreleasedHandles) + " unreleased handles, " +
         std::to_string(physicalBytes) + " bytes of physical memory";
}

Leftovers leftovers() {
  Leftovers result;
  result.reservations = state().reservations.size();
  result.mappings = state().mappings.size();
  for (const auto& entry : state().allocations) {
    result.unreleasedHandles += entry.second.released ? 0 : 1;
    result.physicalBytes += entry.second.bytes;
  }
  return result;
}

std::uint64_t bytesOn(int device) {
  std::uint64_t bytes = 0;
  for (const auto& entry : state().allocations) {
    if (entry.second.device == device)
      bytes += entry.second.bytes;
  }
  return bytes;
}

int deviceMappedAt(CUdeviceptr address) {
  const auto found = state().mappings.find(address);
  return found == state().mappings.end() ? -1 : state().allocations.at(found->second.handle).device;
}

std::vector<CUmemAccessDesc> accessAt(CUdeviceptr address) {
  const auto found = state().mappings.find(address);
  return found == state().mappings.end() ? std::vector<CUmemAccessDesc>{} : found->second.access;
}

std::uint64_t lastReserveAlignment() {
  return state().lastAlignment;
}

int ordinalOfDevice(CUdevice device) {
  int ordinal = -1;
  return ordinalOf(device, ordinal) == CUDA_SUCCESS ? ordinal : -1;
}

void makeCurrent(int ordinal) {
  state().contextStack.push_back(ordinal);
}

std::vector<int> currentDevices() {
  return state().contextStack;
}

int retainedPrimaryContexts() {
  int retains = 0;
  for (const auto& entry : state().primaryRetains)
    retains += entry.second;
  return retains;
}

}  // namespace fake

// ------------------------------------------------------------------------------ the driver

using fake::enter;
using fake::state;

extern "C" {

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  return fake::lookUpText("cuGetErrorName", error, pStr, &fake::ResultText::name);
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  return fake::lookUpText("cuGetErrorString", error, pStr, &fake::ResultText::text);
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (const CUresult planned = enter("cuDeviceGetCount"))
    return planned;
  if (count == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *count = fake::deviceCount();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (const CUresult planned = enter("cuDeviceGet"))
    return planned;
  if (device == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  if (!fake::validOrdinal(ordinal))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = fake::kFirstDeviceHandle + ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (const CUresult planned = enter("cuDeviceGetAttribute"))
    return planned;
  // Only what the code under test reads: any other attribute is a test gap, not a zero.
  if (pi == nullptr || attrib != CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
    return CUDA_ERROR_INVALID_VALUE;
  int ordinal = 0;
  if (const CUresult invalid = fake::ordinalOf(dev, ordinal))
    return invalid;
  *pi = state().machine.devices[static_cast<std::size_t>(ordinal)].vmm ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (const CUresult planned = enter("cuDeviceCanAccessPeer"))
    return planned;
  if (canAccessPeer == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  int a = 0, b = 0;
  if (const CUresult invalid = fake::ordinalOf(dev, a))
    return invalid;
  if (const CUresult invalid = fake::ordinalOf(peerDev, b))
    return invalid;
  // A device is not its own peer: the real driver answers 0 for a == b.
  *canAccessPeer = a != b && fake::canAccess(a, b);
  return CUDA_SUCCESS;
}

// Common's queryPeerLinks(): rank 0, ACCESS_SUPPORTED as cuDeviceCanAccessPeer answers, native
// atomics everywhere; a device paired with itself is refused, as the real driver refuses it.
CUresult CUDAAPI cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib,
                                         CUdevice srcDevice, CUdevice dstDevice) {
  if (const CUresult planned = enter("cuDeviceGetP2PAttribute"))
    return planned;
  int accessor = 0, owner = 0;
  if (const CUresult invalid = fake::ordinalOf(srcDevice, accessor))
    return invalid;
  if (const CUresult invalid = fake::ordinalOf(dstDevice, owner))
    return invalid;
  if (value == nullptr || accessor == owner)
    return CUDA_ERROR_INVALID_DEVICE;
  *value = attrib == CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED ? fake::canAccess(accessor, owner)
           : attrib == CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED ? 1
                                                                       : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  if (const CUresult planned = enter("cuMemGetAllocationGranularity"))
    return planned;
  const int device = fake::propertyDevice(prop);
  if (granularity == nullptr || device < 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!state().machine.devices[static_cast<std::size_t>(device)].vmm)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (option == CU_MEM_ALLOC_GRANULARITY_MINIMUM)
    *granularity = fake::granularityOf(device);
  else if (option == CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    *granularity = state().machine.devices[static_cast<std::size_t>(device)].recommended;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags) {
  if (const CUresult planned = enter("cuMemAddressReserve"))
    return planned;
  // "alignment: must be a power of two, or 0 for the default"; "flags: must be zero".
  if (ptr == nullptr || size == 0 || size % fake::kPage != 0 ||
      (alignment & (alignment - 1)) != 0 || flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::uint64_t align = alignment == 0 ? fake::kPage : alignment;
  // The address is a hint: granted when free and aligned, else the range goes elsewhere.
  CUdeviceptr start = addr;
  if (start == 0 || start % align != 0 || fake::overlapsReservation(start, size)) {
    start = (state().nextAddress + align - 1) / align * align;
    while (fake::overlapsReservation(start, size))
      start += align;
  }
  state().nextAddress = std::max(state().nextAddress, start + size);
  state().reservations[start] = size;
  state().lastAlignment = alignment;
  *ptr = start;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  if (const CUresult planned = enter("cuMemAddressFree"))
    return planned;
  // Only a whole reservation, and only once nothing in it is mapped any more.
  const auto reservation = state().reservations.find(ptr);
  if (reservation == state().reservations.end() || reservation->second != size ||
      fake::overlapsMapping(ptr, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  state().reservations.erase(reservation);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  if (const CUresult planned = enter("cuMemCreate"))
    return planned;
  const int device = fake::propertyDevice(prop);
  if (handle == nullptr || device < 0 || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!state().machine.devices[static_cast<std::size_t>(device)].vmm)
    return CUDA_ERROR_NOT_SUPPORTED;
  // "size: must be a multiple of the granularity" of the device that holds the memory.
  if (size == 0 || size % fake::granularityOf(device) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const CUmemGenericAllocationHandle id = state().nextHandle++;
  state().allocations[id] = fake::Allocation{device, size, false, 0};
  *handle = id;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (const CUresult planned = enter("cuMemRelease"))
    return planned;
  const auto allocation = state().allocations.find(handle);
  if (allocation == state().allocations.end() || allocation->second.released)
    return CUDA_ERROR_INVALID_VALUE;
  allocation->second.released = true;
  fake::freeIfUnused(handle);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags) {
  if (const CUresult planned = enter("cuMemMap"))
    return planned;
  const auto allocation = state().allocations.find(handle);
  if (allocation == state().allocations.end() || allocation->second.released)
    return CUDA_ERROR_INVALID_VALUE;
  // The whole allocation at a granularity-aligned address inside one reservation, over no
  // existing mapping.
  if (offset != 0 || flags != 0 || size != allocation->second.bytes ||
      ptr % fake::granularityOf(allocation->second.device) != 0 ||
      !fake::insideReservation(ptr, size) || fake::overlapsMapping(ptr, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  state().mappings[ptr] = fake::Mapping{size, handle, {}};
  ++allocation->second.mappings;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (const CUresult planned = enter("cuMemUnmap"))
    return planned;
  // "The range must be the entire contiguous address range that was mapped to": whole mappings,
  // no holes.
  const std::vector<CUdeviceptr> covered = fake::wholeMappings(ptr, size);
  if (covered.empty())
    return CUDA_ERROR_INVALID_VALUE;
  for (const CUdeviceptr start : covered) {
    const CUmemGenericAllocationHandle handle = state().mappings.at(start).handle;
    state().mappings.erase(start);
    --state().allocations.at(handle).mappings;
    fake::freeIfUnused(handle);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                size_t count) {
  if (const CUresult planned = enter("cuMemSetAccess"))
    return planned;
  // "The range must be a fully mapped address range containing all allocations".
  const std::vector<CUdeviceptr> covered = fake::wholeMappings(ptr, size);
  if (covered.empty() || desc == nullptr || count == 0)
    return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        !fake::validOrdinal(desc[i].location.id) ||
        (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
         desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
         desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  // Access can only be granted where the hardware allows it: a peer the device cannot reach is
  // refused, as cuDeviceCanAccessPeer predicts.
  for (const CUdeviceptr start : covered) {
    const int backing = state().allocations.at(state().mappings.at(start).handle).device;
    for (std::size_t i = 0; i < count; ++i) {
      if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
          !fake::canAccess(desc[i].location.id, backing)) {
        return CUDA_ERROR_INVALID_DEVICE;
      }
    }
  }
  for (const CUdeviceptr start : covered)
    state().mappings.at(start).access.assign(desc, desc + count);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (const CUresult planned = enter("cuDevicePrimaryCtxRetain"))
    return planned;
  int ordinal = 0;
  if (const CUresult invalid = fake::ordinalOf(dev, ordinal))
    return invalid;
  if (pctx == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  ++state().primaryRetains[ordinal];
  *pctx = fake::contextOf(ordinal);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  if (const CUresult planned = enter("cuDevicePrimaryCtxRelease"))
    return planned;
  int ordinal = 0;
  if (const CUresult invalid = fake::ordinalOf(dev, ordinal))
    return invalid;
  if (state().primaryRetains[ordinal] == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  --state().primaryRetains[ordinal];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  if (const CUresult planned = enter("cuCtxPushCurrent"))
    return planned;
  const int ordinal = fake::deviceOfContext(ctx);
  if (ordinal < 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  state().contextStack.push_back(ordinal);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) {
  if (const CUresult planned = enter("cuCtxPopCurrent"))
    return planned;
  if (state().contextStack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  const int ordinal = state().contextStack.back();
  state().contextStack.pop_back();
  if (pctx != nullptr)
    *pctx = fake::contextOf(ordinal);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(size_t* free, size_t* total) {
  if (const CUresult planned = enter("cuMemGetInfo"))
    return planned;
  // It answers for the current context's device, which is why the code under test must make a
  // peer's context current to ask about it.
  if (state().contextStack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (free == nullptr || total == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  const auto device = static_cast<std::size_t>(state().contextStack.back());
  *free = state().machine.devices[device].freeBytes;
  *total = *free + (1ull << 30);
  return CUDA_SUCCESS;
}

}  // extern "C"
