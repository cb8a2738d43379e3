/**
 * @file striped_vmm.hpp
 * @brief One contiguous range of device addresses backed by several physical allocations
 *        (stripes) that may live on different GPUs. The whole driver sequence is one function,
 *        mapStripedRange(); StripedVmmRange owns its result.
 *
 * The layout of a range of N stripes over the backing devices `backing[0..D-1]`:
 *
 * @verbatim
     base                                                               base + roundedBytes
     v                                                                                    v
     +--------------------+--------------------+-- ... --+--------------------------------+
     |      stripe 0      |      stripe 1      |         |           stripe N-1           |
     |   on backing[0]    | on backing[1 % D]  |         |    on backing[(N-1) % D]       |
     +--------------------+--------------------+-- ... --+--------------------------------+
     |<-- stripeBytes --->|<-- stripeBytes --->|         |<--------- stripeBytes -------->|
     |<----------------------- requestedBytes ------------------------->|<-- padding -->|
   @endverbatim
 *
 * - **granularity**: cuMemCreate sizes and cuMemMap offsets must be multiples of the largest
 *   CU_MEM_ALLOC_GRANULARITY_MINIMUM of the backing and mapping devices. The driver also names a
 *   RECOMMENDED granularity, a multiple of it that performs better; a layout uses that one when
 *   every stripe gets at least one unit of it, else the minimum (so a small range is not padded
 *   up to many recommended units). It is also the reservation's alignment.
 * - **roundedBytes**: requestedBytes rounded up to a multiple of `N x granularity`, so every
 *   stripe has the same size, a multiple of the granularity. The padding at the end is mapped
 *   but never used; for a tiny size and many stripes it fills whole stripes.
 * - Stripe i is one cuMemCreate on `backing[i % D]`, mapped at `base + i x stripeBytes`.
 * - *Mapping devices* are the devices given access with cuMemSetAccess (the word NVIDIA's
 *   samples use); *backing devices* hold the physical memory.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device_roles.hpp"

namespace memsamples::vmm {

/// One physical allocation (cuMemCreate) of a striped range and where it is mapped.
struct Stripe {
  int device = 0;            ///< Ordinal of the device whose memory backs this stripe.
  std::uint64_t offset = 0;  ///< Where the stripe starts, from the start of the range.
  std::uint64_t bytes = 0;   ///< Size of the stripe (the same for every stripe).
};

/// How a range of virtual addresses is cut into stripes. See planStripes().
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

/**
 * Plans a striped range (see the diagram above); no driver call.
 *
 * Stripe i is backed by `backingDevices[i % backingDevices.size()]`, so several stripes may live
 * on one device: with one GPU, `stripeCount = 8` still gives eight physical allocations.
 * @param bytes the size the caller needs; at least 1.
 * @param granularity a multiple of every device's minimum granularity; at least 1.
 * @param stripeCount how many physical allocations, in [1, 65536].
 * @param backingDevices the devices that hold the memory, in the order they receive stripes.
 * @throws std::invalid_argument for a zero size, granularity or stripe count, or no device;
 *         std::overflow_error when the rounded size does not fit in 64 bits (it never wraps).
 */
StripeLayout planStripes(std::uint64_t bytes, std::uint64_t granularity, int stripeCount,
                         const std::vector<int>& backingDevices);

/**
 * Whether a range of @p bytes in @p stripeCount stripes uses @p granularities.recommended: when
 * every stripe gets at least one recommended unit (bytes / stripes, rounded up, is at least that
 * large) and the recommended value is a multiple of the minimum (every driver reports it so; a
 * value that is not could not be used for cuMemCreate).
 * @throws std::invalid_argument for a zero minimum or a stripe count below 1.
 */
bool recommendedGranularityFits(const Granularities& granularities, std::uint64_t bytes,
                                int stripeCount);

/// planStripes() at the granularity recommendedGranularityFits() chooses: the recommended one
/// when it fits, else the minimum. @throws what both throw.
StripeLayout planStripes(std::uint64_t bytes, const Granularities& granularities, int stripeCount,
                         const std::vector<int>& backingDevices);

/// The largest of @p perDevice (granularities are powers of two, so it is a multiple of all).
/// @throws std::invalid_argument when @p perDevice is empty or holds a zero.
std::uint64_t combinedGranularity(const std::vector<std::uint64_t>& perDevice);

/// cuMemGetAllocationGranularity (minimum) for pinned memory on each backing and mapping
/// device, combined with combinedGranularity(). @throws CudaError.
std::uint64_t stripedGranularity(const std::vector<int>& backingDevices,
                                 const std::vector<int>& mappingDevices);

/// cuMemGetAllocationGranularity, minimum and recommended, for pinned memory on each backing and
/// mapping device, each combined with combinedGranularity(). @throws CudaError.
Granularities stripedGranularities(const std::vector<int>& backingDevices,
                                   const std::vector<int>& mappingDevices);

/// What cuMemGetAccess reported for one device, for people: "rw", "r", "none", or the number of
/// a value cuda.h does not name ("flags 7").
std::string describeAccess(unsigned long long flags);

/**
 * Builds the range @p layout describes and returns its base address:
 * cuMemAddressReserve; per stripe cuMemCreate, cuMemMap, cuMemRelease; one cuMemSetAccess giving
 * every device in @p mappingDevices read-write access. Requires a current context.
 *
 * If a call fails, what was built is undone before the error leaves (mapped stripes unmapped, an
 * unreleased handle released, the addresses freed), and the CudaError names the call, this
 * file's line, the stripe, and what the rollback did.
 * @throws CudaError; std::invalid_argument for a layout without stripes or no mapping device.
 */
CUdeviceptr mapStripedRange(const StripeLayout& layout, const std::vector<int>& mappingDevices);

/**
 * Frees a range from mapStripedRange(): one cuMemUnmap over all stripes (each stripe's memory
 * is freed with its only mapping), then cuMemAddressFree. Both calls are made even when the
 * first fails. @throws CudaError naming the first call that failed.
 */
void unmapStripedRange(CUdeviceptr base, std::uint64_t roundedBytes);

/**
 * Owns one range from mapStripedRange(): the constructor builds it, the destructor unmaps and
 * frees it (ignoring the driver's answer, as every destructor here does). On the good path the
 * range is freed with checked calls: `unmapStripedRange(range.release(), bytes)`, as Common's
 * owners are: `check(cuMemFree(a.release()), "cuMemFree")`. Movable, not copyable.
 */
class StripedVmmRange {
 public:
  /// An empty owner (get() == 0).
  StripedVmmRange() = default;
  /// mapStripedRange(@p layout, @p mappingDevices). @throws what that throws.
  StripedVmmRange(StripeLayout layout, std::vector<int> mappingDevices);
  ~StripedVmmRange();
  /// Takes over @p other's range; @p other is left empty.
  StripedVmmRange(StripedVmmRange&& other) noexcept;
  /// Frees this range now, then takes over @p other's; @p other is left empty.
  StripedVmmRange& operator=(StripedVmmRange&& other) noexcept;
  StripedVmmRange(const StripedVmmRange&) = delete;
  StripedVmmRange& operator=(const StripedVmmRange&) = delete;

  /// The base address: one pointer for the whole range, as a kernel sees it.
  CUdeviceptr get() const noexcept { return base_; }
  /// Reserved and mapped bytes (the rounded size).
  std::uint64_t size() const noexcept { return layout_.roundedBytes; }
  /// The stripes and their devices.
  const StripeLayout& layout() const noexcept { return layout_; }
  /// The devices that were given read-write access.
  const std::vector<int>& mappingDevices() const noexcept { return mapping_; }
  /// Gives the range up without freeing it and returns its base address; the owner is left
  /// empty (get() and size() are 0), so read size() first.
  CUdeviceptr release() noexcept;

 private:
  CUdeviceptr base_ = 0;
  StripeLayout layout_;
  std::vector<int> mapping_;
};

/**
 * What the driver says about this machine's devices: per device
 * CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, and the cuDeviceCanAccessPeer matrix.
 * Requires cuInit. @throws CudaError.
 */
DeviceTopology queryDeviceTopology();

}  // namespace memsamples::vmm
