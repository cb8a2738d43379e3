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

Endpoint::Endpoint(int ordinalOfDevice, std::size_t indexInPlan)
    : ordinal(ordinalOfDevice), context(deviceOf(ordinalOfDevice)), index(indexInPlan) {}

Endpoints::Endpoints(const PairPlan& pairPlan) : plan(pairPlan) {
  for (const int ordinal : plan.endpoints)
    all.emplace_back(ordinal, all.size());
}

CUresult synchronizeAndDisablePeerAccess(CUcontext owner) {
  (void)cuCtxSynchronize();
  return cuCtxDisablePeerAccess(owner);
}

std::string enablePeerAccess(const Endpoint& accessor, const Endpoint& owner,
                             EnabledPeerAccess& ours, const char* file, int line) {
  if (accessor.ctx == owner.ctx)
    return "";  // one context reaches its own allocations
  const ScopedContext onAccessor(accessor.ctx);  // the current context gains the access
  const CUresult enable = cuCtxEnablePeerAccess(owner.ctx, 0);
  if (enable == CUDA_ERROR_TOO_MANY_PEERS || enable == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
    return "cuCtxEnablePeerAccess refused: " + describeResult(enable);
  if (enable != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
    check(enable, "cuCtxEnablePeerAccess", file, line);
    *ours.out() = owner.ctx;
  }
  return "";
}

// [pair-by-pair]
std::vector<PeerRefusal> measurePairByPair(const Endpoints& endpoints,
                                           const std::vector<DevicePair>& pairs, bool bothWays,
                                           const std::function<void(const DevicePair&)>& measure) {
  std::vector<PeerRefusal> refusals;
  for (const DevicePair& pair : pairs) {
    // The pair's accessor pulls from its owner; both ways, the owner also pulls from it. Each
    // owner of access disables its own on an error path.
    const Endpoint& owner = endpoints.owner(pair);
    const Endpoint& accessor = endpoints.accessor(pair);
    EnabledPeerAccess forward(accessor.ctx);
    EnabledPeerAccess backward(owner.ctx);
    std::string refusal = enablePeerAccess(accessor, owner, forward);
    if (refusal.empty() && bothWays)
      refusal = enablePeerAccess(owner, accessor, backward);
    if (refusal.empty())
      measure(pair);
    else
      refusals.push_back({pair, refusal});
    for (const auto& [access, context] :
         {std::pair{&forward, accessor.ctx}, std::pair{&backward, owner.ctx}}) {
      if (access->get() == nullptr)
        continue;
      const ScopedContext onAccessor(context);
      check(cuCtxSynchronize(), "cuCtxSynchronize");  // nothing may still use the mapping
      check(cuCtxDisablePeerAccess(access->release()), "cuCtxDisablePeerAccess");
    }
  }
  return refusals;
}
// [pair-by-pair]

SynchronizeOnExit::~SynchronizeOnExit() {
  // Every stream is waited for even when one wait fails: the other devices may still be running.
  for (const Endpoint* endpoint : endpoints) {
    if (endpoint->stream.get() == nullptr || cuCtxPushCurrent(endpoint->ctx) != CUDA_SUCCESS)
      continue;
    (void)cuStreamSynchronize(endpoint->stream.get());
    CUcontext popped = nullptr;
    (void)cuCtxPopCurrent(&popped);
  }
}

}  // namespace memsamples::p2p
