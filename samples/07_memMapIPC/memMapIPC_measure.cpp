/**
 * @file memMapIPC_measure.cpp
 * @brief The memMapIPC parent's scaffolding, timings and report (see memMapIPC_measure.hpp).
 */
#include "memMapIPC_measure.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "support/timing.hpp"

namespace memsamples::ipc {

namespace {

constexpr int kBlockSize = 256;

bool attribute(CUdevice device, CUdevice_attribute which) {
  return deviceAttribute(device, which) != 0;
}

double median(std::vector<double> values) {
  return values.empty() ? 0.0 : summarizeTimings(std::move(values)).medianMs;
}

}  // namespace

std::string missingSharingSupport(CUdevice device) {
  if (!attribute(device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED))
    return "has no virtual memory management";
  if (!attribute(device, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED))
    return "cannot export VMM allocations as POSIX file descriptors";
  if (!attribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED))
    return "has no stream-ordered memory pools";
  if ((deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES) &
       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0)
    return "cannot export memory pools as POSIX file descriptors";
  if (!attribute(device, CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED))
    return "does not support interprocess events";
  if (!attribute(device, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING))
    return "has no unified addressing (legacy IPC needs it)";
  return "";
}

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

std::string describeWorkers(int workers, int ordinal, int peer) {
  std::ostringstream text;
  text << "Workers: " << workers << (workers == 1 ? " process" : " processes") << " on device "
       << ordinal;
  if (peer >= 0) {
    text << ", the last one on device " << peer << " (it imports device " << ordinal
         << "'s memory across the link)";
  } else {
    text << "; cross-GPU import: not run ("
         << (workers > 1 ? "no other GPU can access device " : "one worker only; needs 2 with ")
         << (workers > 1 ? std::to_string(ordinal) : "a second GPU") << ")";
  }
  return text.str();
}

std::vector<int> rawDescriptors(const std::vector<OwnedFd>& owned) {
  std::vector<int> raw;
  for (const OwnedFd& fd : owned)
    raw.push_back(fd.get());
  return raw;
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

double timeOwnMemory(CUfunction vecAdd, const HostVectors& host, CUstream stream,
                     const CommonOptions& options) {
  const std::size_t bytes = host.count() * sizeof(float);
  OwnedDeviceMemory a, b, c;
  for (OwnedDeviceMemory* buffer : {&a, &b, &c})
    check(cuMemAlloc(buffer->out(), bytes), "cuMemAlloc");
  const DrainOnExit drain{stream};  // no launch uses them when they are freed
  host.upload({a.get(), b.get(), c.get()}, stream);
  const VectorAddLaunch launch{vecAdd,     blocksToCover(host.count(), 4 * kBlockSize),
                               kBlockSize, stream,
                               a.get(),    b.get(),
                               c.get(),    host.count()};
  return timeVectorAdd(launch, options.warmup, options.iterations).medianMs;
}

std::string describeFreeMemory(std::size_t before, std::size_t now) {
  const bool back = now + (2u << 20) >= before;
  return "Free device memory: " + formatBytes(before) + " before the workers started, " +
         formatBytes(now) + " now" +
         (back ? " (back)" : " (NOT back: something is still allocated)");
}

Verdict reportRun(const std::vector<PathResult>& results, double referenceMs, std::uint64_t bytes,
                  const std::vector<std::string>& workerEndings, std::size_t freeBefore,
                  std::size_t freeAfter, std::ostream& out, JsonObject& json) {
  bool pass = true;
  const double moved = 3.0 * static_cast<double>(bytes);
  const double referenceGBps = gigabytesPerSecond(moved, referenceMs);
  out << "Vectors: " << formatBytes(bytes) << " each; C = A + B written by the workers, checked "
      << "element by element\n"
      << "  path                 result     handoff ms   kernel GB/s   / own memory\n";
  JsonArray paths;
  for (const PathResult& result : results) {
    const bool exact = result.check.mismatches == 0;
    pass &= exact;
    const double gbps = gigabytesPerSecond(moved, result.workerKernelMs);
    const double handoff = median(result.handoffMs);
    out << "  " << std::left << std::setw(20) << pathName(result.path) << std::right << std::setw(8)
        << (exact ? "exact" : "WRONG") << std::fixed << std::setprecision(3) << std::setw(15)
        << handoff << std::setprecision(1) << std::setw(14) << gbps << std::setprecision(3)
        << std::setw(15) << gbps / referenceGBps << '\n';
    if (!exact)
      out << "    " << describeMismatch(result.check) << '\n';
    JsonObject item;
    item.set("path", pathName(result.path))
        .set("exact", exact)
        .set("mismatches", static_cast<std::uint64_t>(result.check.mismatches))
        .set("handoffMedianMs", handoff)
        .set("workerKernelGBps", gbps)
        .set("ratioToOwnMemory", gbps / referenceGBps);
    paths.addRaw(item.dump());
  }
  out << std::setprecision(1) << "  reference: the same kernel on the parent's own cuMemAlloc "
      << "memory, " << referenceGBps << " GB/s (expected ratio about 1 on one GPU)\n"
      << "  handoff: export + send + import + map of one allocation, host clock (CLOCK_MONOTONIC "
      << "in both processes), median; the pool path includes importing the pool itself\n";
  for (std::size_t i = 0; i < workerEndings.size(); ++i) {
    out << "Worker " << i << ": " << workerEndings[i] << '\n';
    pass &= workerEndings[i] == "exited with status 0";
  }
  const std::string memory = describeFreeMemory(freeBefore, freeAfter);
  pass &= memory.find("(back)") != std::string::npos;
  out << memory << '\n';
  json.set("bytes", bytes)
      .set("referenceGBps", referenceGBps)
      .set("freeBefore", static_cast<std::uint64_t>(freeBefore))
      .set("freeAfter", static_cast<std::uint64_t>(freeAfter))
      .set("paths", paths);
  return pass ? Verdict::Pass : Verdict::Fail;
}

}  // namespace memsamples::ipc
