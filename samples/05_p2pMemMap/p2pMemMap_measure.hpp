/**
 * @file p2pMemMap_measure.hpp
 * @brief What 05_p2pMemMap measures and reports: the timing and checking of the kernel on each
 *        path next to the same kernel on local memory, and the copy bandwidth of copy engines and
 *        SMs, one direction and both at once, counted as NVIDIA's nvbandwidth counts it; the
 *        tables and the JSON fields of all of it.
 *
 * The lesson (p2pMemMap.cpp) writes the calls that move the data: the kernel launch on the
 * accessor, cuMemcpyPeerAsync and the copy kernel's launch. These functions repeat them, time
 * them with CUDA events and check one more run of each, so that every figure belongs to a
 * transfer that was checked on its own.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "p2p_logic.hpp"
#include "peer_context.hpp"
#include "support/vector_add.hpp"

namespace memsamples::p2p {

/// What the steps of the lesson after the set-up share: the plan, its endpoints, the sizes, the
/// pinned host buffers, and the running tally of checks.
struct Run {
  const CommonOptions& options;       ///< `--iterations`, `--warmup`.
  const PairPlan& plan;               ///< The pairs and endpoints.
  const DeviceTopology& topology;     ///< The machine.
  const Endpoints& endpoints;         ///< One per entry of PairPlan::endpoints.
  std::uint64_t bytes = 0;            ///< Bytes per buffer.
  std::size_t count = 0;              ///< Floats (and 32-bit words) per buffer.
  unsigned int vectorAddGrid = 0;     ///< Blocks of VecAdd_kernel: one float4 per thread.
  void* hostA = nullptr;              ///< Pinned input A (portable: pinned for every context).
  void* hostB = nullptr;              ///< Pinned input B.
  void* scratch = nullptr;            ///< Pinned read-backs and pattern uploads.
  int verifiedTransfers = 0;          ///< Transfers checked so far.
  std::vector<std::string> failures;  ///< One line per failed check.
};

/// What cuMemGetAccess said about one VMM range, for each device it was asked about.
struct RangeAccess {
  std::string range;                    ///< "A", "B" or "C".
  std::vector<DeviceAccessView> views;  ///< One per mapping device.
};

/// One path (VMM, classic or the local reference) of one pair.
struct PathResult {
  bool ran = false;                 ///< False when the path could not run here.
  std::string note;                 ///< Why it did not run.
  VectorAddCheck check;             ///< C compared with A + B after one more, untimed launch.
  TimingStats kernel;               ///< The timed launches.
  double gbps = 0;                  ///< 3 x bytes / median launch time.
  std::vector<RangeAccess> access;  ///< VMM path only: cuMemGetAccess on A, B and C.
  bool peerAccessEnabled = false;   ///< Classic path only: cuCtxEnablePeerAccess was used.
  bool peerAccessAdopted = false;   ///< ...and it was already enabled by other code (left on).
};

/// A path that could not run on this machine, and @p reason why.
PathResult skippedPath(std::string reason);

/// The three paths of one pair, for the table.
struct PairPaths {
  DevicePair pair;     ///< The pair.
  PathResult viaVmm;   ///< Memory from cuMemCreate, shared by cuMemSetAccess.
  PathResult classic;  ///< cuMemAlloc memory, shared by cuCtxEnablePeerAccess.
  PathResult local;    ///< The same kernel on the accessor's own memory.
};

/**
 * The copy calls the lesson writes, for the measurements to repeat. Each is called with the
 * destination endpoint's context current and must queue its copy on that endpoint's stream.
 */
struct CopyCalls {
  /// A copy engine copies Run::bytes from @p source (in @p from's memory) to @p destination (in
  /// @p to's memory).
  std::function<void(const Endpoint& to, CUdeviceptr destination, const Endpoint& from,
                     CUdeviceptr source)>
      copyEngine;
  /// The SMs of @p to copy Run::bytes from @p source (any device's memory that @p to can reach)
  /// to @p destination.
  std::function<void(const Endpoint& to, CUdeviceptr destination, CUdeviceptr source)> sm;
};

/**
 * Prints the devices and the peer-access matrix, and adds `deviceCount`, `devices` and
 * `peerAccess` to @p json. Each cell of the matrix adds what cuDeviceGetP2PAttribute says about
 * that ordered pair's link (performance rank, native atomics, ACCESS_SUPPORTED), asked with the
 * accessor as source device, the order of cuDeviceCanAccessPeer(accessor, owner). These are
 * informative: a query the driver does not answer is shown as "?" with the reason, and the run
 * goes on (the pairs are chosen with cuDeviceCanAccessPeer).
 * @param topology the machine, as the lesson read it.
 * @param devices the CUdevice of each ordinal.
 * @param out where the table goes.
 * @param json the result object.
 * @throws CudaError from cuDeviceGetName.
 */
void reportDevices(const DeviceTopology& topology, const std::vector<CUdevice>& devices,
                   std::ostream& out, JsonObject& json);

/// Prints the pairs to test (and the loopback notice) and adds them to @p json.
void reportPlan(const PairPlan& plan, std::ostream& out, JsonObject& json);

/**
 * Times @p launch (VecAdd_kernel writing @p c, queued on @p accessor's stream) over
 * `--iterations` launches after `--warmup`; then fills @p c with kSentinelWord on @p owner's
 * stream, runs @p launch once more and has @p owner read C back and compare it exactly with
 * A + B (Run::hostA, Run::hostB). The inputs must be in place.
 * @throws CudaError.
 */
PathResult timeAndCheckSum(Run& run, const Endpoint& owner, const Endpoint& accessor, CUdeviceptr c,
                           const std::function<void()>& launch);

/// Records every wrong C in Run::failures, prints the path table with the ratios VMM / classic,
/// VMM / local and classic / local, and adds `paths` to @p json.
void reportPaths(Run& run, const std::vector<PairPaths>& paths, std::ostream& out,
                 JsonObject& json);

/**
 * Copy bandwidth. Gives every endpoint a source holding a pattern of its own and a
 * destination, then times, as nvbandwidth does (describeCopySamples()): the copy inside each
 * device (cuMemcpyDtoDAsync and @p calls.sm, the reference), every tested pair in one direction
 * (@p calls, the accessor pulling from the owner), and both directions at once for every pair
 * tested both ways (countBothWays()). After each measurement the destination is cleared, the
 * copy runs once more and is compared word by word with the pattern it came from. Prints the
 * matrices and adds them to @p json.
 *
 * Requires classic peer access from each tested pair's accessor to its owner (the lesson's
 * step 7 leaves it enabled): the copy kernel reads the owner's cuMemAlloc memory through it.
 * @throws CudaError.
 */
void measureCopies(Run& run, const CopyCalls& calls, std::ostream& out, JsonObject& json);

/// Prints the count of checked transfers and every failure, adds them to @p json, and returns
/// the verdict: Pass when nothing failed.
Verdict reportVerdict(const Run& run, std::ostream& out, JsonObject& json);

}  // namespace memsamples::p2p
