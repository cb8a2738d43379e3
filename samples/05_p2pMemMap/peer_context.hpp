/**
 * @file peer_context.hpp
 * @brief The endpoints of 05_p2pMemMap and the owners of what the lesson creates, each releasing
 *        in the context it belongs to; and classic peer access, a pair at a time.
 *
 * With several GPUs every handle belongs to one context (a module, a stream, an event,
 * cuMemAlloc memory), and several calls act on the **current** context: cuCtxEnablePeerAccess
 * grants the current context access to another one, a module is unloaded from the current
 * context, an event is recorded on a stream of its own context. memsamples::ScopedContext makes
 * a context current for a scope (cuCtxPushCurrent / cuCtxPopCurrent). Common's InContext owners
 * (ContextModule, ContextStream, ContextEvent, ContextMemory) remember their context and push it
 * for the release, because the context on top of the stack when an owner dies, e.g. while an
 * exception unwinds, is often another device's. None of them creates anything: the code writes
 * every creation, e.g. `check(cuMemAlloc(buffer.out(), bytes), "cuMemAlloc")` with the owner's
 * context current.
 *
 * Classic peer access is a scarce resource: without NVSwitch a GPU maps at most 8 peers at once,
 * and cuCtxEnablePeerAccess answers CUDA_ERROR_TOO_MANY_PEERS beyond that. So the sample never
 * keeps it: each pair enables it, measures and disables it again (the lesson's classic path,
 * measurePairByPair() for the copies), and a pair the driver refuses is reported, not failed.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "memsamples.hpp"
#include "p2p_logic.hpp"

namespace memsamples::p2p {

/**
 * One endpoint (see PairPlan): what the sample keeps for one side of a transfer, all in the
 * device's primary context: the two kernels, each from a module loaded into that context, the
 * source and destination of step 8's copies, and a stream. The constructor only retains the
 * primary context (Common's PrimaryContext, the same context the runtime API uses); prepareRun()
 * and measureCopies() make the rest into the members. Members are destroyed in reverse order:
 * the stream, once its work is done, then the memory and the modules, each in this context, then
 * the retain. Several endpoints may share one device (a loopback run has two).
 */
struct Endpoint {
  /// Retains the primary context of device @p ordinal for the endpoint @p index of its plan.
  /// @throws CudaError.
  explicit Endpoint(int ordinal, std::size_t index = 0);

  int ordinal;                                   ///< The device ordinal.
  PrimaryContext context;                        ///< The device's primary context, retained.
  CUcontext ctx = context.get();                 ///< That context, e.g. for ScopedContext.
  ContextModule vectorAddModule{context.get()};  ///< vectorAdd_kernel.fatbin, loaded here.
  ContextModule copyModule{context.get()};       ///< copy_kernel.fatbin, loaded here.
  ContextMemory source{context.get()};           ///< Step 8: holds this endpoint's pattern.
  ContextMemory destination{context.get()};      ///< Step 8: where the copies into it land.
  ContextStream stream{context.get()};           ///< Where this endpoint's work is queued.
  CUfunction vectorAdd = nullptr;                ///< VecAdd_kernel of vectorAddModule.
  CUfunction copy = nullptr;                     ///< Copy_kernel of copyModule.
  unsigned int copyGrid = 0;  ///< Blocks of Copy_kernel that fill the device (occupancy x SMs).
  std::size_t index;          ///< Its place in PairPlan::endpoints.

  /// The seed of the pattern its source holds: sourceSeed() of its index.
  std::uint32_t seed() const noexcept { return sourceSeed(static_cast<int>(index)); }
};

/// The endpoints of a PairPlan, in the order of PairPlan::endpoints, found by the role they play
/// in a pair. A deque, because Endpoint is not movable (others hold references) and a deque never
/// moves what it holds.
struct Endpoints {
  /// One Endpoint per entry of PairPlan::endpoints, in order; @p plan must outlive this object.
  /// @throws CudaError.
  explicit Endpoints(const PairPlan& plan);
  /// The endpoint that plays the owner of @p pair (p2p::ownerEndpoint()).
  const Endpoint& owner(const DevicePair& pair) const { return all.at(ownerEndpoint(plan, pair)); }
  /// The endpoint that plays the accessor of @p pair (p2p::accessorEndpoint()).
  const Endpoint& accessor(const DevicePair& pair) const {
    return all.at(accessorEndpoint(plan, pair));
  }

  const PairPlan& plan;      ///< The plan they were made for.
  std::deque<Endpoint> all;  ///< Every endpoint, in the order of PairPlan::endpoints.
};

/// What an EnabledPeerAccess calls on an error path, with the accessor's context current:
/// cuCtxSynchronize, so that nothing still uses the mapping, then cuCtxDisablePeerAccess(@p owner)
/// even when the wait failed (a context in an error state runs nothing more).
/// @return cuCtxDisablePeerAccess's answer.
CUresult synchronizeAndDisablePeerAccess(CUcontext owner);

/**
 * Classic peer access that this code enabled, while it is still to be disabled: Common's owner of
 * a handle of one context, here the context the accessor's context reaches (empty: nothing to
 * undo), kept in the accessor's context (the one that gained the access). Access that other code
 * enabled (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: a primary context is the whole process's) is
 * used and never recorded here, so it is left on. On an error path the owner disables it
 * (synchronizeAndDisablePeerAccess(), answers ignored); the good path gives it up with release()
 * for its own checked cuCtxDisablePeerAccess.
 */
using EnabledPeerAccess = InContext<CUcontext, synchronizeAndDisablePeerAccess>;

/**
 * With @p accessor's context current, cuCtxEnablePeerAccess(@p owner's context), judged as the
 * lesson's classic path judges it: CUDA_SUCCESS is recorded in @p ours (to be disabled);
 * CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED is used and left on; CUDA_ERROR_TOO_MANY_PEERS (8 peers
 * without NVSwitch) and CUDA_ERROR_PEER_ACCESS_UNSUPPORTED are a refusal, returned. Endpoints of
 * one context need no access (the driver refuses a context as its own peer): nothing is called.
 * @return "cuCtxEnablePeerAccess refused: CUDA_ERROR_TOO_MANY_PEERS (...)", or empty.
 * @throws CudaError naming cuCtxEnablePeerAccess at the caller's @p file : @p line for any other
 *         answer.
 */
std::string enablePeerAccess(const Endpoint& accessor, const Endpoint& owner,
                             EnabledPeerAccess& ours, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE());

/**
 * Step 8's rule for classic peer access, pair by pair. For each of @p pairs in turn: with each
 * accessor's context current, cuCtxEnablePeerAccess to its owner's context (the pair's
 * accessor pulls from its owner, and with @p bothWays the owner's endpoint also pulls from the
 * accessor's); then @p measure(pair); then cuCtxSynchronize and cuCtxDisablePeerAccess for
 * what was enabled here, checked. So at most two peer mappings exist at a time, however many
 * GPUs the machine has. A pair the driver refuses (enablePeerAccess()) is not measured: it is
 * returned with the answer, and the run goes on. Pairs on one device need no access.
 * @return the refused pairs, in order; empty when every pair was measured.
 * @throws CudaError for any other failed call, and whatever @p measure throws (the owners then
 *         disable what was enabled).
 */
std::vector<PeerRefusal> measurePairByPair(const Endpoints& endpoints,
                                           const std::vector<DevicePair>& pairs, bool bothWays,
                                           const std::function<void(const DevicePair&)>& measure);

/**
 * Waits, when it is destroyed, for the streams of some endpoints (each with its own context
 * current), errors ignored. Declare it right **after** memory that those streams use: C++
 * destroys in reverse order, so on every path out of the scope, an exception included, no
 * kernel or copy still runs when the memory is unmapped or freed.
 */
struct SynchronizeOnExit {
  /// cuStreamSynchronize on each endpoint's stream, in its context; never throws.
  ~SynchronizeOnExit();

  std::vector<const Endpoint*> endpoints;  ///< Not owned: they must outlive this object.
};

}  // namespace memsamples::p2p
