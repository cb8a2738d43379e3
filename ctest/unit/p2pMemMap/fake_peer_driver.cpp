// The fake driver of peer_access_test.cpp (see fake_peer_driver.hpp). Calls the tested code does
// not reach on these paths answer CUDA_ERROR_NOT_SUPPORTED, so a test that reaches one fails.
#include "fake_peer_driver.hpp"

#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>

#include "fake_call_plan.hpp"

namespace fake_peer {
namespace {

struct Machine {
  memsamples::test::FakeCallPlan calls;
  std::vector<CUcontext> stack;
  std::set<std::pair<CUcontext, CUcontext>> access;  // (accessor, owner)
  std::vector<CUcontext> disabledFrom;
  std::vector<int> retained = std::vector<int>(2);  // per device
  int mostPeers = 0;
};

Machine& machine() {
  static Machine instance;
  return instance;
}

// Device d's primary context: a fixed, recognisable non-null handle.
CUcontext primaryOf(CUdevice device) {
  return reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(0x1000 + device));
}

CUcontext current() {
  return machine().stack.empty() ? nullptr : machine().stack.back();
}

bool validDevice(CUdevice device) {
  return device >= 0 && device < static_cast<int>(machine().retained.size());
}

// The peers @p accessor may access now.
int peersOf(CUcontext accessor) {
  int peers = 0;
  for (const auto& [who, owner] : machine().access)
    peers += who == accessor ? 1 : 0;
  return peers;
}

}  // namespace

void reset() {
  machine() = Machine{};
}
void setDeviceCount(int count) {
  machine().retained.assign(static_cast<std::size_t>(count), 0);
}
int mostPeersAtOnce() {
  return machine().mostPeers;
}
void failCall(const std::string& function, int nth, CUresult result) {
  machine().calls.fail(function, nth, result);
}
int callCount(const std::string& function) {
  return machine().calls.count(function);
}
void enableElsewhere(CUcontext accessor, CUcontext owner) {
  machine().access.insert({accessor, owner});
}
bool accessEnabled(CUcontext accessor, CUcontext owner) {
  return machine().access.count({accessor, owner}) != 0;
}
const std::vector<CUcontext>& contextStack() {
  return machine().stack;
}
const std::vector<CUcontext>& disabledFrom() {
  return machine().disabledFrom;
}

}  // namespace fake_peer

using fake_peer::machine;

#define FAKE_ENTER(name)                                                             \
  if (const CUresult planned = machine().calls.enter(name); planned != CUDA_SUCCESS) \
  return planned

extern "C" {

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** text) {
  switch (error) {
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
      *text = "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED";
      break;
    case CUDA_ERROR_TOO_MANY_PEERS:
      *text = "CUDA_ERROR_TOO_MANY_PEERS";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *text = "CUDA_ERROR_INVALID_VALUE";
      break;
    default:
      *text = "CUDA_ERROR_FAKE";
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult, const char** text) {
  *text = "fake driver error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (!fake_peer::validDevice(ordinal))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* count) {
  FAKE_ENTER("cuDeviceGetCount");
  *count = static_cast<int>(machine().retained.size());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  if (!fake_peer::validDevice(device))
    return CUDA_ERROR_INVALID_DEVICE;
  ++machine().retained[static_cast<std::size_t>(device)];
  *context = fake_peer::primaryOf(device);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease");
  if (!fake_peer::validDevice(device) || machine().retained[static_cast<std::size_t>(device)] == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  --machine().retained[static_cast<std::size_t>(device)];
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPushCurrent(CUcontext context) {
  FAKE_ENTER("cuCtxPushCurrent");
  if (context == nullptr)
    return CUDA_ERROR_INVALID_CONTEXT;
  machine().stack.push_back(context);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* context) {
  FAKE_ENTER("cuCtxPopCurrent");
  if (machine().stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (context != nullptr)
    *context = machine().stack.back();
  machine().stack.pop_back();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize() {
  FAKE_ENTER("cuCtxSynchronize");
  return fake_peer::current() == nullptr ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  FAKE_ENTER("cuCtxEnablePeerAccess");
  const CUcontext self = fake_peer::current();
  if (self == nullptr)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (flags != 0 || peer == nullptr || peer == self)
    return CUDA_ERROR_INVALID_VALUE;
  if (machine().access.count({self, peer}) != 0)
    return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  if (fake_peer::peersOf(self) >= fake_peer::kPeerLimit)
    return CUDA_ERROR_TOO_MANY_PEERS;
  machine().access.insert({self, peer});
  machine().mostPeers = std::max(machine().mostPeers, fake_peer::peersOf(self));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peer) {
  FAKE_ENTER("cuCtxDisablePeerAccess");
  machine().disabledFrom.push_back(fake_peer::current());
  return machine().access.erase({fake_peer::current(), peer}) == 1
             ? CUDA_SUCCESS
             : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

// Reached by Common and by the owners only with a handle to release, which these tests never
// create: answering NOT_SUPPORTED makes an unexpected use visible.
CUresult CUDAAPI cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuDeviceGetName(char*, int, CUdevice) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuStreamDestroy(CUstream) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuDriverGetVersion(int*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuLaunchHostFunc(CUstream, CUhostFn, void*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuEventCreate(CUevent*, unsigned int) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuEventRecord(CUevent, CUstream) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuEventElapsedTime(float*, CUevent, CUevent) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuEventDestroy(CUevent) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int*, CUfunction, int, size_t) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuModuleUnload(CUmodule) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuMemUnmap(CUdeviceptr, size_t) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr, size_t) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // extern "C"
