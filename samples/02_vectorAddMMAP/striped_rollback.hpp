/**
 * @file striped_rollback.hpp
 * @brief What the allocator of 02_vectorAddMMAP (mapStripedRange() in striped_vmm.cpp) uses
 *        beside its driver calls, kept out of the reader's way: the device list it asks the
 *        granularity of, and the rollback of a half-built range with checkOrUndo(), the check
 *        its calls go through. Only striped_vmm.cpp includes it; the functions are defined
 *        there, below the `core-b` region.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <vector>

#include "striped_vmm.hpp"

namespace memsamples::vmm {

/// Every device that holds part of a range or maps it: the backing devices, then the mapping
/// devices. @throws std::invalid_argument when either list is empty (before any driver call).
std::vector<int> backingAndMapping(const std::vector<int>& backingDevices,
                                   const std::vector<int>& mappingDevices);

/// What exists while mapStripedRange() builds a range. Each call that creates something is
/// followed by one line that records it, so that a failed call undoes exactly that. While it
/// lives, it is this thread's active rollback: checkOrUndo() below turns to it when a call fails.
/// Not movable: it lives in mapStripedRange() only.
class Rollback {
 public:
  /// For a build of @p layout, which must outlive it; becomes this thread's active rollback.
  /// Allocates what undoing needs up front: undoing must not need memory.
  explicit Rollback(const StripeLayout& layout);
  /// Undoes what is still recorded when the build ends early without a failed call (e.g.
  /// std::bad_alloc), the driver's answers ignored there; then the rollback active before this
  /// one (none, in practice) is active again.
  ~Rollback();
  Rollback(const Rollback&) = delete;
  Rollback& operator=(const Rollback&) = delete;

  void reserved(CUdeviceptr base) noexcept;                    ///< The addresses.
  void created(CUmemGenericAllocationHandle handle) noexcept;  ///< A stripe's memory.
  void mapped(const Stripe& stripe) noexcept;  ///< That memory, at @p stripe (built in order).
  void released() noexcept;                    ///< Its handle (the mapping keeps the memory).
  void dismiss() noexcept;                     ///< The range is built: nothing is undone.

  /// The rollback of the build running on this thread, or nullptr.
  static Rollback* active() noexcept;

  /// For a failed call (@p result is an error): undoes what is recorded, the mapped stripes
  /// newest first, the handle not yet released, the addresses, every call made even if an
  /// earlier one fails; then throws a CudaError naming the call, the stripe being built, what
  /// was undone and any undo call that failed. Before cuMemAddressReserve succeeded nothing
  /// exists: then it throws memsamples::check()'s own message.
  [[noreturn]] void fail(CUresult result, const char* call, const char* file, int line);

 private:
  struct Undone;
  Undone undo() noexcept;

  const StripeLayout& layout_;
  Rollback* previous_ = nullptr;           // the active rollback before this one
  CUdeviceptr base_ = 0;                   // reserved and not yet freed, when not 0
  std::size_t created_ = 0;                // handles created: one per stripe, in order
  std::size_t mapped_ = 0;                 // stripes [0, mapped_) are mapped
  CUmemGenericAllocationHandle handle_{};  // the newest handle...
  bool holding_ = false;                   // ...while it is not yet released
  std::vector<CUresult> unmapResults_;     // one per stripe, for the message
};

/// The allocator's check, named apart from memsamples::check(): when @p result is an error while a
/// Rollback is active on this thread, that rollback first undoes what it recorded and the error
/// says so (Rollback::fail()); otherwise exactly memsamples::check(). @throws CudaError.
void checkOrUndo(CUresult result, const char* call, const char* file = __builtin_FILE(),
                 int line = __builtin_LINE());

}  // namespace memsamples::vmm
