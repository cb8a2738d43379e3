/**
 * @file striped_vmm.hpp
 * @brief The technique of 02_vectorAddMMAP: one contiguous range of device addresses backed by
 *        several physical allocations (stripes) that may live on different GPUs.
 *
 * striped_vmm.cpp builds a range in the region marked `core-b` (its layout drawing is there
 * too): mapStripedRange() asks the granularity, reserves, creates, maps, releases and sets
 * access, top to bottom; unmapStripedRange(), right after it, frees the range. StripedVmmRange owns a range for
 * the error paths. planStripes() cuts a size into stripes; run_plan.hpp decides the devices and
 * the size of a run. 06_perDeviceResource reuses all of it as a resource kind.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

/// The striped virtual-memory allocator of sample 02 (reused by sample 06 as a resource kind).
namespace memsamples::vmm {

/// One physical allocation (cuMemCreate) of a striped range and where it is mapped.
struct Stripe {
  int device = 0;            ///< Ordinal of the device whose memory backs this stripe.
  std::uint64_t offset = 0;  ///< Where the stripe starts, from the start of the range.
  std::uint64_t bytes = 0;   ///< Size of the stripe (the same for every stripe).
};

/// How a range of virtual addresses is cut into stripes (the drawing in striped_vmm.cpp).
struct StripeLayout {
  std::uint64_t requestedBytes = 0;  ///< What the caller asked for.
  std::uint64_t granularity = 0;     ///< The allocation granularity the layout respects.
  std::uint64_t roundedBytes = 0;    ///< Reserved and mapped: a multiple of stripes x granularity.
  std::uint64_t stripeBytes = 0;     ///< roundedBytes / stripe count.
  std::vector<Stripe> stripes;       ///< In address order; stripe i starts at i x stripeBytes.
};

/// The granularities a set of devices accepts: each the largest over the devices.
struct Granularities {
  std::uint64_t minimum = 0;      ///< CU_MEM_ALLOC_GRANULARITY_MINIMUM: what the calls require.
  std::uint64_t recommended = 0;  ///< CU_MEM_ALLOC_GRANULARITY_RECOMMENDED: what performs best.
};

/// A range that mapStripedRange() built: where it starts and how it is cut.
struct StripedRange {
  CUdeviceptr base = 0;  ///< One pointer for the whole range, as a kernel sees it.
  StripeLayout layout;   ///< Its stripes; layout.roundedBytes is what unmapStripedRange() frees.
};

/**
 * Builds a range of at least @p bytes in @p stripeCount stripes, stripe i backed by
 * `backingDevices[i % backingDevices.size()]`, read-write for @p mappingDevices (the `core-b`
 * region of striped_vmm.cpp). Asks the driver for the granularity of every backing and mapping
 * device and cuts the range with planStripes() at it. Requires a current context. A failure undoes
 * what was built; the CudaError names the call, this file's line, the stripe and what was undone.
 * @throws CudaError; std::invalid_argument when a device list is empty (before any driver call)
 *         and what planStripes() throws for the size and the stripe count.
 */
StripedRange mapStripedRange(std::uint64_t bytes, int stripeCount,
                             const std::vector<int>& backingDevices,
                             const std::vector<int>& mappingDevices);

/// Frees a range from mapStripedRange(): cuMemUnmap over all stripes, then cuMemAddressFree, the
/// second even when the first fails. @throws CudaError naming the first call that failed.
void unmapStripedRange(CUdeviceptr base, std::uint64_t roundedBytes);

/**
 * Plans a striped range (no driver call): @p bytes rounded up to a multiple of
 * `stripeCount x granularity`, so that every stripe has the same size, a multiple of
 * @p granularity (the padding at the end is mapped but unused); stripe i is backed by
 * `backingDevices[i % backingDevices.size()]`, so one GPU can hold 8 stripes.
 * @throws std::invalid_argument for a zero size or granularity, a stripe count outside
 *         [1, 65536] or no device; std::overflow_error when the rounded size does not fit in
 *         64 bits (it never wraps).
 */
StripeLayout planStripes(std::uint64_t bytes, std::uint64_t granularity, int stripeCount,
                         const std::vector<int>& backingDevices);

/// Whether @p bytes in @p stripeCount stripes use the recommended granularity: when every stripe
/// gets a whole unit of it (else a small range is padded up to many) and it is a multiple of the
/// minimum. @throws std::invalid_argument for a zero minimum or fewer than 1 stripe.
bool recommendedGranularityFits(const Granularities& granularities, std::uint64_t bytes,
                                int stripeCount);

/// planStripes() at the granularity recommendedGranularityFits() chooses: the layout
/// mapStripedRange() builds. @throws what both do.
StripeLayout planStripes(std::uint64_t bytes, const Granularities& granularities, int stripeCount,
                         const std::vector<int>& backingDevices);

/// Owns one range: the constructor is mapStripedRange(), the destructor unmaps and frees it
/// (ignoring the driver's answer, as every destructor here does). On the good path the range is
/// freed with checked calls, and given up only once they succeeded, as Common's owners are:
/// `unmapStripedRange(range.get(), range.size()); range.release();`. Movable, not copyable.
class StripedVmmRange {
 public:
  /// An empty owner (get() == 0).
  StripedVmmRange() = default;
  /// mapStripedRange(@p bytes, @p stripeCount, @p backingDevices, @p mappingDevices).
  /// @throws what that throws.
  StripedVmmRange(std::uint64_t bytes, int stripeCount, const std::vector<int>& backingDevices,
                  std::vector<int> mappingDevices);
  ~StripedVmmRange();
  /// Takes over @p other's range; @p other is left empty.
  StripedVmmRange(StripedVmmRange&& other) noexcept;
  /// Frees this range now, then takes over @p other's; @p other is left empty.
  StripedVmmRange& operator=(StripedVmmRange&& other) noexcept;
  StripedVmmRange(const StripedVmmRange&) = delete;
  StripedVmmRange& operator=(const StripedVmmRange&) = delete;

  /// The base address: one pointer for the whole range, as a kernel sees it.
  CUdeviceptr get() const noexcept { return range_.base; }
  /// Reserved and mapped bytes (the rounded size).
  std::uint64_t size() const noexcept { return range_.layout.roundedBytes; }
  /// The stripes and their devices.
  const StripeLayout& layout() const noexcept { return range_.layout; }
  /// The devices that were given read-write access.
  const std::vector<int>& mappingDevices() const noexcept { return mapping_; }
  /// Gives the range up without freeing it and returns its base address; the owner is left
  /// empty (get() and size() are 0), so read size() first.
  CUdeviceptr release() noexcept;

 private:
  StripedRange range_;
  std::vector<int> mapping_;
};

/// What cuMemGetAccess reported for one device, for people: "rw", "r", "none", or the number of
/// a value cuda.h does not name ("flags 7").
std::string describeAccess(unsigned long long flags);

}  // namespace memsamples::vmm
