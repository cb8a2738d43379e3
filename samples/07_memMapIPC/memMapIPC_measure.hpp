/**
 * @file memMapIPC_measure.hpp
 * @brief The memMapIPC parent's scaffolding and measurements: what the device supports, sizes,
 *        the host copies of A, B and C, the timings, the proof of each release, and the report.
 *        The sharing itself is in memMapIPC.cpp and memMapIPC_worker.cpp.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ipc_protocol.hpp"
#include "memsamples.hpp"
#include "release_proof.hpp"
#include "support/vector_add.hpp"
#include "worker_processes.hpp"

namespace memsamples::ipc {

/// The default bytes per vector.
inline constexpr std::uint64_t kDefaultVectorBytes = 256ull << 20;

/// The largest `--size`: 1T per vector, more than any GPU holds (a usage error above it).
inline constexpr std::uint64_t kMaxVectorBytes = 1ull << 40;

/// Where the parent's memory is, and where the last worker runs.
struct Sharing {
  int ordinal = 0;     ///< The parent's device.
  int lastDevice = 0;  ///< The last worker's: another GPU that can import across, else ordinal.
};

/**
 * Prints "Device N: <name>", waives the run (WaivedError) naming what @p device lacks for the
 * three paths (VMM, POSIX-descriptor handles, pools that export descriptors, IPC events, unified
 * addressing), and, with 2 or more @p workers, looks for another device that can access this
 * one's memory (cuDeviceCanAccessPeer) for the last worker.
 */
Sharing probeSharing(CUdevice device, int workers, std::ostream& out);

/// The bytes per vector: `--size` @p requested, or kDefaultVectorBytes cut to what fits: 6
/// vectors in free device memory (3 shared, 3 for the reference), 3 pinned copies on the host.
/// Needs a current context. @throws UsageError for a `--size` that does not fit.
std::uint64_t sizeVectors(const std::optional<std::uint64_t>& requested);

/// @p bytes rounded up to the granularity of allocations made with @p prop
/// (cuMemGetAllocationGranularity; the recommended one where it fits, see allocationGranularity).
std::size_t vmmAllocationBytes(const CUmemAllocationProp& prop, std::uint64_t bytes);

/// Pinned host copies of A, B and C, with the reproducible inputs of every sample.
class HostVectors {
 public:
  /// Pinned A, B and C of @p count floats; A and B filled.
  explicit HostVectors(std::size_t count);
  /// Floats per vector.
  std::size_t count() const noexcept { return count_; }
  /// Queues A and B into @p pointers[0..1] and NaN into C (@p pointers[2]) on @p stream.
  void upload(const CUdeviceptr (&pointers)[3], CUstream stream) const;
  /// Copies C back from @p c (after everything queued on @p stream) and checks every element.
  VectorAddCheck download(CUdeviceptr c, CUstream stream) const;

 private:
  std::size_t count_;
  OwnedPinnedHostMemory a_;
  OwnedPinnedHostMemory b_;
  OwnedPinnedHostMemory c_;
};

/// Worker 0 times the kernel over all of its imported A, B and C (kBench, `--warmup` and
/// `--iterations` launches). @return the median ms of one launch.
double timeWorkerKernel(Workers& workers, const CommonOptions& options);

/// A worker's side of timeWorkerKernel(): the kernel over all of @p pointers (A, B and C of
/// @p job) on @p stream, as @p message (a kBench) asks; the answer, BenchDone, goes to @p socket.
void timeImportedKernel(int socket, const Message& message, CUfunction vecAdd,
                        const CUdeviceptr (&pointers)[3], const Job& job, CUstream stream);

/// The lesson's step 5 for one worker: exports the first @p allocations of A, B and C into a job
/// for worker @p worker and sends it.
using ShareWith = std::function<void(std::size_t worker, std::uint32_t allocations)>;

/// @p iterations handoffs of A alone to worker 0: @p shareWith(0, 1) exports and sends it, the
/// worker imports and maps it and answers when it was usable (Done), then drops it again.
/// @return the ms from before the export to the worker's mapping, each time (CLOCK_MONOTONIC, the
///         same clock in both processes).
std::vector<double> timeHandoffs(Workers& workers, const ShareWith& shareWith, int iterations);

/// The reference: the same kernel (loaded here) on the parent's own cuMemAlloc A, B and C,
/// median ms.
double timeOwnMemory(const HostVectors& host, CUstream stream, const CommonOptions& options);

/**
 * Proves that the parent released a path's memory with the driver's answers about its own
 * addresses (release_proof.hpp), never with the device's free memory, which other processes
 * change. watch() asks about A, B and C once they exist; confirm() asks again once they are
 * released, on the good path or after an error.
 */
class ReleaseProof {
 public:
  /// Notes the device's free memory now, for the report's line of information.
  explicit ReleaseProof(CUstream stream);
  /// Asks the driver about @p pointers, just created (cuMemGetAddressRange), once the stream
  /// has reached their allocation.
  void watch(const CUdeviceptr (&pointers)[3]);
  /// Waits for the stream, so that the pool's frees have completed, and notes @p pool's
  /// CU_MEMPOOL_ATTR_USED_MEM_CURRENT.
  void poolInUse(CUmemoryPool pool);
  /// Waits for the stream (frees in stream order complete), asks again about what watch() saw,
  /// and judges. @return the problems (none: released), or none when nothing is watched.
  /// Throws nothing: it also runs on an error path.
  std::vector<std::string> confirm() noexcept;
  /// confirm() for the path in flight when an error came: "After the error, ..." lines, one per
  /// problem or one that says the release is proved; "" when nothing was watched.
  std::string afterError() noexcept;
  /// Whether watch() was called since the last confirm().
  bool watching() const noexcept { return !evidence_.allocations.empty(); }
  /// Free device memory when this was made, and now (cuMemGetInfo: the whole device's; 0 when
  /// it cannot answer).
  std::pair<std::size_t, std::size_t> freeMemory() const noexcept;
  /// "Free device memory: ... (... information, not part of the verdict)". Throws nothing.
  std::string freeMemoryLine() const noexcept;

 private:
  CUstream stream_;
  std::size_t freeBefore_ = 0;
  ReleaseEvidence evidence_;
};

/// What one path gave.
struct PathResult {
  /// The result of path @p which, whose C the workers wrote as @p written says.
  PathResult(SharePath which, const VectorAddCheck& written) : path(which), check(written) {}
  SharePath path = SharePath::VmmDescriptor;  ///< Which path.
  VectorAddCheck check;                       ///< C, as the workers wrote it.
  double workerKernelMs = 0;                  ///< Worker 0's kernel over the imported memory.
  std::vector<double> handoffMs;              ///< Export + send + import + map of A, each time.
  std::vector<std::string> releaseProblems;   ///< What ReleaseProof found; none: released.
};

/**
 * Prints the results (per path: verified, handoff median, kernel GB/s and the ratio to the
 * parent's own memory, whether the release is proved), how each worker ended, and the free
 * memory of @p released as information; the same in JSON.
 * @return Pass when every C is exact, every release is proved and every worker exited with 0;
 *         free device memory takes no part.
 */
Verdict reportRun(const std::vector<PathResult>& results, double referenceMs, std::uint64_t bytes,
                  const std::vector<std::string>& workerEndings, const ReleaseProof& released,
                  std::ostream& out, JsonObject& json);

}  // namespace memsamples::ipc
