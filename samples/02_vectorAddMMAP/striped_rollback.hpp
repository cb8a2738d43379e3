/**
 * @file striped_rollback.hpp
 * @brief What the allocator of 02_vectorAddMMAP (mapStripedRange() in striped_vmm.cpp) uses
 *        beside its driver calls, kept out of the reader's way: the device list it asks the
 *        granularity of, and the rollback of a half-built range, whose check() the calls that
 *        build the range go through. Only striped_vmm.cpp includes it; the functions are defined
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

/// What exists while mapStripedRange() builds a range, learned from the calls themselves: the
/// build makes its calls in a fixed order (cuMemAddressReserve; per stripe cuMemCreate, cuMemMap,
/// cuMemRelease; cuMemSetAccess) and passes each answer to check(), so the calls that succeeded
/// say exactly what exists. The addresses and the newest handle are read from the build's own
/// variables, watched by reference. When a call fails, everything that exists is undone and the
/// error says what was undone; once cuMemSetAccess succeeded the range is whole and nothing is
/// undone. Not movable: it lives in mapStripedRange() only.
class Rollback {
 public:
  /// For a build of @p layout into @p base and @p handle, all three of which must outlive it.
  /// Allocates what undoing needs up front: undoing must not need memory.
  Rollback(const StripeLayout& layout, const CUdeviceptr& base,
           const CUmemGenericAllocationHandle& handle);
  /// Undoes what exists when the build ends early without a failed call (e.g. std::bad_alloc),
  /// the driver's answers ignored there.
  ~Rollback();
  Rollback(const Rollback&) = delete;
  Rollback& operator=(const Rollback&) = delete;

  /// The build's check: @p result is the answer of @p call, the next call of the build. A success
  /// records what the call made or let go; an error goes to fail(). @throws CudaError; or
  /// std::logic_error when @p call is not the next call of the build's order (a change to
  /// mapStripedRange() that this class does not know yet), after undoing what exists.
  void check(CUresult result, const char* call, const char* file = __builtin_FILE(),
             int line = __builtin_LINE());

  /// The call the build makes next, in its fixed order; nullptr once the range is whole.
  const char* nextCall() const noexcept;

 private:
  struct Undone;
  Undone undo() noexcept;
  void succeeded(const char* call);
  // For a failed call (@p result is an error): undoes what exists, the mapped stripes newest
  // first, the handle not yet released, the addresses, every call made even if an earlier one
  // fails; then throws a CudaError naming the call, the stripe being built, what was undone and
  // any undo call that failed. Before cuMemAddressReserve succeeded nothing exists: then it
  // throws memsamples::check()'s own message.
  [[noreturn]] void fail(CUresult result, const char* call, const char* file, int line);

  const StripeLayout& layout_;
  const CUdeviceptr& base_;                    // the build's address variable
  const CUmemGenericAllocationHandle& handle_; // the build's newest handle
  bool reserved_ = false;                      // the addresses are reserved, not yet freed
  bool whole_ = false;                         // cuMemSetAccess succeeded: the caller's now
  std::size_t created_ = 0;                    // handles created: one per stripe, in order
  std::size_t mapped_ = 0;                     // stripes [0, mapped_) are mapped
  bool holding_ = false;                       // the newest handle is not yet released
  std::vector<CUresult> unmapResults_;         // one per stripe, for the message
};

}  // namespace memsamples::vmm
