/**
 * @file peer_context.hpp
 * @brief The driver half of 05_p2pMemMap: one endpoint (context retain, kernels, stream) per
 *        side of a transfer, RAII owners that keep every call in the right context, peer access
 *        that is always disabled again, memory freed in the context that allocated it, streams
 *        drained before memory they use goes away, and concurrent timing on two streams.
 *
 * Why so much care about contexts: with several GPUs, every handle belongs to one context (a
 * module, a stream, an event, cuMemAlloc memory), and several calls act on the **current**
 * context (cuCtxEnablePeerAccess grants the current context access to another one; a module is
 * unloaded from the current context; an event is recorded on a stream of its own context).
 * Here each device has its primary context (memsamples::PrimaryContext:
 * cuDevicePrimaryCtxRetain, the one the runtime API uses too), and memsamples::ScopedContext
 * makes one current for a scope with cuCtxPushCurrent / cuCtxPopCurrent, so the previous one is
 * back when the scope ends, also when it ends with an exception.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memsamples.hpp"
#include "p2p_logic.hpp"

namespace memsamples::p2p {

/**
 * cuMemAlloc memory of one context, freed (cuMemFree) with that context current.
 *
 * Why not memsamples::OwnedDeviceMemory: that owner frees with whatever context is current when
 * it dies, which is right in a one-context program. Here several contexts are alive and the one on
 * top of the stack at destruction time is often another device's (an owner outlives the
 * ScopedContext that was current when it was made, e.g. when it is unwound by an exception), so
 * this owner remembers its context and pushes it for the release.
 */
class ContextBuffer {
 public:
  /// Allocates @p bytes in @p context. @throws CudaError.
  ContextBuffer(CUcontext context, std::size_t bytes);
  ~ContextBuffer();
  /// Takes over @p other's memory; @p other is left empty.
  ContextBuffer(ContextBuffer&& other) noexcept;
  ContextBuffer& operator=(ContextBuffer&&) = delete;
  ContextBuffer(const ContextBuffer&) = delete;
  ContextBuffer& operator=(const ContextBuffer&) = delete;
  /// The device address.
  CUdeviceptr get() const noexcept { return pointer_; }
  /// The size in bytes.
  std::size_t size() const noexcept { return bytes_; }

 private:
  CUcontext context_ = nullptr;
  CUdeviceptr pointer_ = 0;
  std::size_t bytes_ = 0;
};

/**
 * An event of one context (cuEventCreate / cuEventDestroy, each with that context current).
 * Not memsamples::OwnedEvent for the same reason as ContextBuffer: it must be destroyed in its own
 * context, whichever is current when it dies; and it takes creation flags.
 */
class ContextEvent {
 public:
  /// Creates an event in @p context with cuEventCreate @p flags (CU_EVENT_DEFAULT: a timing
  /// event; CU_EVENT_DISABLE_TIMING for one that only orders streams). @throws CudaError.
  explicit ContextEvent(CUcontext context, unsigned int flags = CU_EVENT_DEFAULT);
  ~ContextEvent();
  /// Takes over @p other's event; @p other is left empty.
  ContextEvent(ContextEvent&& other) noexcept;
  ContextEvent& operator=(ContextEvent&&) = delete;
  ContextEvent(const ContextEvent&) = delete;
  ContextEvent& operator=(const ContextEvent&) = delete;
  /// The event.
  CUevent get() const noexcept { return event_; }

 private:
  CUcontext context_ = nullptr;
  CUevent event_ = nullptr;
};

/**
 * One endpoint (see PairPlan): everything the sample keeps for one side of a transfer, all in
 * the device's primary context: a retain of that context, the two kernels (VecAdd_kernel and
 * Copy_kernel, each from a module loaded into this context), their grid sizes and one stream.
 * Several PeerDevice objects may exist for one device (a loopback run has two): they share the
 * primary context (each holds a retain) and each has its own stream and modules.
 *
 * The destructor destroys the stream and unloads the modules with the context current, then
 * releases this object's retain of the context.
 */
class PeerDevice {
 public:
  /**
   * Retains device @p ordinal's primary context and, with it current, loads both fatbins and
   * creates a non-blocking stream.
   * @param ordinal the device.
   * @param vectorAddFatbin path of vectorAdd_kernel.fatbin.
   * @param copyFatbin path of copy_kernel.fatbin.
   * @throws CudaError, std::runtime_error (unreadable fatbin).
   */
  PeerDevice(int ordinal, const std::string& vectorAddFatbin, const std::string& copyFatbin);
  ~PeerDevice();
  PeerDevice(const PeerDevice&) = delete;
  PeerDevice& operator=(const PeerDevice&) = delete;

  /// The device ordinal.
  int ordinal() const noexcept { return ordinal_; }
  /// The CUdevice handle.
  CUdevice device() const noexcept { return device_; }
  /// The device's primary context.
  CUcontext context() const noexcept { return context_.get(); }
  /// The device's stream (in its context).
  CUstream stream() const noexcept { return stream_.get(); }
  /// VecAdd_kernel in this context.
  CUfunction vectorAdd() const noexcept { return vectorAdd_; }
  /// Copy_kernel in this context.
  CUfunction copy() const noexcept { return copy_; }
  /// Blocks of kVectorAddBlockSize threads that fill this device with VecAdd_kernel.
  unsigned int vectorAddGrid() const noexcept { return vectorAddGrid_; }
  /// Blocks of kCopyBlockSize threads that fill this device with Copy_kernel.
  unsigned int copyGrid() const noexcept { return copyGrid_; }
  /// Free memory of this device (cuMemGetInfo with its context current).
  std::size_t freeBytes() const;
  /// Waits for this endpoint's stream (with its context current). @throws CudaError.
  void synchronize() const;
  /// synchronize() for destructors: never throws; returns the first failing call's result.
  CUresult synchronizeQuietly() const noexcept;

 private:
  void releaseInContext() noexcept;

  int ordinal_;
  CUdevice device_ = 0;
  memsamples::PrimaryContext context_;
  OwnedModule vectorAddModule_;
  OwnedModule copyModule_;
  OwnedStream stream_;
  CUfunction vectorAdd_ = nullptr;
  CUfunction copy_ = nullptr;
  unsigned int vectorAddGrid_ = 0;
  unsigned int copyGrid_ = 0;
};

/**
 * Classic peer access: the accessor's context may use every cuMemAlloc allocation of the owner's
 * context (cuCtxEnablePeerAccess, called with the accessor's context current). Access is
 * directional; the other direction needs its own PeerAccess.
 *
 * disable() undoes it with the accessor's context current (cuCtxDisablePeerAccess), after
 * waiting for that context's work (cuCtxSynchronize), since running kernels may still use the
 * peer mapping. The destructor does the same when disable() was not called, so access is
 * undone on every path, error paths included. Error messages name both devices.
 */
class PeerAccess {
 public:
  /// Enables access from @p accessor's context to @p owner's allocations. @throws CudaError.
  PeerAccess(const PeerDevice& accessor, const PeerDevice& owner);
  /// disable(), errors ignored.
  ~PeerAccess();
  PeerAccess(const PeerAccess&) = delete;
  PeerAccess& operator=(const PeerAccess&) = delete;
  /**
   * Waits for the accessor's work, then cuCtxDisablePeerAccess; the disable is attempted even
   * when the wait fails. Does nothing the second time.
   * @throws CudaError naming the first call that failed (access counts as disabled afterwards).
   */
  void disable();

 private:
  std::string describe(const char* call) const;
  const PeerDevice& accessor_;
  const PeerDevice& owner_;
  bool enabled_ = false;
};

/**
 * The endpoints of a PairPlan, created in the order of PairPlan::endpoints, and found by the
 * role they play in a pair. PeerDevice is neither copyable nor movable (others hold references
 * to it), so each lives in its own allocation.
 */
class Endpoints {
 public:
  /**
   * Creates one PeerDevice per entry of @p plan's endpoints.
   * @param plan the plan; must outlive this object.
   * @param vectorAddFatbin path of vectorAdd_kernel.fatbin.
   * @param copyFatbin path of copy_kernel.fatbin.
   * @throws what PeerDevice's constructor throws; std::invalid_argument for a plan without
   *         endpoints.
   */
  Endpoints(const PairPlan& plan, const std::string& vectorAddFatbin,
            const std::string& copyFatbin);
  /// Number of endpoints.
  std::size_t size() const noexcept { return devices_.size(); }
  /// Endpoint @p index (as in PairPlan::endpoints). @throws std::out_of_range.
  const PeerDevice& at(std::size_t index) const { return *devices_.at(index); }
  /// The endpoint that plays the owner of @p pair (p2p::ownerEndpoint()).
  const PeerDevice& owner(const DevicePair& pair) const { return at(ownerEndpoint(plan_, pair)); }
  /// The endpoint that plays the accessor of @p pair (p2p::accessorEndpoint()).
  const PeerDevice& accessor(const DevicePair& pair) const {
    return at(accessorEndpoint(plan_, pair));
  }
  /// Every endpoint, in order (for SynchronizeOnExit).
  std::vector<const PeerDevice*> all() const;

 private:
  const PairPlan& plan_;
  std::vector<std::unique_ptr<PeerDevice>> devices_;
};

/**
 * Waits, when it is destroyed, for the streams of some endpoints (each with its own context
 * current), errors ignored. Declare it right **after** memory that those streams use: C++
 * destroys in reverse order, so on every path out of the scope, an exception included, no
 * kernel or copy still runs when the memory is unmapped or freed. Without it, an error thrown
 * after a launch would unmap a VMM range (or free a buffer) under a kernel that may still be
 * reading it.
 */
class SynchronizeOnExit {
 public:
  /// Remembers @p devices (not owned; they must outlive this object).
  explicit SynchronizeOnExit(std::vector<const PeerDevice*> devices)
      : devices_(std::move(devices)) {}
  /// cuStreamSynchronize on each endpoint's stream, in its context; never throws.
  ~SynchronizeOnExit();
  SynchronizeOnExit(const SynchronizeOnExit&) = delete;
  SynchronizeOnExit& operator=(const SynchronizeOnExit&) = delete;

 private:
  std::vector<const PeerDevice*> devices_;
};

/// File name of the fatbin that holds `VecAdd_kernel` (kernels/vectorAdd_kernel.cu).
inline constexpr const char* kVectorAddFatbin = "vectorAdd_kernel.fatbin";
/// Name of the vector-add entry point in that fatbin.
inline constexpr const char* kVectorAddKernel = "VecAdd_kernel";
/// Threads per block of VecAdd_kernel launches.
inline constexpr int kVectorAddBlockSize = 256;

/// File name of the fatbin that holds `Copy_kernel` (kernels/copy_kernel.cu).
inline constexpr const char* kCopyFatbin = "copy_kernel.fatbin";
/// Name of the copy entry point in that fatbin.
inline constexpr const char* kCopyKernel = "Copy_kernel";
/// Threads per block of Copy_kernel launches.
inline constexpr int kCopyBlockSize = 256;

/// Launches `Copy_kernel(dst, src, count)` (count in floats) on @p device's stream; the caller
/// makes @p device's context current. @throws CudaError.
void launchCopy(const PeerDevice& device, CUdeviceptr dst, CUdeviceptr src, std::size_t count);

/**
 * cuMemGetAccess on the VMM range at @p address for each of @p devices (ordinals): the rights
 * each device really has. A failed query is recorded in its view, not thrown, so that a report
 * can show it next to the others.
 */
std::vector<DeviceAccessView> readDeviceAccess(CUdeviceptr address,
                                               const std::vector<int>& devices);

/**
 * Times two pieces of work that run at the same time on two endpoints' streams (two devices, or
 * two streams of one device in a loopback run): each repetition starts both together and ends
 * when both are done (an event on @p first's stream that @p second's stream waits for, and one
 * the other way round). @p warmup untimed repetitions first.
 *
 * Each work function must enqueue on its own endpoint's stream; this function makes that
 * endpoint's context current before calling it. The two event handshakes per repetition are a
 * fixed cost whatever the size, so they weigh more at small sizes.
 * @return median, min and max over the repetitions, from both starting to both finishing.
 */
TimingStats timeConcurrently(const PeerDevice& first, const PeerDevice& second, int warmup,
                             int iterations, const std::function<void()>& workOnFirst,
                             const std::function<void()>& workOnSecond);

/**
 * The attributes of every ordered pair's link (cuDeviceGetP2PAttribute), as
 * links[owner][accessor]; asked with the accessor as source device and the owner as
 * destination, the order of cuDeviceCanAccessPeer(accessor, owner). The diagonal is left at its
 * defaults (the call rejects a device paired with itself). A failing attribute query (e.g.
 * CUDA_ERROR_NOT_SUPPORTED) does not stop the run: it is recorded in LinkAttributes::failure
 * and the other pairs are still asked. Requires cuInit. @throws CudaError from cuDeviceGet only.
 */
LinkMatrix queryLinkAttributes(int deviceCount);

}  // namespace memsamples::p2p
