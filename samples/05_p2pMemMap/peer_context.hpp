/**
 * @file peer_context.hpp
 * @brief The endpoints of 05_p2pMemMap and their owners: each takes over the release of
 *        something the lesson created with its own driver call, and releases it in the context
 *        it belongs to.
 *
 * With several GPUs every handle belongs to one context (a module, a stream, an event,
 * cuMemAlloc memory), and several calls act on the **current** context: cuCtxEnablePeerAccess
 * grants the current context access to another one, a module is unloaded from the current
 * context, an event is recorded on a stream of its own context. memsamples::ScopedContext makes
 * a context current for a scope (cuCtxPushCurrent / cuCtxPopCurrent). Common's InContext owners
 * (ContextModule, ContextStream, ContextEvent, ContextMemory) remember their context and push it
 * for the release, because the context on top of the stack when an owner dies, e.g. while an
 * exception unwinds, is often another device's. None of them creates
 * anything: the lesson writes every creation, e.g.
 * `check(cuMemAlloc(buffer.out(), bytes), "cuMemAlloc")` with the owner's context current.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "memsamples.hpp"
#include "p2p_logic.hpp"

namespace memsamples::p2p {

/**
 * One endpoint (see PairPlan): what the lesson keeps for one side of a transfer, all in the
 * device's primary context: the two kernels, each from a module loaded into that context, and a
 * stream. The constructor only retains the primary context (Common's PrimaryContext, the same
 * context the runtime API uses); the lesson loads the modules and creates the stream into the
 * members. Members are destroyed in reverse order: the stream and the modules, each in this
 * context, then the retain. Several endpoints may share one device (a loopback run has two).
 */
struct Endpoint {
  /// Retains the primary context of device @p ordinal. @throws CudaError.
  explicit Endpoint(int ordinal);
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  int ordinal;                                   ///< The device ordinal.
  CUdevice device;                               ///< Its handle (cuDeviceGet).
  PrimaryContext context;                        ///< The device's primary context, retained.
  ContextModule vectorAddModule{context.get()};  ///< vectorAdd_kernel.fatbin, loaded here.
  ContextModule copyModule{context.get()};       ///< copy_kernel.fatbin, loaded here.
  ContextStream stream{context.get()};           ///< Where this endpoint's work is queued.
  CUfunction vectorAdd = nullptr;                ///< VecAdd_kernel of vectorAddModule.
  CUfunction copy = nullptr;                     ///< Copy_kernel of copyModule.
  unsigned int copyGrid = 0;  ///< Blocks of Copy_kernel that fill the device (occupancy x SMs).

  /// This endpoint's context, e.g. for ScopedContext.
  CUcontext ctx() const noexcept { return context.get(); }
};

/// The endpoints of a PairPlan, in the order of PairPlan::endpoints, found by the role they play
/// in a pair. Endpoint is not movable (others hold references), so each has its own allocation.
class Endpoints {
 public:
  /// No endpoint yet; @p plan must outlive this object.
  explicit Endpoints(const PairPlan& plan) : plan_(plan) {}
  /// A new endpoint on device @p ordinal (Endpoint's constructor). @throws CudaError.
  Endpoint& add(int ordinal);
  /// Number of endpoints.
  std::size_t size() const noexcept { return endpoints_.size(); }
  /// Endpoint @p index (as in PairPlan::endpoints). @throws std::out_of_range.
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
 * A VMM range the lesson built: addresses from cuMemAddressReserve (@ref base, @ref size), the
 * physical memory from cuMemCreate (@ref handle, while @ref holdsHandle) and, once @ref mapped,
 * the memory mapped there. The destructor undoes what was done, newest first: cuMemUnmap (which
 * frees the memory with its last reference), cuMemRelease of a handle still held (after a failed
 * map or release), then cuMemAddressFree. So a half-built range leaves nothing behind on an
 * error path. Not copyable, not movable: the lesson keeps each where it was built.
 */
struct VmmRange {
  VmmRange() = default;
  ~VmmRange();
  VmmRange(const VmmRange&) = delete;
  VmmRange& operator=(const VmmRange&) = delete;

  CUdeviceptr base = 0;                   ///< The reserved addresses (0: none reserved).
  std::size_t size = 0;                   ///< Reserved bytes, a multiple of the granularity.
  CUmemGenericAllocationHandle handle{};  ///< The cuMemCreate handle (0 is a valid handle).
  bool holdsHandle = false;               ///< The handle is created and not yet released.
  bool mapped = false;                    ///< cuMemMap succeeded over the whole range.
};

/**
 * Classic peer access that the lesson enabled (cuCtxEnablePeerAccess with the accessor's
 * context current). Unless dismiss() is called after the lesson's own cuCtxDisablePeerAccess,
 * the destructor waits for the accessor's context (cuCtxSynchronize: running work may still use
 * the mapping) and disables the access, so that it is undone on every path.
 */
class EnabledPeerAccess {
 public:
  /// Remembers that @p accessor's context may use @p owner's allocations; both must outlive this.
  EnabledPeerAccess(const Endpoint& accessor, const Endpoint& owner) noexcept
      : accessor_(accessor), owner_(owner) {}
  /// Disables the access unless dismissed; errors ignored.
  ~EnabledPeerAccess();
  EnabledPeerAccess(const EnabledPeerAccess&) = delete;
  EnabledPeerAccess& operator=(const EnabledPeerAccess&) = delete;
  /// The endpoint whose context gained access.
  const Endpoint& accessor() const noexcept { return accessor_; }
  /// The endpoint whose allocations it may use.
  const Endpoint& owner() const noexcept { return owner_; }
  /// The lesson disabled the access itself: nothing left to undo.
  void dismiss() noexcept { enabled_ = false; }

 private:
  const Endpoint& accessor_;
  const Endpoint& owner_;
  bool enabled_ = true;
};

/**
 * What the lesson's cuCtxEnablePeerAccess(owner's context) answered, with @p accessor's context
 * current (@p enable), turned into who undoes it:
 * - CUDA_SUCCESS: the lesson enabled the access, so @p enabled gets an EnabledPeerAccess that
 *   disables it on every path;
 * - CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: not an error. Primary contexts are shared by the
 *   whole process, so another part of it (a library, the runtime API) enabled the access: it is
 *   used and left for its owner to disable (cuCtxDisablePeerAccess here would pull it from under
 *   that code);
 * - anything else: CudaError naming cuCtxEnablePeerAccess at the caller's @p file : @p line.
 * @return true when the access is the lesson's own (CUDA_SUCCESS), false when it was adopted.
 */
bool adoptPeerAccess(CUresult enable, const Endpoint& accessor, const Endpoint& owner,
                     std::vector<std::unique_ptr<EnabledPeerAccess>>& enabled,
                     const char* file = __builtin_FILE(), int line = __builtin_LINE());

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
