// The endpoints and owners of 05_p2pMemMap, and peer access pair by pair (see peer_context.hpp).
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

Endpoints::Endpoints(const PairPlan& plan) : plan_(plan) {
  for (const int ordinal : plan.endpoints) {
    endpoints_.push_back(std::make_unique<Endpoint>(ordinal));
    endpoints_.back()->index = endpoints_.size() - 1;
  }
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

PeerAccess::PeerAccess(PeerAccess&& other) noexcept
    : accessor_(other.accessor_),
      owner_(std::exchange(other.owner_, nullptr)),
      adopted_(other.adopted_),
      refusal_(std::move(other.refusal_)) {}

PeerAccess::~PeerAccess() {
  if (owner_ == nullptr || cuCtxPushCurrent(accessor_->ctx()) != CUDA_SUCCESS)
    return;
  // Disabled even when the wait fails: a context in an error state runs nothing more.
  (void)cuCtxSynchronize();
  (void)cuCtxDisablePeerAccess(owner_->ctx());
  CUcontext popped = nullptr;
  (void)cuCtxPopCurrent(&popped);
}

bool isPeerRefusal(CUresult result) noexcept {
  return result == CUDA_ERROR_TOO_MANY_PEERS || result == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}

PeerAccess adoptPeerAccess(CUresult enable, const Endpoint& accessor, const Endpoint& owner,
                           const char* file, int line) {
  PeerAccess access;
  if (accessor.ctx() == owner.ctx())
    return access;  // one context reaches its own allocations
  access.accessor_ = &accessor;
  if (enable == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
    access.adopted_ = true;
  } else if (isPeerRefusal(enable)) {
    access.refusal_ = "cuCtxEnablePeerAccess refused: " + describeResult(enable);
  } else {
    check(enable, "cuCtxEnablePeerAccess", file, line);
    access.owner_ = &owner;
  }
  return access;
}

// [pair-by-pair]
std::vector<PeerRefusal> measurePairByPair(const Endpoints& endpoints,
                                           const std::vector<DevicePair>& pairs, bool bothWays,
                                           const std::function<void(const DevicePair&)>& measure) {
  std::vector<PeerRefusal> refusals;
  for (const DevicePair& pair : pairs) {
    std::vector<DevicePair> directions = {pair};
    if (bothWays)
      directions.push_back({pair.accessor, pair.owner});
    std::vector<PeerAccess> enabled;  // each disables its own on an error path
    enabled.reserve(directions.size());
    for (const DevicePair& direction : directions) {
      const Endpoint& accessor = endpoints.accessor(direction);
      const Endpoint& owner = endpoints.owner(direction);
      const ScopedContext onAccessor(accessor.ctx());  // the current context gains the access
      const bool needed = needsPeerAccess(direction);  // one device: its context reaches all
      const CUresult enable = needed ? cuCtxEnablePeerAccess(owner.ctx(), 0) : CUDA_SUCCESS;
      if (enabled.emplace_back(adoptPeerAccess(enable, accessor, owner)).refused())
        break;
    }
    if (enabled.back().refused())
      refusals.push_back({pair, enabled.back().refusal()});
    else
      measure(pair);
    for (PeerAccess& access : enabled) {
      if (!access.ours())
        continue;
      const ScopedContext onAccessor(access.accessor()->ctx());
      check(cuCtxSynchronize(), "cuCtxSynchronize");  // nothing may still use the mapping
      check(cuCtxDisablePeerAccess(access.release()), "cuCtxDisablePeerAccess");
    }
  }
  return refusals;
}
// [pair-by-pair]

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
