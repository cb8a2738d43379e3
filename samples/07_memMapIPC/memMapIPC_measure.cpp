/**
 * @file memMapIPC_measure.cpp
 * @brief The memMapIPC parent's scaffolding, timings and report (see memMapIPC_measure.hpp).
 */
#include "memMapIPC_measure.hpp"

#include <iomanip>
#include <iterator>
#include <ostream>
#include <stdexcept>

#include "support/devices.hpp"
#include "support/timing.hpp"

namespace memsamples::ipc {

namespace {

constexpr int kBlockSize = 256;

/// The median ms of the kernel over @p abc (A, B and C of @p count floats) on @p stream.
double timeKernel(CUfunction vecAdd, const CUdeviceptr (&abc)[3], std::size_t count,
                  CUstream stream, int warmup, int iterations) {
  const VectorAddLaunch launch{vecAdd, blocksToCover(count, 4 * kBlockSize), kBlockSize, stream,
                               abc[0], abc[1], abc[2], count};
  return timeVectorAdd(launch, warmup, iterations).medianMs;
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
    if (deviceAttribute(device, need) == 0)
      return lack;
    if (need == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED &&
        (deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES) &
         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0)
      return "cannot export memory pools as POSIX file descriptors";
  }
  return "";
}

/// What the driver says about every device other than @p device, for choosePeer(): whether it
/// can access @p device's memory, whether it manages virtual memory, and its compute mode.
std::vector<PeerCandidate> peerCandidates(CUdevice device) {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  std::vector<PeerCandidate> others;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice other = 0;
    check(cuDeviceGet(&other, ordinal), "cuDeviceGet");
    if (other == device)
      continue;
    PeerCandidate candidate;
    candidate.ordinal = ordinal;
    int canAccess = 0;
    check(cuDeviceCanAccessPeer(&canAccess, other, device), "cuDeviceCanAccessPeer");
    candidate.canAccess = canAccess != 0;
    candidate.vmm =
        deviceAttribute(other, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) != 0;
    candidate.computeMode = deviceAttribute(other, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
    others.push_back(candidate);
  }
  return others;
}

/// The bytes per vector: `--size` @p requested, or kDefaultVectorBytes cut to what fits.
std::uint64_t sizeVectors(const std::optional<std::uint64_t>& requested) {
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  // 3 shared + 3 for the reference on the device; 3 pinned copies on the host.
  const std::uint64_t device =
      chooseBufferBytes(requested, kDefaultVectorBytes, freeBytes, 6, sizeof(float));
  return fitHostMemory(requested, device, 3, sizeof(float));
}

/// Free device memory now (cuMemGetInfo: the whole device's; 0 when it cannot answer).
std::size_t freeNow() noexcept {
  std::size_t now = 0;
  std::size_t total = 0;
  return cuMemGetInfo(&now, &total) == CUDA_SUCCESS ? now : 0;
}

/// "Free device memory: ... (... information, not part of the verdict)". Throws nothing.
std::string freeMemoryLine(std::size_t before, std::size_t now) noexcept {
  return "Free device memory: " + formatBytes(before) + " before this run's buffers, " +
         formatBytes(now) + " now (the whole device's, other processes included: information, " +
         "not part of the verdict)";
}

// [release-questions]
// Asked right after A, B and C (`pointers`) exist, once `stream` has reached their
// allocation (a pool allocation exists in stream order): the driver must know each.
ReleaseEvidence askBefore(const CUdeviceptr (&pointers)[3], CUstream stream) {
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  ReleaseEvidence evidence;
  for (const CUdeviceptr pointer : pointers)
    evidence.allocations.push_back(AllocationProbe{pointer, askDriverAbout(pointer), {}});
  return evidence;
}

// Asked once they are released: waits for `stream` (frees in stream order complete), asks
// again about each allocation of `evidence`, and judges; `evidence` is emptied. Returns the
// problems (none: released, or nothing was asked before). Throws nothing: it runs on error paths.
std::vector<std::string> askAfter(CUstream stream, ReleaseEvidence& evidence) noexcept {
  if (evidence.allocations.empty())
    return {};
  const CUresult synchronized = cuStreamSynchronize(stream);
  for (AllocationProbe& probe : evidence.allocations)
    probe.after = askDriverAbout(probe.pointer);
  std::vector<std::string> problems = releaseProblems(evidence);
  if (synchronized != CUDA_SUCCESS) {
    problems.insert(problems.begin(), "the stream could not be synchronized before the check (" +
                                          describeResult(synchronized) + ")");
  }
  evidence = ReleaseEvidence();
  return problems;
}
// [release-questions]

}  // namespace

Sharing probeSharing(const std::optional<long long>& requested, Workers& workers, bool crossGpu,
                     std::ostream& out) {
  Sharing sharing;
  sharing.device = selectDevice(requested, DeviceUse::SeveralProcesses);
  sharing.ordinal = deviceOrdinal(sharing.device);
  out << "Device " << sharing.ordinal << ": " << deviceName(sharing.device) << '\n';
  const std::string missing = missingSharingSupport(sharing.device);
  if (!missing.empty())
    throw WaivedError("device " + std::to_string(sharing.ordinal) + " " + missing);
  const std::vector<PeerCandidate> others = peerCandidates(sharing.device);
  const PeerChoice peer = choosePeer(sharing.ordinal, others, workers.size());
  if (crossGpu && peer.ordinal < 0)
    throw WaivedError("the cross-GPU import (--cross-gpu) cannot run: " + peer.whyNot);
  sharing.lastDevice = peer.ordinal >= 0 ? peer.ordinal : sharing.ordinal;
  sharing.whyNotAcross = peer.whyNot;
  workers.hello(sharing.ordinal, sharing.lastDevice);
  out << workers.describe(sharing.ordinal, sharing.lastDevice, sharing.whyNotAcross) << '\n';
  return sharing;
}

Parent::Parent(Workers& workers, const std::optional<std::uint64_t>& requested, CUstream stream,
               const CommonOptions& options, CUevent inputsWritten, const Job& common)
    : bytes(sizeVectors(requested)),
      count(bytes / sizeof(float)),
      workerCount(workers.size()),
      workers_(workers),
      stream_(stream),
      options_(options),
      inputsWritten_(inputsWritten),
      common_(common) {
  common_.elements = count;
  check(cuMemHostAlloc(a_.out(), bytes, 0), "cuMemHostAlloc");
  check(cuMemHostAlloc(b_.out(), bytes, 0), "cuMemHostAlloc");
  check(cuMemHostAlloc(c_.out(), bytes, 0), "cuMemHostAlloc");
  fillVectorAddInputs(static_cast<float*>(a_.get()), static_cast<float*>(b_.get()), count, 2024);
  std::size_t total = 0;
  check(cuMemGetInfo(&freeBefore_, &total), "cuMemGetInfo");
  results_.reserve(std::size(kSharePaths));
}

void Parent::writeInputs(const CUdeviceptr (&pointers)[3]) {
  evidence_ = askBefore(pointers, stream_);
  upload(pointers);  // A and B in, C filled with NaN
  // The workers wait for this event on the GPU, with no round trip through the host.
  check(cuEventRecord(inputsWritten_, stream_), "cuEventRecord");
}

Job Parent::job(SharePath path, std::uint32_t allocations, std::uint64_t allocationBytes) const {
  Job job = common_;
  job.path = path;
  job.allocations = allocations;
  job.allocationBytes = allocationBytes;
  return job;
}

void Parent::confirmRelease(PathResult& result) {
  evidence_.poolBytesInUse = result.poolBytesInUse;  // read by the lesson before cuMemPoolDestroy
  result.releaseProblems = askAfter(stream_, evidence_);
}

void Parent::upload(const CUdeviceptr (&pointers)[3]) const {
  check(cuMemcpyHtoDAsync(pointers[0], a_.get(), bytes, stream_), "cuMemcpyHtoDAsync");
  check(cuMemcpyHtoDAsync(pointers[1], b_.get(), bytes, stream_), "cuMemcpyHtoDAsync");
  check(cuMemsetD32Async(pointers[2], 0x7FC00000u, count, stream_), "cuMemsetD32Async");  // NaN
}

void Parent::sendWithScmRights(std::size_t worker, Job job, std::vector<OwnedFd>& descriptors) {
  for (OwnedFd& descriptor : descriptors)
    descriptor.closeOnExec();  // so that no program started later inherits it
  job.slice(worker, workerCount);  // equal slices of C, one per worker
  workers_.send(worker, kJob, job, descriptors, "a job");
}

void Parent::sendJob(std::size_t worker, const Job& job) {
  std::vector<OwnedFd> none;
  sendWithScmRights(worker, job, none);
}

PathResult& Parent::waitForWorkersAndCheck(SharePath path, CUdeviceptr c) {
  workers_.waitForSlices();
  check(cuMemcpyDtoHAsync(c_.get(), c, bytes, stream_), "cuMemcpyDtoHAsync");
  check(cuStreamSynchronize(stream_), "cuStreamSynchronize");
  const VectorAddCheck written =
      checkVectorAdd(static_cast<const float*>(a_.get()), static_cast<const float*>(b_.get()),
                     static_cast<const float*>(c_.get()), count);
  return results_.emplace_back(path, written);
}

PathResult& Parent::resultOf(SharePath path) {
  for (PathResult& result : results_) {
    if (result.path == path)
      return result;
  }
  throw std::logic_error(std::string("no result of the path ") + pathName(path) + " to time");
}

void Parent::releaseWorkerImports() {
  workers_.releaseImports();
}

void Parent::timeKernelOnImports(SharePath path, const ExportAndSend& exportAndSend) {
  PathResult& result = resultOf(path);
  exportAndSend(0, 3);
  (void)payloadAs<Done>(workers_.receive(0, "its slice"), kDone);
  const Bench bench{options_.warmup, options_.iterations};
  workers_.send(0, kBench, bench, {}, "the benchmark");
  result.workerKernelMs =
      payloadAs<BenchDone>(workers_.receive(0, "the benchmark"), kBenchDone).medianMs;
  workers_.releaseImports(0);  // before the next export, and before the owner frees anything
}

void Parent::timeHandoffs(SharePath path, const ExportAndSend& exportAndSend) {
  PathResult& result = resultOf(path);
  for (int i = 0; i < options_.iterations; ++i) {
    const std::int64_t start = monotonicNanoseconds();
    exportAndSend(0, 1);
    const Done done = payloadAs<Done>(workers_.receive(0, "a handoff"), kDone);
    result.handoffMs.push_back(static_cast<double>(done.mappedAtNs - start) / 1e6);
    workers_.releaseImports(0);  // freed, and the free completed, before the next export
  }
}

void timeImportedKernel(int socket, const Message& message, CUfunction vecAdd,
                        const CUdeviceptr (&pointers)[3], const Job& job, CUstream stream) {
  const Bench bench = payloadAs<Bench>(message, kBench);
  const double medianMs =
      timeKernel(vecAdd, pointers, job.elements, stream, bench.warmup, bench.iterations);
  send(socket, kBenchDone, BenchDone{medianMs});
}

std::string Parent::afterError() noexcept {
  workers_.killAll();
  std::string text;
  if (!evidence_.allocations.empty()) {
    for (const std::string& problem : askAfter(stream_, evidence_))
      text += "After the error, this path's memory is NOT released: " + problem + "\n";
    if (text.empty()) {
      text = "After the error, this path's memory is released (proved: the driver finds none of "
             "its addresses mapped in this process)\n";
    }
  }
  return text + freeMemoryLine(freeBefore_, freeNow()) + "\n";
}

double Parent::timeOwnMemory() const {
  const std::vector<char> fatbin = readBinaryFile(locateFatbin("vectorAdd_kernel.fatbin"));
  OwnedModule module;
  check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction vecAdd = nullptr;
  check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");
  OwnedDeviceMemory a;
  OwnedDeviceMemory b;
  OwnedDeviceMemory c;
  for (OwnedDeviceMemory* buffer : {&a, &b, &c})
    check(cuMemAlloc(buffer->out(), bytes), "cuMemAlloc");
  const DrainOnExit drain{stream_};  // no launch uses them when they are freed
  const CUdeviceptr own[3] = {a.get(), b.get(), c.get()};
  upload(own);
  return timeKernel(vecAdd, own, count, stream_, options_.warmup, options_.iterations);
}

Verdict Parent::finish(std::ostream& out, JsonObject& json) {
  const std::vector<std::string> workerEndings = workers_.quit();
  const double referenceMs = timeOwnMemory();
  bool pass = true;
  const double moved = 3.0 * static_cast<double>(bytes);
  const double referenceGBps = gigabytesPerSecond(moved, referenceMs);
  out << "Vectors: " << formatBytes(bytes) << " each; C = A + B written by the workers, checked "
      << "element by element\n"
      << "  path                 result     handoff ms   kernel GB/s   / own memory   released\n";
  JsonArray paths;
  for (const PathResult& result : results_) {
    const bool exact = result.check.mismatches == 0;
    pass &= exact;
    const double gbps = gigabytesPerSecond(moved, result.workerKernelMs);
    const double handoff =
        result.handoffMs.empty() ? 0.0 : summarizeTimings(result.handoffMs).medianMs;
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
      << "  released: the driver no longer finds any of the path's addresses mapped in this "
      << "process\n";
  for (std::size_t i = 0; i < workerEndings.size(); ++i) {
    out << "Worker " << i << ": " << workerEndings[i] << '\n';
    pass &= workerEndings[i] == "exited with status 0";
  }
  const std::size_t freeAfter = freeNow();
  out << freeMemoryLine(freeBefore_, freeAfter) << '\n';
  json.set("bytes", bytes).set("referenceGBps", referenceGBps).set("paths", paths);
  json.set("freeBefore", std::uint64_t{freeBefore_}).set("freeAfter", std::uint64_t{freeAfter});
  return pass ? Verdict::Pass : Verdict::Fail;
}

}  // namespace memsamples::ipc
