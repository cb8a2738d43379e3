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
#include <functional>
#include <memory>
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
  /// Retains the primary context of device @p ordinal. @throws CudaError.
  explicit Endpoint(int ordinal);

  int ordinal;                                   ///< The device ordinal.
  CUdevice device;                               ///< Its handle (cuDeviceGet).
  PrimaryContext context;                        ///< The device's primary context, retained.
  ContextModule vectorAddModule{context.get()};  ///< vectorAdd_kernel.fatbin, loaded here.
  ContextModule copyModule{context.get()};       ///< copy_kernel.fatbin, loaded here.
  ContextMemory source{context.get()};           ///< Step 8: holds this endpoint's pattern.
  ContextMemory destination{context.get()};      ///< Step 8: where the copies into it land.
  ContextStream stream{context.get()};           ///< Where this endpoint's work is queued.
  CUfunction vectorAdd = nullptr;                ///< VecAdd_kernel of vectorAddModule.
  CUfunction copy = nullptr;                     ///< Copy_kernel of copyModule.
  unsigned int copyGrid = 0;  ///< Blocks of Copy_kernel that fill the device (occupancy x SMs).
  std::size_t index = 0;      ///< Its place in PairPlan::endpoints (set by Endpoints).

  /// This endpoint's context, e.g. for ScopedContext.
  CUcontext ctx() const noexcept { return context.get(); }
  /// The seed of the pattern its source holds: sourceSeed() of its index.
  std::uint32_t seed() const noexcept { return sourceSeed(static_cast<int>(index)); }
};

/// The endpoints of a PairPlan, in the order of PairPlan::endpoints, found by the role they play
/// in a pair. Endpoint is not movable (others hold references), so each has its own allocation.
class Endpoints {
 public:
  /// One Endpoint per entry of PairPlan::endpoints, in order; @p plan must outlive this object.
  /// @throws CudaError.
  explicit Endpoints(const PairPlan& plan);
  /// Number of endpoints.
  std::size_t size() const noexcept { return endpoints_.size(); }
  /// Endpoint @p index (as in PairPlan::endpoints). @throws std::out_of_range.
  Endpoint& at(std::size_t index) { return *endpoints_.at(index); }
  /// Endpoint @p index, read only. @throws std::out_of_range.
  const Endpoint& at(std::size_t index) const { return *endpoints_.at(index); }
  /// The endpoint that plays the owner of @p pair (p2p::ownerEndpoint()).
  const Endpoint& owner(const DevicePair& pair) const { return at(ownerEndpoint(plan_, pair)); }
  /// The endpoint that plays the accessor of @p pair (p2p::accessorEndpoint()).
  const Endpoint& accessor(const DevicePair& pair) const {
    return at(accessorEndpoint(plan_, pair));
  }
  /// Every endpoint, in order (for SynchronizeOnExit).
  std::vector<const Endpoint*> all() const;

 private:
  const PairPlan& plan_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
};

/**
 * A VMM range the lesson builds: addresses from cuMemAddressReserve (@ref base, @ref size), the
 * physical memory from cuMemCreate (@ref handle, while @ref holdsHandle) and, while @ref mapped,
 * the memory mapped there. On an error path the destructor undoes what is still done, newest
 * first: cuMemUnmap (which frees the memory with its last reference), cuMemRelease of a handle
 * still held (after a failed map or release), then cuMemAddressFree. So a half-built range
 * leaves nothing behind. The good path undoes it all itself, with checked calls, and clears the
 * flags as it goes. Not copyable, not movable: the lesson keeps each where it was built.
 */
struct VmmRange {
  VmmRange() = default;
  ~VmmRange();
  VmmRange(const VmmRange&) = delete;
  VmmRange& operator=(const VmmRange&) = delete;
  /// Gives the addresses up for the good path's checked cuMemAddressFree (@ref base becomes 0).
  CUdeviceptr release() noexcept { return std::exchange(base, CUdeviceptr{0}); }

  CUdeviceptr base = 0;                   ///< The reserved addresses (0: none reserved).
  std::size_t size = 0;                   ///< Reserved bytes, a multiple of the granularity.
  CUmemGenericAllocationHandle handle{};  ///< The cuMemCreate handle (0 is a valid handle).
  bool holdsHandle = false;               ///< The handle is created and not yet released.
  bool mapped = false;                    ///< cuMemMap succeeded and nothing unmapped it yet.
};

/**
 * Classic peer access of one pair, as cuCtxEnablePeerAccess answered it (adoptPeerAccess()):
 * - ours (CUDA_SUCCESS): the code that enabled it disables it: on the good path with
 *   `check(cuCtxDisablePeerAccess(access.release()), ...)`, the accessor's context current; on an
 *   error path the destructor does (cuCtxSynchronize, then cuCtxDisablePeerAccess in the
 *   accessor's context, answers ignored);
 * - adopted (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED): primary contexts are shared by the whole
 *   process, so other code (a library, the runtime API) enabled it: it is used and left for that
 *   code to disable;
 * - refused (isPeerRefusal()): not measured, and reported with refusal();
 * - none: a default one, for a pair on one device, whose one context reaches its own memory.
 * Movable (the source is left with nothing to undo), not copyable.
 */
class PeerAccess {
 public:
  PeerAccess() = default;                   ///< None: nothing was enabled.
  PeerAccess(PeerAccess&& other) noexcept;  ///< Takes over @p other's duty (no copies).
  ~PeerAccess();  ///< Disables access that is ours and was not released; never throws.

  bool ours() const noexcept { return owner_ != nullptr; }     ///< Enabled here, to be disabled.
  bool adopted() const noexcept { return adopted_; }           ///< Enabled by other code, left on.
  bool refused() const noexcept { return !refusal_.empty(); }  ///< Not granted: see refusal().
  /// "cuCtxEnablePeerAccess refused: CUDA_ERROR_TOO_MANY_PEERS (...)", or empty.
  const std::string& refusal() const noexcept { return refusal_; }
  /// The endpoint whose context gained (or was refused) the access; nullptr for none.
  const Endpoint* accessor() const noexcept { return accessor_; }
  /// Gives the duty up: the owner's context, for the caller's checked cuCtxDisablePeerAccess
  /// with the accessor's context current. Nothing is left to undo.
  CUcontext release() noexcept { return std::exchange(owner_, nullptr)->ctx(); }

 private:
  friend PeerAccess adoptPeerAccess(CUresult, const Endpoint&, const Endpoint&, const char*, int);
  const Endpoint* accessor_ = nullptr;
  const Endpoint* owner_ = nullptr;  // set while the access is ours to disable
  bool adopted_ = false;
  std::string refusal_;
};

/// True for the answers of cuCtxEnablePeerAccess that refuse a pair the hardware connects:
/// CUDA_ERROR_TOO_MANY_PEERS (the peers a GPU maps at once are used up: 8 without NVSwitch) and
/// CUDA_ERROR_PEER_ACCESS_UNSUPPORTED.
bool isPeerRefusal(CUresult result) noexcept;

/**
 * What the caller's cuCtxEnablePeerAccess(@p owner's context), made with @p accessor's context
 * current, answered (@p enable), as a PeerAccess that knows who undoes it (see there). When both
 * endpoints share one context no access is needed (the driver refuses a context as its own
 * peer): @p enable is not looked at and the answer is none.
 * @throws CudaError naming cuCtxEnablePeerAccess at the caller's @p file : @p line for any other
 *         answer.
 */
PeerAccess adoptPeerAccess(CUresult enable, const Endpoint& accessor, const Endpoint& owner,
                           const char* file = __builtin_FILE(), int line = __builtin_LINE());

/**
 * Step 8's rule for classic peer access, pair by pair. For each of @p pairs in turn: with each
 * accessor's context current, cuCtxEnablePeerAccess to its owner's context (the pair's
 * accessor pulls from its owner, and with @p bothWays the owner's endpoint also pulls from the
 * accessor's); then @p measure(pair); then cuCtxSynchronize and cuCtxDisablePeerAccess for
 * what was enabled here, checked. So at most two peer mappings exist at a time, however many
 * GPUs the machine has. A pair the driver refuses (isPeerRefusal()) is not measured: it is
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
class SynchronizeOnExit {
 public:
  /// Remembers @p endpoints (not owned; they must outlive this object).
  explicit SynchronizeOnExit(std::vector<const Endpoint*> endpoints)
      : endpoints_(std::move(endpoints)) {}
  /// cuStreamSynchronize on each endpoint's stream, in its context; never throws.
  ~SynchronizeOnExit();
  SynchronizeOnExit(const SynchronizeOnExit&) = delete;
  SynchronizeOnExit& operator=(const SynchronizeOnExit&) = delete;

 private:
  std::vector<const Endpoint*> endpoints_;
};

}  // namespace memsamples::p2p
