/**
 * @file p2pMemMap_measure.hpp
 * @brief What 05_p2pMemMap prepares, measures and reports: the machine and the pairs, the run's
 *        kernels, sizes and inputs, the timing and checking of the kernel on each path next to
 *        the same kernel on local memory, and the copy bandwidth of copy engines and SMs, one
 *        direction and both at once, counted as NVIDIA's nvbandwidth counts it; the tables and
 *        the JSON fields of all of it.
 *
 * The lesson (p2pMemMap.cpp) writes the calls of the two mappings and the kernel launch on the
 * accessor. These functions time the launch with CUDA events and check one more run of it, so
 * that every figure belongs to a transfer that was checked on its own; the copies are measured
 * the same way.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "p2p_logic.hpp"
#include "peer_context.hpp"
#include "support/vector_add.hpp"

namespace memsamples::p2p {

/// Threads per block of both kernels (VecAdd_kernel, Copy_kernel).
inline constexpr unsigned int kThreadsPerBlock = 256;

/// What cuMemGetAccess said about one VMM range, for each device it was asked about.
struct RangeAccess {
  std::string range;                    ///< "A", "B" or "C".
  std::vector<DeviceAccessView> views;  ///< One per mapping device.
};

/// One path (VMM, classic or the local reference) of one pair.
struct PathResult {
  bool ran = false;                 ///< False when the path could not run here.
  std::string note;                 ///< Why it did not run (e.g. the driver refused the pair).
  VectorAddCheck check;             ///< C compared with A + B after one more, untimed launch.
  TimingStats kernel;               ///< The timed launches.
  double gbps = 0;                  ///< 3 x bytes / median launch time.
  std::vector<RangeAccess> access;  ///< VMM path only: cuMemGetAccess on A, B and C.
  bool peerAccessEnabled = false;   ///< Classic path only: cuCtxEnablePeerAccess was asked for
                                    ///< (true also when the driver refused it: "refused").
  bool peerAccessAdopted = false;   ///< ...and it was already enabled by other code (left on).
};

/// The three paths of one pair, for the table, and the endpoints that play its two sides.
struct PairPaths {
  DevicePair pair;                     ///< The pair.
  const Endpoint* owner = nullptr;     ///< The endpoint whose memory is used.
  const Endpoint* accessor = nullptr;  ///< The endpoint whose kernel uses it.
  PathResult viaVmm;                   ///< Memory from cuMemCreate, shared by cuMemSetAccess.
  PathResult classic;                  ///< cuMemAlloc memory, shared by cuCtxEnablePeerAccess.
  PathResult local;                    ///< The same kernel on the accessor's own memory.
};

/**
 * What the steps of the lesson after the set-up share: the plan, its endpoints (the four given
 * when it is made: `Run run{options, plan, topology, endpoints};`), the sizes, the pinned host
 * buffers and one row of PairPaths per tested pair (prepareRun()), and the running tally of checks.
 * Its members are destroyed in reverse order: first the streams of every endpoint are waited for,
 * then the pinned buffers that their copies may use are freed.
 */
struct Run {
  const CommonOptions& options;         ///< `--iterations`, `--warmup`.
  const PairPlan& plan;                 ///< The pairs and endpoints.
  const DeviceTopology& topology;       ///< The machine.
  Endpoints& endpoints;                 ///< One per entry of PairPlan::endpoints.
  std::uint64_t bytes = 0;              ///< Bytes per buffer.
  std::size_t count = 0;                ///< Floats (and 32-bit words) per buffer.
  unsigned int vectorAddGrid = 0;       ///< Blocks of VecAdd_kernel: one float4 per thread.
  OwnedPinnedHostMemory hostA{};        ///< Pinned input A (portable: for every context).
  OwnedPinnedHostMemory hostB{};        ///< Pinned input B.
  OwnedPinnedHostMemory scratch{};      ///< Pinned read-backs and pattern uploads.
  std::vector<PairPaths> paths{};       ///< One per tested pair, in PairPlan order.
  SynchronizeOnExit drain{};            ///< Destroyed first: waits for every stream.
  int verifiedTransfers = 0;            ///< Transfers checked so far.
  std::vector<std::string> failures{};  ///< One line per failed check.
};

/**
 * Step 3 of the lesson: the machine and the pairs to test. First, before any output, a device
 * that `--device` or `--pairs` names and the machine lacks is a usage error
 * (checkRequestedDevices()), on every machine, also one that would be waived. Then it prints the
 * devices and the peer-access matrix, and adds `deviceCount`, `devices` and `peerAccess` to the
 * JSON. Each cell of the matrix adds what cuDeviceGetP2PAttribute says about that ordered pair's
 * link (performance rank, native atomics, ACCESS_SUPPORTED), asked with the accessor as source
 * device, the order of cuDeviceCanAccessPeer(accessor, owner) (Common's queryPeerLinks() and
 * describePeerLinks(), whose matrix 00 prints too). These are informative: a query the driver
 * does not answer is shown as "?" with the reason, and the run goes on. Then, for a peer run,
 * which GPUs take part (chooseDevices()): each that may (every device, or those `--pairs` lists)
 * is asked for its compute mode and, where that admits a context, its free memory in its primary
 * context (retained and released again); one the options do not name is left out where its
 * compute mode is PROHIBITED, its context is refused as busy, or three buffers of the default
 * size (or `--size`, or what the named GPUs hold) do not fit in 80 % of its free memory; a
 * `Left out:` line and `devicesLeftOut` in the JSON say why. Then the plan: planLoopback() on
 * `--device` or the fastest device (selectDevice()) with `--loopback`, else planPairs() without
 * the GPUs left out; printed and added to the JSON (reportPlan).
 * @param request the options, as checkOptions() read them.
 * @param topology the machine, as the lesson read it.
 * @param report where the text and the JSON go.
 * @return the plan.
 * @throws WaivedError without two devices that connect (after a hint that `--loopback` runs on
 *         one GPU, when the machine has one), or where a GPU the options name cannot take part;
 *         UsageError, CudaError.
 */
PairPlan choosePairs(const Request& request, const DeviceTopology& topology, Report& report);

/**
 * Step 4 of the lesson: in every endpoint's context, loads the two kernels from their fatbins
 * (cuModuleLoadData, cuModuleGetFunction), creates its stream and sizes the copy kernel's grid;
 * then chooses the bytes per buffer from @p size or 512 MiB (nvbandwidth's default), within
 * every endpoint's free memory (cuMemGetInfo, buffersPerDevice()) and the host's memory for the
 * three pinned buffers; allocates Run::hostA, hostB and scratch (cuMemHostAlloc PORTABLE) and
 * fills A and B; lays out Run::paths, one row per tested pair with its owner's and accessor's
 * endpoints, and has Run::drain wait for every endpoint's stream. Prints the `Kernels:` and
 * `Buffers:` lines.
 * @throws UsageError when @p size does not fit; CudaError; std::runtime_error for a fatbin.
 */
void prepareRun(Run& run, const std::optional<std::uint64_t>& size, std::ostream& out);

/**
 * Times @p launch (VecAdd_kernel writing @p c, queued on @p accessor's stream) over
 * `--iterations` launches after `--warmup`; then fills @p c with kSentinelWord on @p owner's
 * stream, runs @p launch once more and has @p owner read C back and compare it exactly with
 * A + B (Run::hostA, Run::hostB). The inputs must be in place. Both streams are idle when it
 * returns.
 * @throws CudaError.
 */
PathResult timeAndCheckSum(Run& run, const Endpoint& owner, const Endpoint& accessor, CUdeviceptr c,
                           const std::function<void()>& launch);

/// Records every wrong C of Run::paths in Run::failures, prints the path table with the ratios
/// VMM / classic, VMM / local and classic / local, and adds `paths` to @p json.
void reportPaths(Run& run, std::ostream& out, JsonObject& json);

/**
 * Step 8: copy bandwidth. Gives every endpoint a source holding a pattern of its own and a
 * destination, then times, as nvbandwidth does (describeCopySamples()): the copy inside each
 * device (cuMemcpyDtoDAsync and Copy_kernel, the reference), every tested pair in one direction
 * (cuMemcpyPeerAsync and Copy_kernel on the accessor, which pulls from the owner), and both
 * directions at once for every pair tested both ways (countBothWays()). Classic peer access is
 * enabled for one pair at a time, measured and disabled (measurePairByPair()); a pair the driver
 * refuses is shown as "refused" in the matrices and named. After each measurement the
 * destination is cleared, the copy runs once more and is compared word by word with the pattern
 * it came from. Prints the matrices and adds them to @p json.
 * @throws CudaError.
 */
void measureCopies(Run& run, std::ostream& out, JsonObject& json);

/// Prints the count of checked transfers and every failure, adds them to @p json, and returns
/// the verdict: Pass when nothing failed.
Verdict reportVerdict(const Run& run, std::ostream& out, JsonObject& json);

}  // namespace memsamples::p2p
