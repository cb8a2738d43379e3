/**
 * @file multicast_team.hpp
 * @brief The team the multicastReduce lesson works with: who takes part (findTeam()), each
 *        member's context, stream and kernels, the buffer's size, and the checks and
 *        measurements the lesson runs on it (Team). The multicast calls themselves are the
 *        lesson's core, in multicastReduce.cpp.
 *
 * What the core builds for a team of two (every box is layout.allocationBytes long):
 *
 *     multicast object (cuMulticastCreate, cuMulticastAddDevice x 2)
 *          |  cuMulticastBindMem             |  cuMulticastBindMem
 *          v                                 v
 *     [GPU 0 memory] (cuMemCreate)      [GPU 1 memory] (cuMemCreate)
 *       ^        ^                        ^        ^
 *       |        '---- peer access -------+----.   |
 *     unicast 0 (VA, cuMemMap)          unicast 1 (VA, cuMemMap)
 *       access: GPU 0 and GPU 1           access: GPU 0 and GPU 1
 *
 *     multicast 0 (VA, cuMemMap of the    multicast 1 (VA, cuMemMap of the
 *       multicast object), access: GPU 0    multicast object), access: GPU 1
 *
 * A load or store through a unicast address touches one GPU's copy (its own, or a peer's over
 * NVLink); a multimem instruction through GPU g's multicast address touches every copy at once.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "memsamples.hpp"
#include "multicast_owners.hpp"
#include "multicast_plan.hpp"

namespace memsamples::multicast {

/// Threads per block of every kernel launch.
inline constexpr unsigned int kBlockSize = 512;

/**
 * Step 1 of the lesson, the platform probe: asks the driver about every device
 * (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, the compute capability,
 * CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE,
 * cuDeviceCanAccessPeer between every two), lets
 * chooseTeam() decide, and then, before any multicast call, reads the switches that turn NVLink
 * multicast off (multicastTurnedOff()) and blocking launches (launchesBlock()). Needs cuInit().
 * @throws WaivedError with the reason when this machine cannot run the sample; UsageError for
 *         a --devices or --device that names no device; CudaError.
 */
TeamChoice findTeam(const Options& options);

/**
 * check() for the calls whose failure can describe the system rather than the sample (in the
 * core: the multicast calls and both cuMemMap calls): a @p result that systemWaiver() maps is a
 * WaivedError naming @p call; any other failure is a CudaError, as check() throws it.
 */
void checkOrWaive(CUresult result, const char* call, const char* file = __builtin_FILE(),
                  int line = __builtin_LINE());

/// The kernels of multicast_kernel.fatbin, loaded in one member's context.
struct Kernels {
  CUfunction broadcast = nullptr;   ///< Multimem_broadcast_kernel
  CUfunction allReduce = nullptr;   ///< Multimem_allreduce_kernel
  CUfunction peerReduce = nullptr;  ///< Peer_allreduce_kernel
  CUfunction addParts = nullptr;    ///< Add_parts_kernel
};

/// One GPU of the team.
struct Member {
  int ordinal = -1;             ///< Its device ordinal.
  CUdevice device = 0;          ///< Its device handle.
  CUcontext context = nullptr;  ///< Its primary context (retained by the Team).
  CUstream stream = nullptr;    ///< A stream of that context.
  Kernels kernels;              ///< The kernels, loaded in that context.
  /// What cuMemCreate is asked for: device memory on this GPU. CU_MEM_ALLOCATION_TYPE_PINNED
  /// means that it stays where it is made (it does not migrate), not page-locked host memory.
  CUmemAllocationProp allocation = {};
  /// Read-write for this GPU alone, what its multicast mapping grants (cuMemSetAccess); the
  /// unicast mappings grant everyMember instead.
  CUmemAccessDesc access = {};
  CUdeviceptr unicast = 0;    ///< Its copy, through a mapping every member may use (the core).
  CUdeviceptr multicast = 0;  ///< The multicast mapping, for this GPU's kernels (the core).
};

/// Enqueues one member's part of an all-reduce on its stream (its context is current).
using MemberWork = std::function<void(std::size_t member)>;

/// What every copy must hold when the team checks it (Team::checkCopies()).
enum class Expect {
  broadcastSource,  ///< After the broadcast: broadcastValue(i), the root's source.
  exactSum,         ///< After an all-reduce: expectedSum(team size, i), the sum of the inputs.
};

/// How one all-reduce path did.
struct PathResult {
  std::string name;    ///< e.g. "multicast (multimem.ld_reduce + multimem.st)".
  Mismatch check;      ///< Every copy against the exact sum, after one run.
  TimingStats timing;  ///< One all-reduce of every member, start on member 0 to all done.
};

/**
 * The team as the lesson works with it. Made in step 2, it holds every member's retained primary
 * context, a stream and the kernels in each, the broadcast's source on the root, and the
 * buffer's size; it owns `memory`, whose owners the lesson's core fills and empties. What the
 * lesson reads of it are plain fields; its member functions are the steps around the technique:
 * the size, the inputs, the checks and the measurement.
 *
 * On an error path it releases everything in a safe order (C++ destroys the members last to
 * first): the streams are drained first, so that no kernel or copy still runs, then the modules
 * and the source go, then `memory` unbinds, unmaps, releases and frees, and the contexts are
 * released last. The root's context is current while the team lives: calls that need a current
 * context and name no device of their own find one.
 */
class Team {
 public:
  /**
   * Step 2: retains every member's primary context and asks its free memory (cuMemGetInfo);
   * fitTeam() sizes the buffer so that three buffers per GPU (its copy, the copy-engine
   * reference's scratch, the broadcast source) fit in the free memory of the root and of the GPUs
   * `--devices` names, and leaves out, printing why, a member nobody named that refused its
   * context as busy or cannot hold them (with those chooseTeam() left out; `devices_left_out` in
   * the JSON); the buffer is also cut to fit a check buffer in host memory; reads the allocation
   * granularity of every member (cuMemGetAllocationGranularity); creates a stream and loads the
   * kernels in each context (one grid for all: what every GPU holds resident at once); and puts
   * the broadcast's source on the root. Prints a line per member.
   * @throws UsageError for a --size that does not fit; WaivedError when fewer than two members
   *         can hold the buffer, or a member that must take part refused a context; CudaError.
   */
  Team(const TeamChoice& choice, const Options& options, Report& report);
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  ~Team();

  std::vector<Member> members;               ///< In the order of the choice.
  std::vector<CUmemAccessDesc> everyMember;  ///< Read-write for every member (unicast maps).
  BufferLayout layout;                       ///< dataBytes from step 2, the rest from step 3.
  std::vector<Share> shares;                 ///< Each member's share of the buffer, in float4.
  unsigned int grid = 0;                     ///< Blocks of every launch (the same on each GPU).
  unsigned int block = kBlockSize;           ///< Threads per block.
  std::size_t root = 0;                      ///< The member that broadcasts: members[root].
  /// The broadcast's source: layout.dataBytes on the root, holding broadcastValue(i).
  CUdeviceptr source = 0;
  unsigned long long vectors = 0;  ///< The buffer in float4, the kernels' element.

  /**
   * The size of the multicast object and of every copy and mapping, from the granularities
   * cuMulticastGetGranularity gave (planLayout(): the data and the barrier counters, rounded up
   * to a multiple of the recommended multicast granularity, or of the minimum one for a buffer
   * smaller than that, and of every member's allocation granularity). Also sets `layout` (the
   * granularity used, where the counters start) and prints one line with the size per GPU and
   * the granularities.
   */
  std::size_t roundToGranularity(std::size_t minimum, std::size_t recommended);

  /**
   * Readies every copy for the first all-reduce: zeroes the barrier counters (the all-reduce's
   * barriers count up from zero) and writes member g's inputs (inputValue(g, i)) into its data,
   * through each unicast mapping, and waits.
   */
  void prepareAllReduce();
  /// Enqueues @p work of every member (each within its context) and waits for all of them.
  void runOnTeam(const MemberWork& work) const;
  /// Reads every copy back through its unicast mapping and compares it, exactly, with what
  /// @p expected says it must hold; the first copy that differs is the answer.
  Mismatch checkCopies(Expect expected);

  /**
   * Step 7 (multicastReduce_measure.cpp): runs the two reference all-reduces (peer loads, copy
   * engine + local add) once on fresh inputs and checks them, times the three paths on the same
   * buffers (@p multicast is the lesson's) and a one-way peer copy as the link reference, and
   * reports them with the checks of the broadcast and of the multicast all-reduce. Every stream
   * is idle when it returns.
   * @return Pass when the broadcast and every path are exact.
   */
  Verdict measureAndReport(const MemberWork& multicast, const Mismatch& broadcast,
                           const Mismatch& multicastSums);

 private:
  void uploadInputs();  // member g's inputs into its copy (no counters: the timings reuse them)
  void synchronizeAll() const;
  std::vector<PathResult> measureAllReduce(const MemberWork& multicast,
                                           const Mismatch& multicastSums, TimingStats& linkCopy);
  Verdict reportRun(const Mismatch& broadcast, const std::vector<PathResult>& paths,
                    const TimingStats& linkCopy);

  const Options& options_;
  Report& report_;
  std::size_t allocationMinimum_ = 1;  // every member's cuMemCreate granularity, lcm
  std::vector<float> host_;            // the checks' host copy of one GPU's data
  // The owners, released last to first.
  std::vector<PrimaryContext> contexts_;
  std::optional<ScopedContext> rootCurrent_;

 public:
  /// The buffer's owners: the lesson's core fills them and, on the good path, empties them.
  TeamMemory memory;

 private:
  std::optional<ContextMemory> source_;
  std::vector<ContextModule> modules_;
  std::vector<ContextStream> streams_;  // last: drained before anything else is released
};

}  // namespace memsamples::multicast
