/**
 * @file memMapIPC_measure.cpp
 * @brief The memMapIPC parent's scaffolding, timings and report (see memMapIPC_measure.hpp).
 */
#include "memMapIPC_measure.hpp"

#include <iomanip>
#include <ostream>

#include "support/devices.hpp"
#include "support/timing.hpp"

namespace memsamples::ipc {

namespace {

constexpr int kBlockSize = 256;

/// Whether @p device's attribute @p which is non-zero.
bool attribute(CUdevice device, CUdevice_attribute which) {
  return deviceAttribute(device, which) != 0;
}

/// The median ms of the kernel over @p abc (A, B and C of @p count floats) on @p stream.
double timeKernel(CUfunction vecAdd, const CUdeviceptr (&abc)[3], std::size_t count,
                  CUstream stream, int warmup, int iterations) {
  const VectorAddLaunch launch{vecAdd, blocksToCover(count, 4 * kBlockSize), kBlockSize, stream,
                               abc[0], abc[1], abc[2], count};
  return timeVectorAdd(launch, warmup, iterations).medianMs;
}

double median(std::vector<double> values) {
  return values.empty() ? 0.0 : summarizeTimings(std::move(values)).medianMs;
}

/// What @p device lacks for the three paths ("" when nothing).
std::string missingSharingSupport(CUdevice device) {
  const std::pair<CUdevice_attribute, const char*> needs[] = {
      {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, "has no virtual memory management"},
      {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
       "cannot export VMM allocations as POSIX file descriptors"},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, "has no stream-ordered memory pools"},
      {CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, "does not support interprocess events"},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "has no unified addressing (legacy IPC needs it)"}};
  for (const auto& [need, lack] : needs) {
    if (!attribute(device, need))
      return lack;
    if (need == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED &&
        (deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES) &
         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0)
      return "cannot export memory pools as POSIX file descriptors";
  }
  return "";
}

/// The ordinal of another device that can access @p device's memory, -1 when none can.
int peerThatCanImport(CUdevice device) {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice other = 0;
    check(cuDeviceGet(&other, ordinal), "cuDeviceGet");
    int canAccess = 0;
    if (other != device) {
      check(cuDeviceCanAccessPeer(&canAccess, other, device), "cuDeviceCanAccessPeer");
      if (canAccess && attribute(other, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED))
        return ordinal;
    }
  }
  return -1;
}

/// What the driver says about @p pointer now.
AddressAnswer askAbout(CUdeviceptr pointer) {
  AddressAnswer answer;
  answer.result = cuMemGetAddressRange(&answer.base, &answer.size, pointer);
  return answer;
}

}  // namespace

Sharing probeSharing(CUdevice device, int workers, std::ostream& out) {
  Sharing sharing;
  sharing.ordinal = deviceOrdinal(device);
  out << "Device " << sharing.ordinal << ": " << deviceName(device) << '\n';
  const std::string missing = missingSharingSupport(device);
  if (!missing.empty())
    throw WaivedError("device " + std::to_string(sharing.ordinal) + " " + missing);
  const int peer = workers > 1 ? peerThatCanImport(device) : -1;
  sharing.lastDevice = peer >= 0 ? peer : sharing.ordinal;
  return sharing;
}

std::uint64_t sizeVectors(const std::optional<std::uint64_t>& requested) {
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  // 3 shared + 3 for the reference on the device; 3 pinned copies on the host.
  const std::uint64_t device =
      chooseBufferBytes(requested, kDefaultVectorBytes, freeBytes, 6, sizeof(float));
  return fitHostMemory(requested, device, 3, sizeof(float));
}

std::size_t vmmAllocationBytes(const CUmemAllocationProp& prop, std::uint64_t bytes) {
  std::size_t minimum = 0;
  std::size_t recommended = 0;
  check(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  check(cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        "cuMemGetAllocationGranularity");
  const std::size_t unit = allocationGranularity(bytes, minimum, recommended);
  return (bytes + unit - 1) / unit * unit;
}

HostVectors::HostVectors(std::size_t count) : count_(count) {
  const std::size_t bytes = count * sizeof(float);
  check(cuMemHostAlloc(a_.out(), bytes, 0), "cuMemHostAlloc");
  check(cuMemHostAlloc(b_.out(), bytes, 0), "cuMemHostAlloc");
  check(cuMemHostAlloc(c_.out(), bytes, 0), "cuMemHostAlloc");
  fillVectorAddInputs(static_cast<float*>(a_.get()), static_cast<float*>(b_.get()), count, 2024);
}

void HostVectors::upload(const CUdeviceptr (&pointers)[3], CUstream stream) const {
  const std::size_t bytes = count_ * sizeof(float);
  check(cuMemcpyHtoDAsync(pointers[0], a_.get(), bytes, stream), "cuMemcpyHtoDAsync");
  check(cuMemcpyHtoDAsync(pointers[1], b_.get(), bytes, stream), "cuMemcpyHtoDAsync");
  check(cuMemsetD32Async(pointers[2], 0x7FC00000u, count_, stream), "cuMemsetD32Async");  // NaN
}

VectorAddCheck HostVectors::download(CUdeviceptr c, CUstream stream) const {
  check(cuMemcpyDtoHAsync(c_.get(), c, count_ * sizeof(float), stream), "cuMemcpyDtoHAsync");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  return checkVectorAdd(static_cast<const float*>(a_.get()), static_cast<const float*>(b_.get()),
                        static_cast<const float*>(c_.get()), count_);
}

double timeWorkerKernel(Workers& workers, const CommonOptions& options) {
  const Bench bench{options.warmup, options.iterations};
  workers.send(0, kBench, bench, {}, "the benchmark");
  return payloadAs<BenchDone>(workers.receive(0, "the benchmark"), kBenchDone).medianMs;
}

void timeImportedKernel(int socket, const Message& message, CUfunction vecAdd,
                        const CUdeviceptr (&pointers)[3], const Job& job, CUstream stream) {
  const Bench bench = payloadAs<Bench>(message, kBench);
  const double medianMs =
      timeKernel(vecAdd, pointers, job.elements, stream, bench.warmup, bench.iterations);
  send(socket, kBenchDone, BenchDone{medianMs});
}

std::vector<double> timeHandoffs(Workers& workers, const ShareWith& shareWith, int iterations) {
  std::vector<double> handoffMs;
  for (int i = 0; i < iterations; ++i) {
    const std::int64_t start = monotonicNanoseconds();
    shareWith(0, 1);
    const Done done = payloadAs<Done>(workers.receive(0, "a handoff"), kDone);
    handoffMs.push_back(static_cast<double>(done.mappedAtNs - start) / 1e6);
    workers.releaseImports(0);  // freed, and the free completed, before the next export
  }
  return handoffMs;
}

double timeOwnMemory(const HostVectors& host, CUstream stream, const CommonOptions& options) {
  const std::vector<char> fatbin = readBinaryFile(locateFatbin("vectorAdd_kernel.fatbin"));
  OwnedModule module;
  check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction vecAdd = nullptr;
  check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");
  OwnedDeviceMemory a;
  OwnedDeviceMemory b;
  OwnedDeviceMemory c;
  for (OwnedDeviceMemory* buffer : {&a, &b, &c})
    check(cuMemAlloc(buffer->out(), host.count() * sizeof(float)), "cuMemAlloc");
  const DrainOnExit drain{stream};  // no launch uses them when they are freed
  const CUdeviceptr own[3] = {a.get(), b.get(), c.get()};
  host.upload(own, stream);
  return timeKernel(vecAdd, own, host.count(), stream, options.warmup, options.iterations);
}

ReleaseProof::ReleaseProof(CUstream stream) : stream_(stream) {
  std::size_t total = 0;
  check(cuMemGetInfo(&freeBefore_, &total), "cuMemGetInfo");
}

// [release-questions]
void ReleaseProof::watch(const CUdeviceptr (&pointers)[3]) {
  // A pool allocation exists in stream order: ask once the stream has reached it.
  check(cuStreamSynchronize(stream_), "cuStreamSynchronize");
  evidence_ = ReleaseEvidence();
  for (const CUdeviceptr pointer : pointers)
    evidence_.allocations.push_back(AllocationProbe{pointer, askAbout(pointer), {}});
}

void ReleaseProof::poolInUse(CUmemoryPool pool) {
  check(cuStreamSynchronize(stream_), "cuStreamSynchronize");
  cuuint64_t used = 0;
  check(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used),
        "cuMemPoolGetAttribute");
  evidence_.poolBytesInUse = used;
}

std::vector<std::string> ReleaseProof::confirm() noexcept {
  if (!watching())
    return {};
  // Pool memory is freed in stream order: the frees must have completed before anyone asks.
  const CUresult synchronized = cuStreamSynchronize(stream_);
  for (AllocationProbe& probe : evidence_.allocations)
    probe.after = askAbout(probe.pointer);
  std::vector<std::string> problems = releaseProblems(evidence_);
  if (synchronized != CUDA_SUCCESS) {
    problems.insert(problems.begin(), "the stream could not be synchronized before the check (" +
                                          describeResult(synchronized) + ")");
  }
  evidence_ = ReleaseEvidence();
  return problems;
}

// [release-questions]

std::string ReleaseProof::afterError() noexcept {
  if (!watching())
    return "";
  std::string text;
  for (const std::string& problem : confirm())
    text += "After the error, this path's memory is NOT released: " + problem + "\n";
  return !text.empty() ? text
                       : "After the error, this path's memory is released (proved: the driver "
                         "knows none of its addresses in this process)\n";
}

std::pair<std::size_t, std::size_t> ReleaseProof::freeMemory() const noexcept {
  std::size_t now = 0;
  std::size_t total = 0;
  return {freeBefore_, cuMemGetInfo(&now, &total) == CUDA_SUCCESS ? now : 0};
}

std::string ReleaseProof::freeMemoryLine() const noexcept {
  const auto [before, now] = freeMemory();
  return "Free device memory: " + formatBytes(before) + " before this run's buffers, " +
         formatBytes(now) + " now (the whole device's, other processes included: information, " +
         "not part of the verdict)";
}

Verdict reportRun(const std::vector<PathResult>& results, double referenceMs, std::uint64_t bytes,
                  const std::vector<std::string>& workerEndings, const ReleaseProof& released,
                  std::ostream& out, JsonObject& json) {
  bool pass = true;
  const double moved = 3.0 * static_cast<double>(bytes);
  const double referenceGBps = gigabytesPerSecond(moved, referenceMs);
  out << "Vectors: " << formatBytes(bytes) << " each; C = A + B written by the workers, checked "
      << "element by element\n"
      << "  path                 result     handoff ms   kernel GB/s   / own memory   released\n";
  JsonArray paths;
  for (const PathResult& result : results) {
    const bool exact = result.check.mismatches == 0;
    pass &= exact;
    const double gbps = gigabytesPerSecond(moved, result.workerKernelMs);
    const double handoff = median(result.handoffMs);
    const bool freed = result.releaseProblems.empty();
    pass &= freed;
    out << "  " << std::left << std::setw(20) << pathName(result.path) << std::right << std::setw(8)
        << (exact ? "exact" : "WRONG") << std::fixed << std::setprecision(3) << std::setw(15)
        << handoff << std::setprecision(1) << std::setw(14) << gbps << std::setprecision(3)
        << std::setw(15) << gbps / referenceGBps << std::setw(11) << (freed ? "proved" : "NO")
        << '\n';
    if (!exact)
      out << "    " << describeMismatch(result.check) << '\n';
    for (const std::string& problem : result.releaseProblems)
      out << "    not released: " << problem << '\n';
    JsonObject item;
    item.set("path", pathName(result.path)).set("exact", exact).set("releaseProved", freed);
    item.set("mismatches", static_cast<std::uint64_t>(result.check.mismatches));
    item.set("handoffMedianMs", handoff).set("workerKernelGBps", gbps);
    paths.addRaw(item.set("ratioToOwnMemory", gbps / referenceGBps).dump());
  }
  out << std::setprecision(1) << "  reference: the same kernel on the parent's own cuMemAlloc "
      << "memory, " << referenceGBps << " GB/s (expected ratio about 1 on one GPU)\n"
      << "  handoff: export + send + import + map of one allocation, host clock (CLOCK_MONOTONIC "
      << "in both processes), median; the pool path includes importing the pool itself\n"
      << "  released: the driver no longer knows any of the path's addresses in this process\n";
  for (std::size_t i = 0; i < workerEndings.size(); ++i) {
    out << "Worker " << i << ": " << workerEndings[i] << '\n';
    pass &= workerEndings[i] == "exited with status 0";
  }
  const auto [freeBefore, freeAfter] = released.freeMemory();
  out << released.freeMemoryLine() << '\n';
  json.set("bytes", bytes).set("referenceGBps", referenceGBps).set("paths", paths);
  json.set("freeBefore", std::uint64_t{freeBefore}).set("freeAfter", std::uint64_t{freeAfter});
  return pass ? Verdict::Pass : Verdict::Fail;
}

}  // namespace memsamples::ipc
