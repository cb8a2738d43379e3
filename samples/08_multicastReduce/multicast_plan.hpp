/**
 * @file multicast_plan.hpp
 * @brief The CUDA-free decisions of 08_multicastReduce: which GPUs form the team, how the buffer
 *        is sized for the multicast granularity and laid out, how it is split into per-GPU
 *        shares, the values it is checked with, and the options. Unit tested without a GPU
 *        (ctest/unit/multicastReduce).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memsamples.hpp"
#include "support/devices.hpp"
#include "support/timing.hpp"

namespace memsamples::multicast {

/// The largest team the sample runs (the peer-load kernel takes this many copies).
inline constexpr int kMaxTeam = 8;
/// The oldest GPUs with multimem instructions: compute capability 9.0 (sm_90).
inline constexpr int kMinComputeMajor = 9;
/// One barrier counter per block: the all-reduce grid has at most this many blocks.
inline constexpr unsigned int kMaxBlocks = 1024;
/// Bytes of one element of the multimem instructions used (.v4.f32): shares are whole float4.
inline constexpr std::size_t kVectorBytes = 16;

/// The options of the sample.
struct Options {
  CommonOptions common;                    ///< --device (the broadcasting GPU), timing, --json...
  std::optional<std::uint64_t> sizeBytes;  ///< --size: bytes to all-reduce (default 256M).
  std::vector<int> devices;                ///< --devices: the team; empty: every capable GPU.
  /// --bind-by-address: each copy joins the object with cuMulticastBindAddr, through the address
  /// of its unicast mapping, instead of cuMulticastBindMem with its handle.
  bool bindByAddress = false;
};

/// The default --size: 256 MiB.
inline constexpr std::uint64_t kDefaultBytes = 256ull << 20;
/// The largest --size: 1 TiB. Every member holds three buffers of this size (its copy, the
/// copy-engine reference's scratch, the broadcast source) and the host one more, so a larger
/// value is a typing mistake on any machine, and it is reported as one before the devices are
/// asked anything.
inline constexpr std::uint64_t kMaxBytes = 1ull << 40;

/// Registers the sample's options (common ones included) into @p options.
void addOptions(CommandLine& commandLine, Options& options);

/// Checks a --size value: at most kMaxBytes, and a whole number of float4 (16 bytes).
/// @throws UsageError naming the value.
void validateSize(const std::optional<std::uint64_t>& sizeBytes);

// ------------------------------------------------------------------------------------------------

/**
 * Whether whoever runs this machine has turned NVLink multicast off, by one of the switches that
 * NCCL, NVSHMEM and PyTorch obey: NCCL_NVLS_ENABLE=0, or NVSHMEM_DISABLE_NVLS or
 * TORCH_SYMM_MEM_DISABLE_MULTICAST set to a true value (1, y, yes, true, on; any case).
 * A multicast object lives in the NVSwitch fabric that every GPU of the host shares, so the sample
 * honours the same switches as the libraries instead of creating one behind their back.
 * @return "" when none is set, else the waiver, naming the variable and its value.
 */
std::string multicastTurnedOff(const EnvironmentLookup& lookup);

/**
 * The waiver where kernel launches block the host until the kernel has run
 * (launchesBlockTheHost(), Common). The all-reduce kernels of all GPUs must run at once (they
 * meet at a barrier), and the sample launches them one after the other from one thread: the
 * first launch would return only when its kernel ended, which waits for a GPU whose kernel was
 * never launched.
 * @return "" when launches are asynchronous, else the waiver.
 */
std::string launchesBlock(const EnvironmentLookup& lookup);

// ------------------------------------------------------------------------------------------------

/// What the driver says about one device, as the team selection needs it.
struct DeviceCapability {
  bool multicastSupported = false;  ///< CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED != 0
  int computeMajor = 0;             ///< CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  int computeMinor = 0;             ///< CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
  DeviceScore score;                ///< SMs and clock: the default root is the fastest member.
  /// CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH != 0: the all-reduce is launched with
  /// cuLaunchCooperativeKernel, which needs it.
  bool cooperativeLaunch = false;
  /// CU_DEVICE_ATTRIBUTE_COMPUTE_MODE (a CUcomputemode): PROHIBITED admits no context.
  int computeMode = CU_COMPUTEMODE_DEFAULT;
  /// peerAccess[j]: cuDeviceCanAccessPeer(this device, device j) = 1, i.e. this device may map
  /// device j's memory (index = ordinal; a device's own entry is not read). Every member's copy
  /// is mapped for every other member (cuMemSetAccess), so members need it both ways.
  std::vector<bool> peerAccess;
};

/// Why device @p ordinal cannot take part, or "" when it can (multicast, sm_90 or newer,
/// cooperative launches, and a compute mode that admits a context: Common's
/// computeModeProblem() for this one process).
std::string whyNotMember(const DeviceCapability& device, int ordinal);

/// A GPU left out of the team, and why.
struct LeftOutDevice {
  int ordinal = 0;     ///< Its ordinal.
  std::string reason;  ///< A sentence that names the device.
};

/// The team and the GPU that broadcasts, or why this machine cannot run the sample.
struct TeamChoice {
  std::vector<int> members;  ///< Device ordinals, ascending (or in --devices order).
  int root = -1;             ///< The broadcasting member's ordinal.
  std::string waiver;        ///< Non-empty: the reason to waive (members is then empty).
  /// Without --devices: each GPU that is not a member, and why (whyNotMember(), or no peer of
  /// the team), in ordinal order.
  std::vector<LeftOutDevice> leftOut;
};

/**
 * Chooses the team from the capability table @p devices (index = ordinal).
 *
 * Without @p requested: every device that can take part and can access every member before it
 * as a peer, both ways, the first kMaxTeam of them. With it: exactly those devices, each of which
 * must be able to take part, and every two of which must be peers (else a waiver naming the
 * device or the pair). Fewer than two members: a waiver that says how many GPUs qualify and why
 * the others do not.
 * The root is @p root when given (it must be a member, and a compute mode that forbids a
 * context waives naming it), else the fastest member (pickFastestDevice(), as every sample's
 * default device; ties go to the lower ordinal).
 * @throws UsageError for an ordinal outside the table (in @p requested or @p root) and for more
 *         than kMaxTeam in @p requested, before any waiver, so that such a mistake is reported
 *         as one on every machine; and for a @p root that is not a member of a team that can
 *         run (on a machine without one, the waiver is the answer).
 */
TeamChoice chooseTeam(const std::vector<DeviceCapability>& devices,
                      const std::vector<int>& requested, const std::optional<long long>& root);

/// What step 2 found of one member of a TeamChoice when it retained its primary context: plain
/// data, so that the unit tests can describe any machine.
struct MemberState {
  int ordinal = 0;                           ///< Its ordinal.
  int computeMode = CU_COMPUTEMODE_DEFAULT;  ///< CU_DEVICE_ATTRIBUTE_COMPUTE_MODE.
  /// It must take part: the root (`--device`, or the fastest member), or named by `--devices`.
  bool required = false;
  std::string contextRefused;   ///< Why its primary context was refused (a busy GPU), or empty.
  std::uint64_t freeBytes = 0;  ///< cuMemGetInfo in its primary context; 0 when it has none.
};

/// The team that can hold the buffer, and the buffer's size.
struct TeamFit {
  std::vector<int> members;            ///< The members kept, in the order of the choice.
  std::vector<LeftOutDevice> leftOut;  ///< The members left out, in the order of the choice.
  std::uint64_t dataBytes = 0;         ///< Bytes to all-reduce (every member holds 3 buffers).
};

/**
 * Which members of a team (@p members, in the order of the choice) take part, and the bytes to
 * all-reduce: @p size, or else kDefaultBytes cut to the free memory of the required members (the
 * root and the GPUs `--devices` names; chooseBufferBytes() for 3 buffers per GPU: its copy, the
 * copy-engine reference's scratch, the broadcast source). A member nobody named is left out,
 * with the reason, when its primary context was refused or when the 3 buffers do not fit in 80 %
 * of its free memory (the share chooseBufferBytes() leaves a device): it never shrinks the run.
 * @throws WaivedError naming a required member that refused a context, or when fewer than two
 *         members are left (naming the ones left out); UsageError or std::runtime_error as
 *         chooseBufferBytes() for a @p size that does not fit a required member.
 */
TeamFit fitTeam(const std::vector<MemberState>& members, const std::optional<std::uint64_t>& size);

// ------------------------------------------------------------------------------------------------

/// Where things are in each GPU's copy of the multicast buffer:
///
///     0                  counterOffset      counterOffset + counterBytes     allocationBytes
///     | data: dataBytes  | (pad) | barrier counters |          padding           |
///
/// allocationBytes is a multiple of the granularity: it is the multicast object's size, the
/// size of every GPU's cuMemCreate allocation and of both mappings. The granularity is the unit
/// the size is rounded to and the mappings' alignment: the multicast granularity chosen (the
/// recommended or the minimum one, allocationGranularity()) made a multiple of every member's
/// cuMemCreate granularity, their least common multiple.
struct BufferLayout {
  std::size_t dataBytes = 0;        ///< The all-reduced bytes (--size).
  std::size_t counterOffset = 0;    ///< Where the barrier counters start (128-byte aligned).
  std::size_t counterBytes = 0;     ///< kMaxBlocks counters of 4 bytes.
  std::size_t granularity = 0;      ///< The unit the size is rounded to (see above).
  std::size_t allocationBytes = 0;  ///< Everything, rounded up to granularity.
};

/// @p bytes rounded up to a multiple of @p granularity.
/// @throws std::invalid_argument for a granularity of 0; std::overflow_error when it overflows.
std::size_t roundUp(std::size_t bytes, std::size_t granularity);

/**
 * The layout for @p dataBytes with the multicast granularities cuMulticastGetGranularity gave:
 * the recommended one where the buffer fills it (allocationGranularity(), Common), else the
 * minimum; and a multiple of @p allocationMinimum too (cuMemGetAllocationGranularity), because
 * the same size is also given to cuMemCreate and cuMemMap.
 * @throws std::invalid_argument for a minimum of 0.
 */
BufferLayout planLayout(std::size_t dataBytes, std::size_t minimumGranularity,
                        std::size_t recommendedGranularity, std::size_t allocationMinimum);

/// One GPU's part of the buffer, in float4 (kVectorBytes).
struct Share {
  std::uint64_t first = 0;  ///< Index of its first float4.
  std::uint64_t count = 0;  ///< How many float4.
};

/// Splits @p vectors float4 into @p teamSize contiguous shares that cover them in order, sizes
/// differing by at most one. @throws std::invalid_argument for a team size below 1.
std::vector<Share> splitShares(std::uint64_t vectors, int teamSize);

/// The all-reduce bus bandwidth factor for @p teamSize GPUs, 2 (n - 1) / n, as NCCL reports it:
/// the bytes each GPU must send and receive for an all-reduce of one byte. @p teamSize >= 1.
double allReduceBusFactor(int teamSize);

// ------------------------------------------------------------------------------------------------

/// Member @p member's input at element @p index: a small integer (0 to 255 + member), so that
/// every sum is exact in float whatever order the hardware adds in.
float inputValue(int member, std::uint64_t index);

/// The sum of every member's inputValue() at @p index for a team of @p teamSize.
float expectedSum(int teamSize, std::uint64_t index);

/// The broadcast source at @p index (distinct from every input value).
float broadcastValue(std::uint64_t index);

/// The first element where @p actual differs from what @p expected gives, and how many do.
struct Mismatch {
  std::uint64_t count = 0;  ///< Wrong elements.
  std::uint64_t first = 0;  ///< The first wrong one (valid when count > 0).
  float expected = 0;       ///< Its expected value.
  float actual = 0;         ///< What was there.
};

/// Compares @p actual[0, n) with @p expected(i), exactly.
template <typename Expected>
Mismatch compareExactly(const float* actual, std::uint64_t n, Expected expected) {
  Mismatch result;
  for (std::uint64_t i = 0; i < n; ++i) {
    const float want = expected(i);
    if (actual[i] != want) {
      if (result.count++ == 0) {
        result.first = i;
        result.expected = want;
        result.actual = actual[i];
      }
    }
  }
  return result;
}

/// "exact" or "element 5: expected 3, got 1 (2 wrong)".
std::string describe(const Mismatch& mismatch);

// ------------------------------------------------------------------------------------------------

/**
 * What @p result of the driver call @p call says about this system, when it says that the
 * system cannot run the sample now rather than that the sample is wrong: the waiver, naming the
 * call and the result, or "" (then the result is an error of the run). Exactly these waive:
 * CUDA_ERROR_NOT_PERMITTED and CUDA_ERROR_NOT_SUPPORTED from cuMulticastGetGranularity,
 * cuMulticastCreate, cuMulticastAddDevice, cuMulticastBindMem, cuMulticastBindAddr and cuMemMap;
 * CUDA_ERROR_OUT_OF_MEMORY (the fabric's multicast resources, which other programs share) from
 * cuMulticastCreate and cuMulticastAddDevice; CUDA_ERROR_SYSTEM_NOT_READY (system software not
 * running) from either bind call. An out-of-memory or CUDA_ERROR_ILLEGAL_STATE answer of a bind
 * call or cuMemMap is an error of the run: a wrong size, offset or order of the sample's own
 * calls can cause it.
 * Pure: it calls no driver function.
 */
std::string systemWaiver(std::string_view call, CUresult result);

}  // namespace memsamples::multicast
