/**
 * @file memMapIPC_measure.hpp
 * @brief The memMapIPC parent's scaffolding and measurements: support checks, the host copies of
 *        A, B and C, the kernel timings, and the report. The sharing itself is in memMapIPC.cpp
 *        and memMapIPC_worker.cpp.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "ipc_channel.hpp"
#include "ipc_protocol.hpp"
#include "memsamples.hpp"
#include "support/vector_add.hpp"

namespace memsamples::ipc {

/// What @p device lacks for the three paths ("" when nothing): VMM, POSIX-descriptor handles,
/// memory pools that export descriptors, IPC events and unified addressing (legacy IPC).
std::string missingSharingSupport(CUdevice device);

/// The ordinal of another device that can access @p device's memory (cuDeviceCanAccessPeer), for
/// the cross-GPU import; -1 with one GPU or none that can.
int peerThatCanImport(CUdevice device);

/// "Workers: 2 processes, worker 0 on device 0, worker 1 on device 1 (imports across the link)".
std::string describeWorkers(int workers, int ordinal, int peer);

/// The descriptors of @p owned, still owned there, for sendMessage().
std::vector<int> rawDescriptors(const std::vector<OwnedFd>& owned);

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
  OwnedPinnedHostMemory a_, b_, c_;
};

/// The reference: the same kernel on the parent's own cuMemAlloc A, B and C, median ms.
double timeOwnMemory(CUfunction vecAdd, const HostVectors& host, CUstream stream,
                     const CommonOptions& options);

/// "Free device memory: 139 GiB before the workers started, 139 GiB now (back)": back when within
/// 2 MiB, the driver's own rounding.
std::string describeFreeMemory(std::size_t before, std::size_t now);

/// What one path gave.
struct PathResult {
  SharePath path = SharePath::VmmDescriptor;  ///< Which path.
  VectorAddCheck check;                       ///< C, as the workers wrote it.
  double workerKernelMs = 0;      ///< Worker 0's kernel over all of the imported A, B, C.
  std::vector<double> handoffMs;  ///< Export + send + import + map of one allocation, each time.
};

/**
 * Prints the results (per path: verified, handoff median, kernel GB/s and the ratio to the
 * parent's own memory), how each worker ended, and free device memory before the workers started
 * and after everything; the same in JSON.
 * @return Pass when every C is exact, every worker exited with 0 and free memory came back.
 */
Verdict reportRun(const std::vector<PathResult>& results, double referenceMs, std::uint64_t bytes,
                  const std::vector<std::string>& workerEndings, std::size_t freeBefore,
                  std::size_t freeAfter, std::ostream& out, JsonObject& json);

}  // namespace memsamples::ipc
