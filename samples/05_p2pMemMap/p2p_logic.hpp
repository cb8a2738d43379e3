/**
 * @file p2p_logic.hpp
 * @brief The CUDA-free half of 05_p2pMemMap: which device pairs to test, why a machine is waived,
 *        the data pattern every transfer is checked with, how a copy figure is counted, and the
 *        matrices the sample prints.
 *
 * Conventions used everywhere in the sample:
 * - A **pair** `A:B` is ordered: the memory lives on the **owner** A and is used by the
 *   **accessor** B (B's kernel reads and writes it; B's copies pull data from A to B). Peer
 *   access is directional, so `0:1` and `1:0` are different pairs.
 * - In every matrix, **rows are owners** (where data comes from) and **columns are accessors**
 *   (where it goes), so cell (A, B) is pair `A:B`.
 * - The machine is described by DeviceTopology, which the lesson fills in with the driver's
 *   answers: `canAccessPeer[b][a]` is cuDeviceCanAccessPeer(b, a), "b can access a's memory",
 *   so pair `A:B` is possible when `canAccessPeer[B][A]`.
 *
 * Nothing here calls into libcuda: cuda.h is included for its types only, so all of it is unit
 * tested with fake machines (one GPU, two GPUs without access, four with partial access...).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memsamples.hpp"
#include "support/device_matrix.hpp"
#include "support/devices.hpp"
#include "support/word_pattern.hpp"

/// The logic of 05_p2pMemMap (peer access, VMM peer mappings, peer bandwidth).
namespace memsamples::p2p {

/// The machine as the driver describes it (Common); step 2 of the lesson reads it.
using memsamples::DeviceTopology;

/// Buffers one path test holds on the owner at once: A, B and C.
inline constexpr int kPathBuffers = 3;

// ------------------------------------------------------------------------------------------------
/// @name Device pairs
/// @{

/// An ordered pair of devices: memory on @ref owner, used by @ref accessor.
struct DevicePair {
  int owner = 0;     ///< Device whose memory is accessed (the source of the copies).
  int accessor = 0;  ///< Device whose kernels and copies access it (the destination).
  /// Two pairs are equal when owner and accessor are.
  bool operator==(const DevicePair& other) const noexcept {
    return owner == other.owner && accessor == other.accessor;
  }
};

/// "0:1": a pair as `--pairs` spells it (owner:accessor).
std::string formatPair(const DevicePair& pair);

/// "0:1, 1:0": pairs for people and messages; "(none)" when empty.
std::string formatPairList(const std::vector<DevicePair>& pairs);

/**
 * Parses `--pairs`: a comma-separated list of `OWNER:ACCESSOR`, e.g. `0:1,1:0`.
 *
 * Only the spelling is checked here (two non-negative integers per item, two different devices,
 * no pair twice); whether the devices exist is checked by planPairs(), which knows the machine.
 * @throws UsageError naming `--pairs` and the item at fault.
 */
std::vector<DevicePair> parsePairList(std::string_view text);

/// "0<->1": a pair measured in both directions at once (the unordered pair, lower device first).
std::string formatBothWays(const DevicePair& pair);

/// What the command line asks of the run, spelled right (checkOptions()).
struct Request {
  std::vector<DevicePair> pairs;      ///< `--pairs`, parsed; empty: every pair.
  bool loopback = false;              ///< `--loopback`.
  std::optional<long long> device;    ///< `--device`.
  std::optional<std::uint64_t> size;  ///< `--size`, bytes per buffer.
};

/// The largest `--size`: 1 TiB per buffer. A pair's owner holds three buffers of it (A, B and C),
/// and the host three pinned ones, so a larger value is a typing mistake on any machine, and it
/// is reported as one before any device is asked anything.
inline constexpr std::uint64_t kMaxBufferBytes = 1ull << 40;

/**
 * Step 1 of the lesson, before any GPU work: the options' spelling. `--pairs` is parsed
 * (parsePairList()), refused with `--loopback` (a loopback run tests the one pair N:N of the
 * chosen device), and a `--size` must be
 * at most kMaxBufferBytes and whole floats (a multiple of 4 bytes). Whether the devices the
 * options name exist is checked once the driver is asked (checkRequestedDevices()).
 * @throws UsageError naming the option at fault.
 */
Request checkOptions(std::string_view pairs, bool loopback, const std::optional<long long>& device,
                     const std::optional<std::uint64_t>& size);

/**
 * Which ordered pairs the sample tests, why the others are not tested, and the per-device
 * state it needs for them.
 *
 * An **endpoint** is what the sample creates for one side of a transfer: a retain of a device's
 * primary context, the kernels loaded into it, one stream, a source and a destination buffer.
 * Normally each device has one endpoint, used as owner and as accessor. A loopback plan (one
 * device is owner and accessor) has two endpoints on that device, the owner's and the
 * accessor's: two streams of one context, so that the same-device copies and the "both
 * directions at once" timing still run two streams against each other.
 */
struct PairPlan {
  std::vector<DevicePair> tested;   ///< Pairs with peer access, in the order they run.
  std::vector<DevicePair> lacking;  ///< Candidate pairs without peer access (not tested).
  std::vector<int> devices;         ///< Devices that appear in @ref tested, ascending.
  /// Pairs whose two directions are both tested, with owner <= accessor: each is measured once
  /// more with both directions at the same time.
  std::vector<DevicePair> bidirectional;
  /// The device of each endpoint, in creation order: @ref devices, or a loopback device twice.
  std::vector<int> endpoints;
  /// True for planLoopback()'s plan: owner == accessor, no peer link is involved.
  bool loopback = false;
};

/**
 * Refuses `--device` and `--pairs` values that name a device this machine does not have: a
 * typo is a usage error (exit 1) on every machine, also on one that would be waived. Nothing is
 * checked on a machine without devices (that one is waived, there is nothing to compare with).
 * @param deviceCount cuDeviceGetCount.
 * @param requested `--pairs` as parsed by parsePairList(), or empty.
 * @param device `--device`, or nothing.
 * @throws UsageError naming the option, the device and the device count.
 */
void checkRequestedDevices(int deviceCount, const std::vector<DevicePair>& requested,
                           const std::optional<long long>& device);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Which GPUs take part (issue 33, R1)
/// A GPU the options do not name takes part only where it can: a compute mode that forbids a
/// context, a busy GPU that refused one, or too little free memory leaves it out, with the
/// reason, instead of waiving or shrinking the run. A GPU the options name takes part, or the run
/// is waived naming it.
/// @{

/// A GPU that may take part in a peer run, as step 3 found it: plain data, so that the unit tests
/// can describe any machine.
struct DeviceState {
  int ordinal = 0;  ///< Its ordinal.
  /// CU_DEVICE_ATTRIBUTE_COMPUTE_MODE (a CUcomputemode).
  int computeMode = CU_COMPUTEMODE_DEFAULT;
  std::string namedBy;          ///< The option that names it ("--pairs", "--device"), or empty.
  std::string contextRefused;   ///< Why its primary context was refused (a busy GPU), or empty.
  std::uint64_t freeBytes = 0;  ///< cuMemGetInfo in its primary context; 0 when it has none.
};

/// A GPU left out of the run, and why.
struct LeftOutDevice {
  int ordinal = 0;     ///< Its ordinal.
  std::string reason;  ///< A sentence that names the device.
};

/// The GPUs a peer run uses, those it leaves out, and the bytes per buffer it plans for.
struct DeviceChoice {
  std::vector<int> used;               ///< In ordinal order.
  std::vector<LeftOutDevice> leftOut;  ///< In ordinal order.
  std::uint64_t bytes = 0;             ///< Bytes per buffer every used GPU holds kPathBuffers of.
};

/// Why @p device must not get a context at all (its compute mode: Common's computeModeProblem()
/// for this one process), or empty. Asked before its primary context is retained.
std::string contextForbidden(const DeviceState& device);

/**
 * Which of @p devices a peer run uses. The bytes per buffer are @p size, or else @p defaultBytes
 * cut to the free memory of the devices the options name (chooseBufferBytes() for kPathBuffers
 * buffers); with no device named, @p defaultBytes. A device nobody named is left out when its
 * compute mode forbids a context, when its primary context was refused, or when kPathBuffers
 * buffers do not fit in 80 % of its free memory (the share chooseBufferBytes() leaves a device):
 * it never shrinks the buffers.
 * @throws WaivedError naming a named device whose compute mode forbids a context or that refused
 *         one; UsageError or std::runtime_error as chooseBufferBytes() for a @p size that does not
 *         fit a named device.
 */
DeviceChoice chooseDevices(const std::vector<DeviceState>& devices,
                           const std::optional<std::uint64_t>& size, std::uint64_t defaultBytes);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name The pairs
/// @{

/**
 * Decides which ordered pairs to test.
 *
 * The candidates are @p requested (`--pairs`) or, when it is empty, every ordered pair of two
 * different devices, owner-major (0:1, 0:2, ..., 1:0, 1:2, ...). With @p device (`--device N`)
 * only the candidates that involve device N are kept. A candidate `A:B` is tested when B can
 * access A's memory (`canAccessPeer[B][A]`), else it is listed in PairPlan::lacking.
 *
 * The checks run in this order, so that bad input is refused before any waiver:
 * 1. no device at all: WaivedError "needs 2 or more GPUs with peer access; this machine has 0";
 * 2. @p device or a device named in @p requested does not exist: UsageError
 *    (checkRequestedDevices());
 * 3. fewer than 2 devices: WaivedError "needs 2 or more GPUs with peer access; this machine has
 *    1";
 * 4. `--pairs` and `--device` leave nothing to test: UsageError;
 * 5. no candidate has peer access: WaivedError that names every pair lacking it.
 *
 * A device in @p leftOut (chooseDevices()) is in no candidate; fewer than 2 devices left is a
 * WaivedError, and every waiver then names the devices left out and why.
 *
 * @param topology the machine: VMM flags (unused here) and the cuDeviceCanAccessPeer matrix.
 * @param requested `--pairs` as parsed by parsePairList(), or empty.
 * @param device `--device`, or nothing.
 * @param leftOut the devices chooseDevices() left out, or none.
 * @throws std::invalid_argument when @p topology is malformed (the matrix is not N x N).
 */
PairPlan planPairs(const DeviceTopology& topology, const std::vector<DevicePair>& requested,
                   const std::optional<long long>& device,
                   const std::vector<LeftOutDevice>& leftOut = {});

/**
 * The plan of a `--loopback` run on one device: owner == accessor == @p device. It tests the one
 * pair `N:N`, in one direction and "both ways", with two endpoints on device N (see PairPlan).
 * Everything runs without a peer link, so it works on a machine with a single GPU; the figures
 * it produces are local-memory figures.
 * @param topology the machine (its size only).
 * @param device the chosen device (`--device`, or the fastest one).
 * @throws WaivedError "--loopback needs 1 GPU; this machine has 0" on a machine without any;
 *         UsageError (validateDeviceOrdinal()) when @p device does not exist;
 *         std::invalid_argument when @p topology is malformed.
 */
PairPlan planLoopback(const DeviceTopology& topology, int device);

/**
 * The endpoint (index into PairPlan::endpoints) that plays the owner of @p pair: the first
 * endpoint on the owner's device.
 * @throws std::invalid_argument naming the device when no endpoint is on it.
 */
std::size_t ownerEndpoint(const PairPlan& plan, const DevicePair& pair);

/**
 * The endpoint that plays the accessor of @p pair: the last endpoint on the accessor's device.
 * With one endpoint per device it is that one; in a loopback plan it is the second endpoint,
 * so owner and accessor use different streams and different buffers.
 * @throws std::invalid_argument naming the device when no endpoint is on it.
 */
std::size_t accessorEndpoint(const PairPlan& plan, const DevicePair& pair);

/**
 * Whether @p pair needs classic peer access (cuCtxEnablePeerAccess) for the accessor to use the
 * owner's cuMemAlloc memory: only across devices. On one device both sides use the device's
 * primary context, which reaches its own allocations anyway, and the driver refuses a context
 * as its own peer (CUDA_ERROR_INVALID_CONTEXT when peerContext is the current context).
 */
bool needsPeerAccess(const DevicePair& pair) noexcept;

/// The devices a VMM range of @p pair is mapped for with cuMemSetAccess: owner and accessor,
/// each once (only the owner for a loopback pair, whose owner is also its accessor).
std::vector<int> vmmMappingDevices(const DevicePair& pair);

/**
 * How many buffers of `--size` the sample may hold on one device at the same time: 3 during
 * the path tests (A, B and C), 2 per endpoint during the copy measurements (a source and a
 * destination), so 4 on the device of a loopback plan.
 */
int buffersPerDevice(const PairPlan& plan);

/**
 * Why the VMM path cannot run for @p pair, or nothing when it can: both devices must report
 * CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED (the owner creates the memory, the
 * accessor maps it). The classic path does not need it.
 * @throws std::out_of_range when a device of @p pair is not in @p topology.
 */
std::optional<std::string> vmmPathUnavailable(const DeviceTopology& topology,
                                              const DevicePair& pair);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name The access rights of a VMM range, read back
/// cuMemSetAccess grants them; cuMemGetAccess (asked by the lesson, step 6) says what each
/// device really got, and these judge the answers.
/// @{

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
/// @name The data every transfer is checked with
/// Each device's source buffer holds a pattern derived from a seed of its own, so a destination
/// that holds the right words proves that the data came from the right device. Destinations are
/// filled with kSentinelWord before each measurement, so a copy that wrote nothing cannot pass.
/// @{

/// The seed of the data that endpoint @p endpoint (see PairPlan) sends: different for every
/// endpoint, so also for the two endpoints of a loopback device.
std::uint32_t sourceSeed(int endpoint) noexcept;

/// @}

// ------------------------------------------------------------------------------------------------
/// @name How a copy figure is counted
/// As NVIDIA's nvbandwidth v0.8 counts it, so that the two can be compared: one timed sample is
/// kCopiesPerSample copies queued back to back between two events, a figure is bytes copied /
/// time (1 GB = 1e9 B) of the median sample, and "both directions at once" adds up what each
/// direction moved in its own time.
/// @{

/// Copies per timed sample (nvbandwidth's default loop count). One loop of copies between two
/// events, rather than an event pair around every copy, keeps the start and the drain of each
/// single copy out of the figure: only the first start and the last drain are in it.
inline constexpr int kCopiesPerSample = 16;

/**
 * GB/s of one sample: @p copies copies of @p bytesPerCopy bytes each took @p sampleMs.
 * @return NaN when @p sampleMs is not positive (like gigabytesPerSecond()).
 * @throws std::invalid_argument when @p copies is less than 1.
 */
double sampleGBps(std::uint64_t bytesPerCopy, int copies, double sampleMs);

/// The figures of one "both directions at once" measurement.
struct BothWaysFigures {
  double firstGBps = 0;   ///< Into the first endpoint: its bytes / its own median sample time.
  double secondGBps = 0;  ///< Into the second endpoint, likewise.
  /// firstGBps + secondGBps: how nvbandwidth counts its bidirectional "Total".
  double sumGBps = 0;
  /// Both directions' bytes / the median time from their common start until the later one
  /// finished: never above sumGBps, and equal to it only when both directions end together.
  double bothDoneGBps = 0;
};

/**
 * Counts a both-ways measurement from the median sample times: @p firstMs and @p secondMs of
 * each direction, from its own start to its own end, and @p bothDoneMs from the common start
 * until both had finished. Each direction moved @p copies x @p bytesPerCopy bytes per sample.
 * @throws std::invalid_argument when @p copies is less than 1.
 */
BothWaysFigures countBothWays(std::uint64_t bytesPerCopy, int copies, double firstMs,
                              double secondMs, double bothDoneMs);

/**
 * "one sample = 16 copies of 512 MiB queued back to back between two events, median of 20
 * samples": how a copy figure was measured, for the output next to the figures.
 */
std::string describeCopySamples(std::uint64_t bytesPerCopy, int copies, int samples);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Matrices
/// @{

/// A pair the driver refused to open with cuCtxEnablePeerAccess, and its answer.
struct PeerRefusal {
  DevicePair pair;     ///< The pair that was not measured.
  std::string reason;  ///< e.g. "cuCtxEnablePeerAccess refused: CUDA_ERROR_TOO_MANY_PEERS (...)".
};

/// formatGrid() of matrixCells(@p matrix, @p precision) with "refused" in the cell (owner,
/// accessor) of each pair in @p refused.
/// @throws std::out_of_range when a refused pair lies outside the matrix.
std::string formatMatrix(const DeviceMatrix& matrix, std::string_view rowLabel,
                         std::string_view columnLabel, int precision,
                         const std::vector<PeerRefusal>& refused = {});

/// @}

}  // namespace memsamples::p2p
