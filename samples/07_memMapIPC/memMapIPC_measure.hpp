/**
 * @file memMapIPC_measure.hpp
 * @brief The memMapIPC parent's scaffolding and measurements: what the device supports, sizes,
 *        the host copies of A, B and C, the timings, the proof of each release, and the report
 *        (Parent). The sharing itself is in memMapIPC.cpp and memMapIPC_worker.cpp.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "ipc_protocol.hpp"
#include "memsamples.hpp"
#include "peer_choice.hpp"
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
  CUdevice device = 0;  ///< The parent's device.
  int ordinal = 0;      ///< Its ordinal.
  int lastDevice = 0;   ///< The last worker's: another GPU that can import across, else ordinal.
  std::string whyNotAcross;  ///< Why the last worker stays on ordinal ("" when it does not).
};

/**
 * The platform, in one call: picks the device (selectDevice() with DeviceUse::SeveralProcesses:
 * a device in EXCLUSIVE_PROCESS compute mode waives), prints "Device N: <name>", waives the run
 * (WaivedError) naming what it lacks for the three paths (VMM, POSIX-descriptor handles, pools
 * that export descriptors, IPC events, unified addressing), and, with 2 or more workers, looks
 * for another device for the last worker (choosePeer(): it can access this one's memory, manages
 * virtual memory, and its compute mode admits the worker's context). With @p crossGpu, a run
 * where no such device exists waives naming why. Then every worker learns its device and answers
 * once its context exists there (Workers::hello()), and where they run is printed
 * (Workers::describe(), with the reason when the last worker stays).
 */
Sharing probeSharing(const std::optional<long long>& requested, Workers& workers, bool crossGpu,
                     std::ostream& out);

/// What one path gave.
struct PathResult {
  /// The result of path @p which, whose C the workers wrote as @p written says.
  PathResult(SharePath which, const VectorAddCheck& written) : path(which), check(written) {}
  SharePath path = SharePath::VmmDescriptor;  ///< Which path.
  VectorAddCheck check;                       ///< C, as the workers wrote it.
  double workerKernelMs = 0;                  ///< Worker 0's kernel over the imported memory.
  std::vector<double> handoffMs;              ///< Export + send + import + map of A, each time.
  /// The pool's CU_MEMPOOL_ATTR_USED_MEM_CURRENT once its frees completed (the pool path).
  std::optional<cuuint64_t> poolBytesInUse;
  std::vector<std::string> releaseProblems;  ///< What confirmRelease() found; none: released.
};

/// One way's export and send for one worker (the `exportAndSend` of each way's timings in
/// memMapIPC.cpp): exports the first @p allocations of the timing's three allocations into a
/// job for worker @p worker and sends it.
using ExportAndSend = std::function<void(std::size_t worker, std::uint32_t allocations)>;

/**
 * Everything of the parent's run around the sharing itself: the vectors' size, their pinned host
 * copies, the jobs' slices, the proof of each release, the measurements and the report. The
 * sharing's calls are the lesson's (memMapIPC.cpp); these are the parent's helpers around them.
 *
 * A release is proved with the driver's answers about this process's own addresses
 * (release_proof.hpp), never with the device's free memory, which other processes change:
 * writeInputs() asks about A, B and C once they exist; confirmRelease() asks again once they
 * are released, on the good path or, through afterError(), after an error.
 */
class Parent {
 public:
  /// Sizes the vectors: `--size` @p requested, or kDefaultVectorBytes cut to what fits (6 vectors
  /// in free device memory: 3 shared, 3 for the reference; 3 pinned copies on the host; a
  /// UsageError for a `--size` that does not fit). Makes the host copies and notes the device's
  /// free memory, for the report's line of information. @p inputsWritten is the interprocess
  /// event writeInputs() records; @p common the part of every job that the lesson filled in
  /// (the owner's device and the event's handle). Needs a current context.
  Parent(Workers& workers, const std::optional<std::uint64_t>& requested, CUstream stream,
         const CommonOptions& options, CUevent inputsWritten, const Job& common);

  const std::uint64_t bytes;        ///< Bytes per vector.
  const std::size_t count;          ///< Floats per vector.
  const std::size_t workerCount;    ///< How many workers there are.

  /// Asks the driver about @p pointers, just created (askDriverAbout()), once the stream has
  /// reached their allocation; then queues A and B into @p pointers[0..1] and NaN into C, and
  /// records the interprocess event that the workers wait for on the GPU.
  void writeInputs(const CUdeviceptr (&pointers)[3]);
  /// A job of path @p path for @p allocations of A, B and C, each @p allocationBytes: the
  /// common part (vector length, owner's device, the event's handle) filled in; the way of
  /// sharing adds its handles, send() the worker's slice.
  Job job(SharePath path, std::uint32_t allocations, std::uint64_t allocationBytes) const;
  /// Sends @p job to worker @p worker, with its equal slice of C, and @p descriptors, each first
  /// made close-on-exec (checked: a descriptor the driver just made may lack FD_CLOEXEC). One
  /// sendmsg carries the job's header and the descriptors as an SCM_RIGHTS control message
  /// (sendMessage(), ipc_channel.cpp): the kernel installs new descriptors of the same open files
  /// in the worker. The caller's descriptors stay its own, to close.
  void sendWithScmRights(std::size_t worker, Job job, std::vector<OwnedFd>& descriptors);
  /// Sends @p job, which carries no descriptor (the legacy way), with worker @p worker's slice.
  void sendJob(std::size_t worker, const Job& job);
  /// Waits for every worker's kDone (each imported its job and wrote its slice: the worker side
  /// runs meanwhile), then copies C back from @p c and checks every element. @return path
  /// @p path's result, kept for the report.
  PathResult& waitForWorkersAndCheck(SharePath path, CUdeviceptr c);
  /// Every worker releases its imports (kRelease) and answers kReleased: importers before the
  /// owner (a pool allocation must be freed by every importer before its owner frees it).
  void releaseWorkerImports();
  /**
   * After path @p path was checked, with every worker's imports released: @p exportAndSend(0, 3)
   * hands the timing's three allocations to worker 0, which maps them, computes its slice and
   * answers Done; then it times the kernel over them (kBench, `--warmup` and `--iterations`
   * launches, the median) and releases them. Into the path's result.
   */
  void timeKernelOnImports(SharePath path, const ExportAndSend& exportAndSend);
  /**
   * `--iterations` handoffs of A alone to worker 0, into path @p path's result:
   * @p exportAndSend(0, 1) exports and sends it, the worker imports and maps it and answers when
   * it was usable, then releases it again. A handoff is timed from before the export to the
   * worker's mapping (CLOCK_MONOTONIC, the same clock in both processes). Needs every worker's
   * imports released first.
   */
  void timeHandoffs(SharePath path, const ExportAndSend& exportAndSend);
  /// Waits for the stream (frees in stream order complete), asks again about what writeInputs()
  /// saw, and judges, with @p result's poolBytesInUse: the problems go into @p result (none:
  /// released).
  void confirmRelease(PathResult& result);
  /// An error path's first act: kills and reaps every worker (none may still use the memory),
  /// then confirms the release of the path in flight, which its owners freed. @return "After the
  /// error, ..." lines (one per problem, or one that says the release is proved; none when no path
  /// was in flight) and the free memory line. Throws nothing.
  std::string afterError() noexcept;
  /**
   * The end of the run: the workers quit and are reaped; the reference kernel (loaded here) runs
   * on the parent's own cuMemAlloc A, B and C; then the report: per path verified, handoff median,
   * kernel GB/s and the ratio to the parent's own memory, whether the release is proved; how each
   * worker ended; free device memory as information; the same in JSON.
   * @return Pass when every C is exact, every release is proved and every worker exited with 0;
   *         free device memory takes no part.
   */
  Verdict finish(std::ostream& out, JsonObject& json);

 private:
  void upload(const CUdeviceptr (&pointers)[3]) const;
  PathResult& resultOf(SharePath path);
  double timeOwnMemory() const;

  Workers& workers_;
  CUstream stream_;
  CommonOptions options_;
  CUevent inputsWritten_;
  Job common_;
  OwnedPinnedHostMemory a_;
  OwnedPinnedHostMemory b_;
  OwnedPinnedHostMemory c_;
  std::size_t freeBefore_ = 0;
  ReleaseEvidence evidence_;
  std::vector<PathResult> results_;
};

/// A worker's side of Parent::timeKernelOnImports(): the kernel over all of @p pointers (A, B and
/// C of @p job) on @p stream, as @p message (a kBench) asks; the answer, BenchDone, goes to
/// @p socket.
void timeImportedKernel(int socket, const Message& message, CUfunction vecAdd,
                        const CUdeviceptr (&pointers)[3], const Job& job, CUstream stream);

}  // namespace memsamples::ipc
