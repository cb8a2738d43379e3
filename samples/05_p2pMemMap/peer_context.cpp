// The owners of 05_p2pMemMap (see peer_context.hpp): releases only, each in its own context.
#include "peer_context.hpp"

namespace memsamples::p2p {
namespace {

CUdevice deviceOf(int ordinal) {
  CUdevice device = 0;
  check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
  return device;
}

}  // namespace

Endpoint::Endpoint(int ordinalOfDevice)
    : ordinal(ordinalOfDevice), device(deviceOf(ordinalOfDevice)), context(device) {}

Endpoint& Endpoints::add(int ordinal) {
  return *endpoints_.emplace_back(std::make_unique<Endpoint>(ordinal));
}

std::vector<const Endpoint*> Endpoints::all() const {
  std::vector<const Endpoint*> result;
  for (const std::unique_ptr<Endpoint>& endpoint : endpoints_)
    result.push_back(endpoint.get());
  return result;
}

VmmRange::~VmmRange() {
  // Every step is undone even when an earlier undo fails.
  if (mapped)
    (void)cuMemUnmap(base, size);
  if (holdsHandle)
    (void)cuMemRelease(handle);
  if (base != 0)
    (void)cuMemAddressFree(base, size);
}

EnabledPeerAccess::~EnabledPeerAccess() {
  if (!enabled_ || cuCtxPushCurrent(accessor_.ctx()) != CUDA_SUCCESS)
    return;
  // Disabled even when the wait fails: a context in an error state runs nothing more.
  (void)cuCtxSynchronize();
  (void)cuCtxDisablePeerAccess(owner_.ctx());
  CUcontext popped = nullptr;
  (void)cuCtxPopCurrent(&popped);
}

bool adoptPeerAccess(CUresult enable, const Endpoint& accessor, const Endpoint& owner,
                     std::vector<std::unique_ptr<EnabledPeerAccess>>& enabled, const char* file,
                     int line) {
  if (enable == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
    return false;
  check(enable, "cuCtxEnablePeerAccess", file, line);
  enabled.push_back(std::make_unique<EnabledPeerAccess>(accessor, owner));
  return true;
}

SynchronizeOnExit::~SynchronizeOnExit() {
  // Every stream is waited for even when one wait fails: the other devices may still be running.
  for (const Endpoint* endpoint : endpoints_) {
    if (endpoint->stream.get() == nullptr || cuCtxPushCurrent(endpoint->ctx()) != CUDA_SUCCESS)
      continue;
    (void)cuStreamSynchronize(endpoint->stream.get());
    CUcontext popped = nullptr;
    (void)cuCtxPopCurrent(&popped);
  }
}

}  // namespace memsamples::p2p
