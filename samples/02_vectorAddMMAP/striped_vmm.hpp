/**
 * @file striped_vmm.hpp
 * @brief One contiguous range of device addresses, backed by several physical allocations
 *        (stripes) that may live on different GPUs: cuMemAddressReserve, cuMemCreate, cuMemMap,
 *        cuMemRelease, cuMemSetAccess; freed with cuMemUnmap and cuMemAddressFree.
 *
 * The layout of a range of N stripes over D backing devices:
 *
 * @verbatim
     get()                                                               get() + size()
     v                                                                                v
     +--------------------+--------------------+-- ... --+--------------------+
     |      stripe 0      |      stripe 1      |         |     stripe N-1     |
     | backing[0]         | backing[1 % D]     |         | backing[(N-1) % D] |
     +--------------------+--------------------+-- ... --+--------------------+
     |<-- stripeBytes --->|<-- stripeBytes --->|         |<-- stripeBytes --->|
     |<------------------------ requestedBytes ------------------------->|pad|
     |<------------------------ size() = roundedBytes --------------------->|
   @endverbatim
 *
 * - **granularity** = the largest CU_MEM_ALLOC_GRANULARITY_MINIMUM of every backing and mapping
 *   device, so that every device accepts every stripe size and offset.
 * - **roundedBytes** = requestedBytes rounded up to a multiple of `N x granularity`; each stripe
 *   is `roundedBytes / N`, a multiple of the granularity. The padding at the end is mapped (so
 *   that the range is uniform) but not used.
 * - Each stripe is one cuMemCreate (pinned memory on its device) mapped at `get() + i x
 *   stripeBytes`; its handle is released right after mapping, so the mapping is the only
 *   reference and cuMemUnmap frees the memory.
 * - One cuMemSetAccess gives every mapping device read-write access to the whole range. That is
 *   all a peer device needs: VMM mappings carry their own access rights, so no
 *   cuCtxEnablePeerAccess is involved (it applies to cuMemAlloc memory only). The hardware must
 *   still allow the access (cuDeviceCanAccessPeer).
 *
 * The CUDA-free planning and the build-with-rollback algorithm are in striped_vmm_logic.hpp.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "striped_vmm_logic.hpp"

namespace memsamples::vmm {

/// What StripedVmmRange should build.
struct StripedRangeRequest {
  std::uint64_t bytes = 0;              ///< Usable size; rounded up (see the file's diagram).
  std::vector<int> backingDevices;      ///< Devices that hold the stripes (round robin).
  std::vector<int> mappingDevices;      ///< Devices given read-write access; not empty.
  int stripes = 0;                      ///< Physical allocations; 0: one per backing device.
  CUdeviceptr addressHint = 0;          ///< Preferred start address (0: anywhere).
  std::optional<FaultInjection> fault;  ///< Test only: make one build call fail.
  StepTimes* times = nullptr;           ///< When not null, filled with the time of each step.
};

/**
 * Owns one striped VMM range: movable, not copyable; the destructor unmaps the whole range
 * (which frees the stripes' memory) and frees the addresses.
 *
 * Construction either builds everything or, on any failure, undoes exactly what it had created
 * and throws VmmStepError naming the step and the stripe (see buildStripedRange()).
 * Requires a current context and driver initialization.
 */
class StripedVmmRange {
 public:
  /// An empty range (get() == 0).
  StripedVmmRange() = default;
  /**
   * Builds the range described by @p request.
   * @throws VmmStepError when a driver call fails (after the rollback); CudaError when the
   *         granularity query fails; std::invalid_argument / std::overflow_error for an empty
   *         device list, a zero size or a size that overflows when rounded.
   */
  explicit StripedVmmRange(const StripedRangeRequest& request);
  /// Unmaps and frees the range; errors are ignored (see release() to see them).
  ~StripedVmmRange();
  /// Takes over @p other's range; @p other is left empty.
  StripedVmmRange(StripedVmmRange&& other) noexcept;
  /// Frees this range (errors ignored, as in the destructor), then takes over @p other's;
  /// @p other is left empty.
  StripedVmmRange& operator=(StripedVmmRange&& other) noexcept;
  StripedVmmRange(const StripedVmmRange&) = delete;
  StripedVmmRange& operator=(const StripedVmmRange&) = delete;

  /// The base address: one pointer for the whole range, as a kernel sees it.
  CUdeviceptr get() const noexcept { return base_; }
  /// Reserved and mapped bytes (the rounded size).
  std::uint64_t size() const noexcept { return layout_.roundedBytes; }
  /// The bytes that were asked for.
  std::uint64_t requestedBytes() const noexcept { return layout_.requestedBytes; }
  /// Granularity, stripe size and the device and offset of every stripe.
  const StripeLayout& layout() const noexcept { return layout_; }
  /// The devices that were given read-write access.
  const std::vector<int>& mappingDevices() const noexcept { return mapping_; }

  /// Unmaps and frees the range now; the object is empty afterwards, even when this throws.
  /// @throws CudaError naming cuMemUnmap or cuMemAddressFree.
  void release();

 private:
  CUdeviceptr base_ = 0;
  StripeLayout layout_;
  std::vector<int> mapping_;
};

/// VmmDriver that calls the CUDA driver. Stripes are pinned device memory (cuMemCreate with
/// CU_MEM_ALLOCATION_TYPE_PINNED and CU_MEM_LOCATION_TYPE_DEVICE).
class CudaVmmDriver final : public VmmDriver {
 public:
  /// cuMemAddressReserve.
  CUresult reserve(CUdeviceptr* base, std::uint64_t bytes, std::uint64_t alignment,
                   CUdeviceptr hint) override;
  /// cuMemCreate of pinned memory on @p device.
  CUresult create(CUmemGenericAllocationHandle* handle, std::uint64_t bytes, int device) override;
  /// cuMemMap at offset 0 of the handle.
  CUresult map(CUdeviceptr address, std::uint64_t bytes,
               CUmemGenericAllocationHandle handle) override;
  /// cuMemRelease.
  CUresult release(CUmemGenericAllocationHandle handle) override;
  /// One cuMemSetAccess with a read-write CUmemAccessDesc per device.
  CUresult setAccess(CUdeviceptr base, std::uint64_t bytes,
                     const std::vector<int>& devices) override;
  /// cuMemUnmap.
  CUresult unmap(CUdeviceptr address, std::uint64_t bytes) override;
  /// cuMemAddressFree.
  CUresult addressFree(CUdeviceptr base, std::uint64_t bytes) override;
  /// memsamples::describeResult().
  std::string describe(CUresult result) override;
};

/// The allocation properties of every stripe: pinned memory located on device @p device.
CUmemAllocationProp pinnedDeviceProperties(int device);

/// CU_MEM_ALLOC_GRANULARITY_MINIMUM for pinned memory on @p device. @throws CudaError.
std::uint64_t minimumGranularity(int device);

/// combinedGranularity() of minimumGranularity() over every backing and mapping device.
std::uint64_t stripedGranularity(const std::vector<int>& backingDevices,
                                 const std::vector<int>& mappingDevices);

/**
 * Reads the machine's DeviceTopology: every device's
 * CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED and the cuDeviceCanAccessPeer matrix.
 * Requires cuInit. @throws CudaError.
 */
DeviceTopology queryDeviceTopology();

/// cuMemGetAccess on @p range for each of @p devices (ordinals); a failed query is recorded in
/// its view, not thrown, so that a report can show it next to the others.
std::vector<DeviceAccessView> readDeviceAccess(const StripedVmmRange& range,
                                               const std::vector<int>& devices);

}  // namespace memsamples::vmm
