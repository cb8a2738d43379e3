/**
 * @file striped_vmm_logic.hpp
 * @brief The CUDA-free half of the striped VMM allocator: layout, device roles, fault injection
 *        and the build-with-rollback algorithm, written against an abstract driver.
 *
 * Everything here can be unit tested on a machine without a GPU:
 * - planStripes() turns (size, granularity, stripe count, backing devices) into a StripeLayout.
 * - discoverBackingDevices() and resolveDeviceRoles() decide which devices hold the memory and
 *   which may access it, from a DeviceTopology (VMM support flags and the can-access-peer matrix).
 * - buildStripedRange() runs reserve -> (create -> map -> release) per stripe -> set access
 *   through a VmmDriver, and undoes exactly what it created when any step fails. The real driver
 *   (striped_vmm.cpp) forwards to cuMemAddressReserve and friends; the unit tests use a fake one
 *   that checks the rules of the real API and can fail any call.
 * - FaultInjection lets a test make the k-th call of a step fail without calling the driver.
 *
 * Nothing in this file calls into libcuda: cuda.h is included for its types only.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memsamples.hpp"

/// The striped virtual-memory allocator of sample 02 (reused by samples 05 and 06).
namespace memsamples::vmm {

// ------------------------------------------------------------------------------------------------
/// @name Stripe layout
/// @{

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
  std::uint64_t roundedBytes =
      0;  ///< Reserved and mapped size: a multiple of stripes x granularity.
  std::uint64_t stripeBytes = 0;  ///< roundedBytes / stripe count; a multiple of granularity.
  std::vector<Stripe> stripes;    ///< In address order; stripe i starts at i x stripeBytes.
};

/**
 * Plans a striped range.
 *
 * The size is rounded up to a multiple of `stripeCount x granularity`, so that every stripe has
 * the same size and that size is a multiple of the granularity (cuMemCreate and cuMemMap require
 * it). Stripe i is backed by `backingDevices[i % backingDevices.size()]` (round robin), so
 * several stripes may live on one device: with one GPU, `stripeCount = 8` still builds eight
 * physical allocations stitched into one range.
 *
 * @param bytes the size the caller needs; at least 1.
 * @param granularity the allocation granularity (CU_MEM_ALLOC_GRANULARITY_MINIMUM); at least 1.
 * @param stripeCount how many physical allocations; at least 1.
 * @param backingDevices the devices that hold the memory, in the order they receive stripes.
 * @throws std::invalid_argument for a zero size, granularity or stripe count, or no device.
 * @throws std::overflow_error when the rounded size does not fit in 64 bits (never wraps).
 */
StripeLayout planStripes(std::uint64_t bytes, std::uint64_t granularity, int stripeCount,
                         const std::vector<int>& backingDevices);

/**
 * The granularity a range shared by several devices must respect: the largest of the devices'
 * minimum granularities (every value is a power of two in practice, so the largest is also a
 * multiple of the others).
 * @throws std::invalid_argument when @p perDevice is empty or holds a zero.
 */
std::uint64_t combinedGranularity(const std::vector<std::uint64_t>& perDevice);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Which devices back and map the range
/// @{

/// What the driver says about the devices of this machine, as plain data.
struct DeviceTopology {
  /// Per device ordinal: CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED != 0.
  std::vector<bool> vmmSupported;
  /// canAccessPeer[a][b]: cuDeviceCanAccessPeer(a, b), i.e. device a can access device b's
  /// memory. The diagonal is true. Not necessarily symmetric.
  std::vector<std::vector<bool>> canAccessPeer;
  /// Number of devices (the size of vmmSupported).
  int deviceCount() const noexcept { return static_cast<int>(vmmSupported.size()); }
};

/**
 * The default backing devices for a range used by device @p chosen: @p chosen itself first, then,
 * in ordinal order, every other device whose memory @p chosen can access as a peer **and** that
 * supports VMM itself (the flag is read for that device, not for @p chosen).
 * @throws std::invalid_argument when the topology is malformed or @p chosen is out of range.
 */
std::vector<int> discoverBackingDevices(int chosen, const DeviceTopology& topology);

/// The devices that hold the memory and the devices that may access it.
struct DeviceRoles {
  std::vector<int> backing;  ///< Devices whose memory backs the stripes, in stripe order.
  std::vector<int> mapping;  ///< Devices given read-write access with cuMemSetAccess.
};

/**
 * Checks or fills in the backing and mapping devices of the sample.
 *
 * Empty @p backingOption: discoverBackingDevices(). Empty @p mappingOption: just @p chosen.
 * Given lists must name existing devices that support VMM; the mapping list must contain
 * @p chosen (the kernel runs there); every mapping device must be able to access every backing
 * device (cuDeviceCanAccessPeer), because cuMemSetAccess can only grant what the hardware allows.
 *
 * @param chosen the device the kernel runs on (must support VMM: the caller waives otherwise).
 * @param backingOption `--backing` as given, or empty.
 * @param mappingOption `--mapping` as given, or empty.
 * @param topology the machine.
 * @throws UsageError naming the option, the device and (for a bad ordinal) the device count.
 */
DeviceRoles resolveDeviceRoles(int chosen, const std::vector<int>& backingOption,
                               const std::vector<int>& mappingOption,
                               const DeviceTopology& topology);

/**
 * The stripe count to use: @p requested, or one stripe per backing device when @p requested is
 * 0 (not given).
 * @throws UsageError when @p requested is smaller than the number of backing devices (a backing
 * device without a stripe would be silently ignored) or negative.
 */
int resolveStripeCount(int requested, std::size_t backingDeviceCount);

/// "0,1,3": a device list for people and messages.
std::string formatDeviceList(const std::vector<int>& devices);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Fault injection (tests only)
/// @{

/// The driver calls that build (and tear down) a striped range.
enum class VmmStep {
  Reserve,      ///< cuMemAddressReserve, once per range.
  Create,       ///< cuMemCreate, once per stripe.
  Map,          ///< cuMemMap, once per stripe.
  Release,      ///< cuMemRelease, once per stripe (right after its map).
  SetAccess,    ///< cuMemSetAccess, once per range.
  Unmap,        ///< cuMemUnmap (free and rollback).
  AddressFree,  ///< cuMemAddressFree (free and rollback).
};

/// "cuMemMap": the driver call behind a step.
const char* stepCallName(VmmStep step) noexcept;

/// True for the steps that happen once per stripe (create, map, release).
bool isPerStripeStep(VmmStep step) noexcept;

/// True for the steps a FaultInjection can name: the build steps reserve, create, map, release
/// and set access (not unmap and address free, which only run when a range is freed).
bool isInjectableStep(VmmStep step) noexcept;

/**
 * A test-only request: make the @p index-th call of @p step fail, without calling the driver,
 * as if the driver had returned kInjectedResult. Only the build steps (isInjectableStep()) can
 * be injected; @p index is the stripe for per-stripe steps and 0 for the others.
 */
struct FaultInjection {
  VmmStep step = VmmStep::Create;  ///< Which call fails.
  int index = 0;                   ///< Which stripe (per-stripe steps) or 0.
  /// Two injections are equal when they name the same call.
  bool operator==(const FaultInjection& other) const noexcept {
    return step == other.step && index == other.index;
  }
};

/// What an injected failure pretends the driver returned.
inline constexpr CUresult kInjectedResult = CUDA_ERROR_OUT_OF_MEMORY;

/**
 * Parses `--inject-failure`: `reserve`, `create:K`, `map:K`, `release:K` or `access` (`:0` is
 * also accepted for the once-per-range steps; `K` defaults to 0).
 * @throws UsageError naming the option and the accepted forms.
 */
FaultInjection parseFaultInjection(std::string_view text);

/// "map:3", "access": the spelling parseFaultInjection() reads back.
/// @throws std::invalid_argument for a step that cannot be injected (see isInjectableStep()).
std::string formatFaultInjection(const FaultInjection& fault);

/// @throws UsageError when @p fault names a stripe that a range of @p stripeCount stripes lacks.
void validateFaultInjection(const FaultInjection& fault, int stripeCount);

/**
 * The failures the rollback test injects for a range of @p stripeCount stripes: reserve; create
 * and map at the first, middle and last stripe; release at the middle stripe; set access. Each
 * leaves a different amount half-built. Duplicates (small counts) are removed; order is kept.
 */
std::vector<FaultInjection> rollbackScenarios(int stripeCount);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Building a range through a driver
/// @{

/**
 * The seven driver calls the allocator uses, so that the algorithm can run against the real
 * driver (CudaVmmDriver in striped_vmm.cpp) or a fake in the unit tests. Each returns what the
 * driver call returned.
 */
class VmmDriver {
 public:
  virtual ~VmmDriver() = default;
  /// cuMemAddressReserve(base, bytes, alignment, hint, 0).
  virtual CUresult reserve(CUdeviceptr* base, std::uint64_t bytes, std::uint64_t alignment,
                           CUdeviceptr hint) = 0;
  /// cuMemCreate of @p bytes of pinned memory on @p device.
  virtual CUresult create(CUmemGenericAllocationHandle* handle, std::uint64_t bytes,
                          int device) = 0;
  /// cuMemMap(address, bytes, 0, handle, 0).
  virtual CUresult map(CUdeviceptr address, std::uint64_t bytes,
                       CUmemGenericAllocationHandle handle) = 0;
  /// cuMemRelease(handle).
  virtual CUresult release(CUmemGenericAllocationHandle handle) = 0;
  /// One cuMemSetAccess granting read-write access to every device in @p devices.
  virtual CUresult setAccess(CUdeviceptr base, std::uint64_t bytes,
                             const std::vector<int>& devices) = 0;
  /// cuMemUnmap(address, bytes).
  virtual CUresult unmap(CUdeviceptr address, std::uint64_t bytes) = 0;
  /// cuMemAddressFree(base, bytes).
  virtual CUresult addressFree(CUdeviceptr base, std::uint64_t bytes) = 0;
  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)": how to print a result.
  virtual std::string describe(CUresult result) = 0;
};

/// Host time spent in each build step, summed over stripes, in milliseconds.
struct StepTimes {
  double reserveMs = 0;    ///< cuMemAddressReserve.
  double createMs = 0;     ///< All cuMemCreate calls.
  double mapMs = 0;        ///< All cuMemMap calls.
  double releaseMs = 0;    ///< All cuMemRelease calls.
  double setAccessMs = 0;  ///< cuMemSetAccess.
};

/// Options of buildStripedRange() beyond the layout.
struct BuildOptions {
  CUdeviceptr addressHint = 0;          ///< Where to try to reserve (0: anywhere).
  std::optional<FaultInjection> fault;  ///< Test only: the call that is made to fail.
  StepTimes* times = nullptr;           ///< Filled with the time of each step when not null.
};

/**
 * A failed build step, after the rollback has run.
 *
 * what() reads `cuMemMap failed at striped_vmm_logic.cpp:123 for stripe 3 of 8 (device 0, VA
 * offset 0x600000, 2.00 MiB): CUDA_ERROR_OUT_OF_MEMORY (out of memory) [injected by
 * --inject-failure map:3]; rolled back: 3 stripes unmapped, 1 handle released, address range
 * freed`.
 */
class VmmStepError : public CudaError {
 public:
  /// @param result what the step returned (or kInjectedResult).
  /// @param message the full description.
  /// @param step the step that failed.
  /// @param stripe the stripe it failed for, or -1 for a once-per-range step.
  /// @param injected whether FaultInjection caused it.
  /// @param reservedBase where the range was reserved before the failure (0: reserve failed).
  VmmStepError(CUresult result, const std::string& message, VmmStep step, int stripe, bool injected,
               CUdeviceptr reservedBase)
      : CudaError(result, message),
        step_(step),
        stripe_(stripe),
        injected_(injected),
        reservedBase_(reservedBase) {}
  /// The step that failed.
  VmmStep step() const noexcept { return step_; }
  /// The stripe the step failed for, or -1 for reserve and set access.
  int stripe() const noexcept { return stripe_; }
  /// True when the failure was injected rather than returned by the driver.
  bool injected() const noexcept { return injected_; }
  /// The address the reservation had (now freed again), 0 when the reservation itself failed.
  CUdeviceptr reservedBase() const noexcept { return reservedBase_; }

 private:
  VmmStep step_;
  int stripe_;
  bool injected_;
  CUdeviceptr reservedBase_;
};

/**
 * Builds a striped range: reserve the virtual addresses; for each stripe create the physical
 * allocation, map it at its offset and release the handle (the mapping keeps the memory alive);
 * then one cuMemSetAccess over the whole range for every mapping device.
 *
 * **Rollback.** If any call fails, exactly what was created is undone before the error leaves:
 * mapped stripes are unmapped (one by one, each exactly as it was mapped), a handle not yet
 * released is released, the reservation is freed. Then VmmStepError names the step, the stripe
 * and what the rollback did (and any rollback call that failed, too).
 *
 * @param driver the driver to call.
 * @param layout from planStripes(); stripes are mapped at `base + stripe.offset`.
 * @param mappingDevices devices to grant read-write access; not empty.
 * @param options address hint, fault injection and timing.
 * @return the base address of the range of `layout.roundedBytes` bytes.
 * @throws VmmStepError after the rollback; std::invalid_argument for an empty layout or list,
 *         or a fault on a step that cannot be injected (it would silently never fire).
 */
CUdeviceptr buildStripedRange(VmmDriver& driver, const StripeLayout& layout,
                              const std::vector<int>& mappingDevices, const BuildOptions& options);

/// What releaseStripedRange() got back from the driver.
struct ReleaseResult {
  CUresult unmap = CUDA_SUCCESS;        ///< cuMemUnmap of the whole range.
  CUresult addressFree = CUDA_SUCCESS;  ///< cuMemAddressFree of the whole range.
};

/**
 * Frees a range built by buildStripedRange(): one cuMemUnmap over the whole rounded size (which
 * also frees the physical memory, since the handles were released right after mapping), then
 * cuMemAddressFree of the same size. Both calls are made even if the first fails.
 */
ReleaseResult releaseStripedRange(VmmDriver& driver, CUdeviceptr base,
                                  std::uint64_t roundedBytes) noexcept;

/// @}

// ------------------------------------------------------------------------------------------------
/// @name What the driver reports about a built range
/// The sample asks the driver, from inside every stripe, which reservation the address belongs
/// to, and asks every device which access it has. These functions turn the answers into the
/// verdict: any line they return makes the run FAIL.
/// @{

/// What cuPointerGetAttribute reported from inside one stripe.
struct StripeReservationView {
  int stripe = 0;                          ///< The stripe the queried address lies in.
  std::optional<CUdeviceptr> rangeStart;   ///< RANGE_START_ADDR; nullopt when the query failed.
  std::optional<std::uint64_t> rangeSize;  ///< RANGE_SIZE; nullopt when the query failed.
  std::string failure;                     ///< Why a query failed; empty when both answered.
};

/**
 * One line per stripe that does not report the reservation [@p base, @p base + @p bytes): a
 * different start or size (both printed exactly, in hex and in bytes) or a query that failed.
 * Empty when every stripe sees the one reservation, i.e. the kernel gets one pointer.
 */
std::vector<std::string> reservationProblems(CUdeviceptr base, std::uint64_t bytes,
                                             const std::vector<StripeReservationView>& views);

/// What cuMemGetAccess reported for one device.
struct DeviceAccessView {
  int device = 0;  ///< The device ordinal asked about.
  std::optional<unsigned long long>
      flags;            ///< The CUmemAccess_flags; nullopt when the call failed.
  std::string failure;  ///< Why the call failed; empty when it answered.
};

/// "read-write", "read", "none" or "flags N": a CUmemAccess_flags value for people.
std::string accessFlagsName(unsigned long long flags);

/**
 * One line per mapping device whose access is not read-write: another flag value, a failed
 * cuMemGetAccess, or no answer for it in @p views at all. Devices that are not mapping devices
 * are not judged (they were never granted anything).
 */
std::vector<std::string> accessProblems(const std::vector<int>& mappingDevices,
                                        const std::vector<DeviceAccessView>& views);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Reporting
/// @{

/**
 * The layout as a table, one row per stripe: index, device, VA start, VA offset, size; then the
 * requested and reserved sizes and the padding. A requested size or padding that is not a whole
 * number of B, KiB, MiB... is printed exactly in bytes (formatBytes() would round it).
 * @param layout the layout.
 * @param base the range's base address (0 prints offsets only as addresses too).
 * @param maxRows rows shown; larger layouts show the first and last rows around a "..." line.
 */
std::string formatLayoutTable(const StripeLayout& layout, CUdeviceptr base, int maxRows = 8);

/// The stripe indices a table of at most @p maxRows rows shows: all of them (also for
/// @p maxRows <= 0), or the first ceil(maxRows / 2) and the last floor(maxRows / 2).
std::vector<int> sampleIndices(int count, int maxRows);

/// "0x7f3a00000000": an address in hex.
std::string formatAddress(std::uint64_t address);

/**
 * Whether free memory came back after a failed build: true when @p afterBytes is less than
 * @p tolerance below @p beforeBytes. With the granularity as tolerance, one leaked stripe (at
 * least one granularity) is always caught. More free memory afterwards (another process freed
 * some) also counts as restored.
 */
bool freeMemoryRestored(std::uint64_t beforeBytes, std::uint64_t afterBytes,
                        std::uint64_t tolerance) noexcept;

/// Milliseconds per GiB (2^30 bytes): @p milliseconds spent on @p bytes. NaN for 0 bytes.
double millisecondsPerGiB(double milliseconds, std::uint64_t bytes) noexcept;

/// @}

}  // namespace memsamples::vmm
