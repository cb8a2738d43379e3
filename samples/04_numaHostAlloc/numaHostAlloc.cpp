/**
 * @file numaHostAlloc.cpp
 * @brief Host memory on the NUMA node nearest the GPU: bound with mbind before first touch,
 *        verified, registered with CUDA and measured; next to the CUDA-native
 *        cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA) and the cuMemHostAlloc reference.
 *
 * On a machine with several CPU sockets, host memory behind the socket the GPU is attached to is
 * one interconnect hop closer than the rest; the GPU reads and writes it faster. The kernel places
 * a page when it is first touched, so the placement has to be decided *before* that.
 *
 * 1. **cuInit**, device, **cuCtxCreate**, the vector-add fatbin (as in 01_vectorAddDrv).
 * 2. **Topology.** CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (the driver's answer) and
 *    `/sys/bus/pci/devices/<bdf>/numa_node` for the bus id from **cuDeviceGetPCIBusId** (the
 *    kernel's answer) give the nearest node; a node without memory is rejected
 *    (findNearestHostNode()). The source and any disagreement are printed.
 * 3. **The mbind path** (NumaBoundHostRange): mmap anonymous pages, **mbind** them with
 *    `MPOL_F_STATIC_NODES | MPOL_BIND` (`--strict`) or `MPOL_PREFERRED` (default) while no page
 *    exists yet, madvise MADV_HUGEPAGE and MADV_DONTFORK (two calls), touch every page, then ask
 *    the kernel where the pages are (**move_pages**). **cuMemHostRegister** pins the range for
 *    the GPU and **cuMemHostGetDevicePointer** gives the address a kernel uses; the placement is
 *    checked again after pinning.
 * 4. **The CUDA-native path**, where
 * CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is set: **cuMemCreate** with a
 * CU_MEM_LOCATION_TYPE_HOST_NUMA location, **cuMemAddressReserve**
 *    + **cuMemMap**, and **cuMemSetAccess** for the device *and* for the host (the CPU cannot touch
 *    the memory until it is granted access too).
 * 5. **The reference**: cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP), placed by the driver.
 * 6. **Measured, for each of the three**: host-to-device and device-to-host copies
 *    (cuMemcpyHtoDAsync / cuMemcpyDtoHAsync, CUDA events, median), checked byte for byte, and a
 *    zero-copy VecAdd that reads A and B and writes C in host memory through the device pointer,
 *    checked element by element. Ratios against cuMemHostAlloc are printed.
 * 7. **Nearest vs remote** (two or more nodes with memory): the copies again from a range bound
 *    to each node, in a table with the node distance.
 * 8. Cleanup by RAII in reverse order: unregister before unmap, unmap before the address range
 *    is freed, and every error path releases what was built.
 */
#include <numa.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <sstream>
#include <utility>

#include "host_layout.hpp"
#include "memsamples.hpp"
#include "numa_binding.hpp"

namespace ms = memsamples;
namespace mn = memsamples::numa;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // per vector; each host range holds three
constexpr int kVectors = 3;                          // A, B, C
constexpr std::size_t kMaxTableNodes = 8;
constexpr int kBlockSize = 256;  // threads per block of the VecAdd_kernel launches

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  bool noBind = false;
  bool strict = false;
  long long node = -1;  // -1: the node nearest the GPU
};

// ------------------------------------------------------------------------- CUDA owners (RAII)

/// Host memory on one NUMA node from the VMM API: cuMemCreate(HOST_NUMA) mapped at a reserved
/// address, readable and writable by the device and by the CPU. Every driver result is checked:
/// release() reports a failed unmap or address free; the destructor (which also runs during
/// unwinding, when the first error is already on its way) only tries.
class HostNumaAllocation {
 public:
  /// Builds @p bytes (rounded up to the granularity) on host node @p node for device
  /// @p deviceOrdinal. @throws CudaError naming the call; what was built is undone first.
  HostNumaAllocation(int deviceOrdinal, int node, std::size_t bytes) {
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop.location.id = node;
    ms::check(cuMemGetAllocationGranularity(&granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              "cuMemGetAllocationGranularity");
    size_ = (bytes + granularity_ - 1) / granularity_ * granularity_;
    try {
      ms::check(cuMemAddressReserve(&address_, size_, granularity_, 0, 0), "cuMemAddressReserve");
      CUmemGenericAllocationHandle handle = 0;
      ms::check(cuMemCreate(&handle, size_, &prop, 0), "cuMemCreate");
      const CUresult mapped = cuMemMap(address_, size_, 0, handle, 0);
      // The handle goes at once, mapped or not: a mapping holds its own reference, so unmapping
      // then frees the memory, with nothing else to track.
      const CUresult released = cuMemRelease(handle);
      mapped_ = mapped == CUDA_SUCCESS;
      if (!mapped_ && released != CUDA_SUCCESS) {
        throw ms::CudaError(
            mapped,
            ms::formatCallFailure("cuMemMap", __FILE__, __LINE__, ms::describeResult(mapped)) +
                "; cuMemRelease of its handle failed too: " + ms::describeResult(released));
      }
      ms::check(mapped, "cuMemMap");
      ms::check(released, "cuMemRelease");
      CUmemAccessDesc access[2] = {};
      access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access[0].location.id = deviceOrdinal;
      access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;  // the CPU; the id is ignored
      access[1].location.id = node;
      access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      ms::check(cuMemSetAccess(address_, size_, access, 2), "cuMemSetAccess");
    } catch (...) {
      // Undo what was built; a failure here would only hide the error that is on its way.
      (void)unmapAndFree();
      throw;
    }
  }
  ~HostNumaAllocation() { (void)unmapAndFree(); }
  HostNumaAllocation(const HostNumaAllocation&) = delete;
  HostNumaAllocation& operator=(const HostNumaAllocation&) = delete;
  CUdeviceptr address() const noexcept { return address_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t granularity() const noexcept { return granularity_; }

  /// Unmaps (which frees the memory) and frees the addresses now; empty afterwards, even when
  /// this throws. @throws CudaError naming cuMemUnmap or cuMemAddressFree.
  void release() {
    const auto [unmapped, freed] = unmapAndFree();
    ms::check(unmapped, "cuMemUnmap");
    ms::check(freed, "cuMemAddressFree");
  }

 private:
  // Both calls are made even when the first fails, so that the addresses never leak.
  std::pair<CUresult, CUresult> unmapAndFree() noexcept {
    const CUresult unmapped =
        std::exchange(mapped_, false) ? cuMemUnmap(address_, size_) : CUDA_SUCCESS;
    const CUresult freed =
        address_ != 0 ? cuMemAddressFree(std::exchange(address_, 0), size_) : CUDA_SUCCESS;
    return {unmapped, freed};
  }
  CUdeviceptr address_ = 0;
  std::size_t size_ = 0;
  std::size_t granularity_ = 0;
  bool mapped_ = false;
};

// ------------------------------------------------------------------------------- measurement

/// Three vectors A, B, C in one host range, as the CPU and as the GPU see them.
struct HostVectors {
  char* host = nullptr;    // CPU address of A; B and C follow at `stride`
  CUdeviceptr device = 0;  // GPU address of A
  std::size_t stride = 0;
  float* cpu(int index) const { return reinterpret_cast<float*>(host + index * stride); }
  CUdeviceptr gpu(int index) const { return device + static_cast<CUdeviceptr>(index) * stride; }
};

struct Workload {
  CUfunction kernel = nullptr;
  unsigned int grid = 0;
  CUstream stream = nullptr;
  CUdeviceptr scratch = 0;  // device memory the copies go to and come from
  std::size_t bytes = 0;    // per vector
  std::size_t count = 0;    // floats per vector
  int warmup = 0;
  int iterations = 0;
};

struct CopyResult {
  ms::TimingStats toDevice, toHost;
  double toDeviceGBps = 0, toHostGBps = 0;
};

struct SourceResult {
  std::string name;
  CopyResult copies;
  bool copiesVerified = false;
  ms::TimingStats kernel;
  double kernelGBps = 0;
  ms::VectorAddCheck add;
  bool passed() const { return copiesVerified && add.mismatches == 0; }
};

CopyResult timeCopies(char* hostSource, char* hostTarget, const Workload& work) {
  CopyResult result;
  result.toDevice = ms::timeOnStream(work.stream, work.warmup, work.iterations, [&] {
    ms::check(cuMemcpyHtoDAsync(work.scratch, hostSource, work.bytes, work.stream),
              "cuMemcpyHtoDAsync");
  });
  result.toHost = ms::timeOnStream(work.stream, work.warmup, work.iterations, [&] {
    ms::check(cuMemcpyDtoHAsync(hostTarget, work.scratch, work.bytes, work.stream),
              "cuMemcpyDtoHAsync");
  });
  const auto bytes = static_cast<double>(work.bytes);
  result.toDeviceGBps = ms::gigabytesPerSecond(bytes, result.toDevice.medianMs);
  result.toHostGBps = ms::gigabytesPerSecond(bytes, result.toHost.medianMs);
  return result;
}

SourceResult measureSource(std::string name, const HostVectors& vectors, const Workload& work) {
  SourceResult result;
  result.name = std::move(name);
  ms::fillVectorAddInputs(vectors.cpu(0), vectors.cpu(1), work.count, 2024);
  std::memset(vectors.cpu(2), 0, work.bytes);

  // A -> device, device -> C; timeOnStream synchronizes, so C can be compared right after.
  result.copies = timeCopies(reinterpret_cast<char*>(vectors.cpu(0)),
                             reinterpret_cast<char*>(vectors.cpu(2)), work);
  result.copiesVerified = std::memcmp(vectors.cpu(2), vectors.cpu(0), work.bytes) == 0;

  // Zero-copy: the kernel reads A and B and writes C across the bus, in place.
  CUdeviceptr a = vectors.gpu(0), b = vectors.gpu(1), c = vectors.gpu(2);
  unsigned long long n = work.count;  // the kernel's parameter types, exactly
  void* args[] = {&a, &b, &c, &n};
  result.kernel = ms::timeOnStream(work.stream, work.warmup, work.iterations, [&] {
    ms::check(cuLaunchKernel(work.kernel, work.grid, 1, 1, kBlockSize, 1, 1, 0, work.stream, args,
                             nullptr),
              "cuLaunchKernel");
  });
  result.kernelGBps =
      ms::gigabytesPerSecond(3.0 * static_cast<double>(work.bytes), result.kernel.medianMs);
  result.add = ms::checkVectorAdd(vectors.cpu(0), vectors.cpu(1), vectors.cpu(2), work.count);
  return result;
}

// ---------------------------------------------------------------------------------- helpers

/// An attribute that older drivers may not know: @p fallback instead of an error.
int attributeOr(CUdevice device, CUdevice_attribute attribute, int fallback) {
  int value = 0;
  return cuDeviceGetAttribute(&value, attribute, device) == CUDA_SUCCESS ? value : fallback;
}

std::uint64_t hostAvailableBytes() {
  std::ifstream file("/proc/meminfo");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (const auto available = mn::memAvailableBytes(text))
    return *available;
  return static_cast<std::uint64_t>(sysconf(_SC_AVPHYS_PAGES)) *
         static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string nodeValue(int node) {
  return node < 0 ? "-1 (unknown)" : std::to_string(node);
}

ms::JsonObject sourceJson(const SourceResult& source, const SourceResult& reference) {
  ms::JsonObject json;
  json.set("name", source.name)
      .set("hostToDeviceGBps", source.copies.toDeviceGBps)
      .set("deviceToHostGBps", source.copies.toHostGBps)
      .set("zeroCopyVecAddGBps", source.kernelGBps)
      .set("hostToDeviceRatio", source.copies.toDeviceGBps / reference.copies.toDeviceGBps)
      .set("deviceToHostRatio", source.copies.toHostGBps / reference.copies.toHostGBps)
      .set("zeroCopyVecAddRatio", source.kernelGBps / reference.kernelGBps)
      .set("copiesVerified", source.copiesVerified)
      .set("mismatches", static_cast<std::uint64_t>(source.add.mismatches));
  return json;
}

// --------------------------------------------------------------------------------- the sample

ms::Verdict runNumaHostAlloc(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();
  if (options.noBind && options.strict) {
    throw ms::UsageError("--strict and --no-bind contradict each other");
  }
  // Warnings are printed here, at the top, and kept for the JSON: the library only reports them.
  ms::JsonArray warnings;
  const mn::WarningSink warn = [&warnings](const std::string& text) {
    std::cerr << "numaHostAlloc: warning: " << text << '\n';
    warnings.add(text);
  };

  // Host memory first (no GPU needed to reject a bad --size): three vectors per host source,
  // one source at a time.
  const std::uint64_t hostVectorBytes = ms::chooseBufferBytes(
      options.sizeBytes, kDefaultBytes, hostAvailableBytes(), kVectors, sizeof(float), "the host");

  // 1. Driver, device, context, kernel.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);
  const int ordinal = ms::deviceOrdinal(device);  // a CUdevice is a handle, not an ordinal
  out << "Device " << ordinal << ": " << ms::deviceName(device) << '\n';
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
  ms::OwnedModule module;
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction kernel = nullptr;
  ms::check(cuModuleGetFunction(&kernel, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");

  // 2. Topology: the driver's and the kernel's answer.
  char busId[64] = {};
  ms::check(cuDeviceGetPCIBusId(busId, sizeof busId, device), "cuDeviceGetPCIBusId");
  const int attributeNode = attributeOr(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1);
  const mn::HostNumaNode nearest =
      mn::findNearestHostNode(attributeNode, busId, mn::libnumaNodeMemory());
  out << "PCI bus id " << busId
      << ": CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = " << nodeValue(nearest.attributeNode) << ", "
      << (nearest.sysfs.path.empty() ? std::string("sysfs numa_node") : nearest.sysfs.path) << " = "
      << nodeValue(nearest.sysfs.node) << '\n';
  for (const std::string& note : nearest.notes)
    out << "  note: " << note << '\n';
  out << "Nearest host NUMA node: "
      << (nearest.known() ? std::to_string(nearest.node) : std::string("none"))
      << " (source: " << mn::nodeSourceName(nearest.source) << ")\n";
  const bool overridden = options.node >= 0;
  const int target = overridden ? static_cast<int>(options.node) : nearest.node;
  if (overridden)
    out << "Target node " << target << " (--node)\n";
  // numa_available() and, whatever the libnuma version, not refused by a seccomp filter.
  const bool numaAvailable = mn::numaPolicyCallsAvailable();
  out << "libnuma: " << (numaAvailable ? "available" : "NUMA not available");
  if (numaAvailable) {
    out << ", nodes 0-" << numa_max_node() << ", " << numa_num_configured_nodes() << " configured";
  }
  out << '\n';

  // The device holds one vector, the target and source of the copies.
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const std::uint64_t bytes =
      ms::chooseBufferBytes(options.sizeBytes, hostVectorBytes, freeBytes, 1, sizeof(float));
  const std::size_t count = bytes / sizeof(float);
  const std::size_t stride = mn::vectorStride(bytes);
  const std::size_t hostBytes = stride * kVectors;
  out << "Vectors: " << count << " floats (" << ms::formatBytes(bytes)
      << ") each; every host source holds A, B and C (" << ms::formatBytes(hostBytes) << ")\n";

  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ms::OwnedDeviceMemory scratch;
  ms::check(cuMemAlloc(scratch.out(), bytes), "cuMemAlloc");
  Workload work;
  work.kernel = kernel;
  work.grid = ms::residentGridSize(kernel, device, kBlockSize);
  work.stream = stream.get();
  work.scratch = scratch.get();
  work.bytes = bytes;
  work.count = count;
  work.warmup = options.common.warmup;
  work.iterations = options.common.iterations;

  const mn::BindPolicy policy{!options.noBind, options.strict};
  std::vector<SourceResult> results;
  bool placementOk = true;
  ms::JsonObject bindJson;

  // 3. The mbind path: bind before first touch, check, register, use.
  {
    out << "\n[1] mmap + mbind before first touch + cuMemHostRegister\n";
    mn::NumaBoundHostRange range(hostBytes, target, policy, warn);
    out << "  range: " << range.describe() << '\n';
    if (range.state() != mn::BindState::Bound)
      out << "  unbound: " << range.unboundReason() << '\n';
    // Nothing touched yet, so no physical page exists: the kernel reports them "not present".
    out << "  before first touch: " << range.placement().summary() << '\n';
    range.firstTouch();  // strict: throws unless every page is on the node
    const mn::PagePlacement touched = range.placement();
    out << "  placement after first touch: " << touched.summary() << '\n';
    // DEVICEMAP: the range also gets a device address, which a kernel can dereference.
    ms::check(cuMemHostRegister(range.data(), range.mappedBytes(), CU_MEMHOSTREGISTER_DEVICEMAP),
              "cuMemHostRegister");
    const ms::OwnedHostRegistration registration(range.data());
    const mn::PagePlacement pinned = range.placement();
    out << "  placement after cuMemHostRegister: " << pinned.summary() << '\n';
    if (policy.strict) {
      const std::string problem = mn::strictPlacementProblem(pinned, target);
      if (!problem.empty()) {
        out << "  strict binding broken by pinning: " << problem << '\n';
        placementOk = false;
      }
    }
    CUdeviceptr devicePointer = 0;
    ms::check(cuMemHostGetDevicePointer(&devicePointer, range.data(), 0),
              "cuMemHostGetDevicePointer");
    const HostVectors vectors{static_cast<char*>(range.data()), devicePointer, stride};
    results.push_back(measureSource("mbind + cuMemHostRegister", vectors, work));
    bindJson.set("state", mn::bindStateName(range.state()))
        .set("mode", mn::describeMbindMode(range.mode()))
        .set("hugePageAdvice", range.hugePagesAdvised())
        .set("dontForkAdvice", range.dontForkAdvised())
        .set("fractionOnTarget", pinned.fractionOn(target))
        .set("placement", pinned.summary());
  }

  // 4. The CUDA-native path.
  const bool hostNumaVmm =
      attributeOr(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0) !=
      0;
  out << "\n[2] cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA) + cuMemMap + cuMemSetAccess\n";
  if (!hostNumaVmm) {
    out << "  skipped: CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0\n";
  } else {
    // The driver needs a real node: a --node that does not exist or has no memory is replaced
    // by the nearest node, and with no node at all by 0 (cuda.h: "on systems where NUMA is not
    // available, id must be set to 0").
    const mn::NodeMemory targetMemory =
        target >= 0 ? mn::libnumaNodeMemory()(target) : mn::NodeMemory{};
    const bool targetUsable =
        target >= 0 && targetMemory.status != mn::NodeMemory::Status::DoesNotExist &&
        !(targetMemory.status == mn::NodeMemory::Status::Present && targetMemory.totalBytes == 0);
    const int vmmNode = targetUsable ? target : nearest.known() ? nearest.node : 0;
    HostNumaAllocation allocation(ordinal, vmmNode, hostBytes);
    out << "  node " << vmmNode << (vmmNode != target ? " (the target node is not usable)" : "")
        << ", " << ms::formatBytes(allocation.size()) << ", granularity "
        << ms::formatBytes(allocation.granularity()) << '\n';
    char* host = reinterpret_cast<char*>(allocation.address());
    const HostVectors vectors{host, allocation.address(), stride};
    results.push_back(measureSource("cuMemCreate(HOST_NUMA)", vectors, work));
    // The driver chose the pages; whether the kernel can report them depends on how the driver
    // maps them into the process, so this line is information, not a check.
    out << "  placement as the kernel reports it: "
        << mn::pagesPerNode(host, allocation.size()).summary() << '\n';
    allocation.release();  // cuMemUnmap + cuMemAddressFree, failures reported
  }

  // 5. The reference: cuMemHostAlloc, placed by the driver.
  {
    out << "\n[3] cuMemHostAlloc (reference)\n";
    ms::OwnedPinnedHostMemory pinned;
    ms::check(cuMemHostAlloc(pinned.out(), hostBytes, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
    CUdeviceptr devicePointer = 0;
    ms::check(cuMemHostGetDevicePointer(&devicePointer, pinned.get(), 0),
              "cuMemHostGetDevicePointer");
    const HostVectors vectors{static_cast<char*>(pinned.get()), devicePointer, stride};
    results.push_back(measureSource("cuMemHostAlloc (reference)", vectors, work));
    out << "  placement: " << mn::pagesPerNode(pinned.get(), hostBytes).summary() << '\n';
  }

  // 6. The comparison.
  const SourceResult& reference = results.back();
  out << "\nBandwidth in GB/s (1 GB = 1e9 B), median of " << work.iterations
      << "; ratio to cuMemHostAlloc in brackets\n";
  out << "  " << std::left << std::setw(30) << "source" << std::right << std::setw(20)
      << "host->device" << std::setw(20) << "device->host" << std::setw(22) << "zero-copy VecAdd"
      << '\n';
  const auto cell = [](double value, double referenceValue) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(2) << value << " (" << std::setprecision(3)
         << value / referenceValue << ")";
    return text.str();
  };
  for (const SourceResult& source : results) {
    out << "  " << std::left << std::setw(30) << source.name << std::right << std::setw(20)
        << cell(source.copies.toDeviceGBps, reference.copies.toDeviceGBps) << std::setw(20)
        << cell(source.copies.toHostGBps, reference.copies.toHostGBps) << std::setw(22)
        << cell(source.kernelGBps, reference.kernelGBps) << '\n';
  }
  out << "  (VecAdd moves 3 x " << ms::formatBytes(bytes)
      << " across the bus: reads A and B, writes C)\n";
  const SourceResult& bound = results.front();
  out << std::fixed << std::setprecision(3) << "Ratio bound / cuMemHostAlloc: host->device "
      << bound.copies.toDeviceGBps / reference.copies.toDeviceGBps << ", device->host "
      << bound.copies.toHostGBps / reference.copies.toHostGBps << '\n';

  // 7. Nearest vs remote nodes.
  out << "\n"
      << (overridden ? "Target" : "Nearest") << " vs remote node (copies of "
      << ms::formatBytes(bytes) << ")\n";
  ms::JsonArray nodeRows;
  std::vector<int> nodes;
  if (numaAvailable) {
    const mn::NodeMemoryQuery memory = mn::libnumaNodeMemory();
    for (int node = 0; node <= numa_max_node() && nodes.size() < kMaxTableNodes; ++node) {
      const mn::NodeMemory m = memory(node);
      if (m.status == mn::NodeMemory::Status::Present && m.totalBytes > 0)
        nodes.push_back(node);
    }
  }
  if (options.noBind) {
    out << "  skipped: --no-bind\n";
  } else if (nodes.size() < 2) {
    out << "  skipped: " << (numaAvailable ? "only one NUMA node has memory" : "NUMA not available")
        << ", nothing remote to compare with\n";
  } else {
    out << "  " << std::setw(6) << "node" << std::setw(10) << "distance" << std::setw(12)
        << "on node" << std::setw(20) << "host->device" << std::setw(20) << "device->host" << '\n';
    std::vector<std::pair<int, CopyResult>> rows;
    for (const int node : nodes) {
      mn::NumaBoundHostRange range(2 * stride, node, policy, warn);
      range.firstTouch();
      ms::check(cuMemHostRegister(range.data(), range.mappedBytes(), CU_MEMHOSTREGISTER_DEVICEMAP),
                "cuMemHostRegister");
      const ms::OwnedHostRegistration registration(range.data());
      const double onNode = range.placement().fractionOn(node);
      char* host = static_cast<char*>(range.data());
      rows.emplace_back(node, timeCopies(host, host + stride, work));
      const CopyResult& copies = rows.back().second;
      const int distance = target >= 0 ? numa_distance(target, node) : 0;
      out << "  " << std::setw(6) << node << std::setw(10) << distance << std::setw(10)
          << std::setprecision(1) << 100 * onNode << " %" << std::setprecision(2) << std::setw(20)
          << copies.toDeviceGBps << std::setw(20) << copies.toHostGBps
          << mn::nodeRowLabel(node, target, nearest.node, overridden) << '\n';
      nodeRows.addRaw(ms::JsonObject()
                          .set("node", node)
                          .set("distance", distance)
                          .set("fractionOnNode", onNode)
                          .set("hostToDeviceGBps", copies.toDeviceGBps)
                          .set("deviceToHostGBps", copies.toHostGBps)
                          .dump());
    }
    // Ratios against the target row: the --node target when given, else the nearest node.
    const auto targetRow = std::find_if(rows.begin(), rows.end(),
                                        [&](const auto& row) { return row.first == target; });
    if (targetRow != rows.end()) {
      const char* const targetName = overridden ? "target node" : "nearest node";
      for (const auto& [node, copies] : rows) {
        if (node == target)
          continue;
        out << std::setprecision(3) << "  node " << node << " / " << targetName << " " << target
            << ": host->device " << copies.toDeviceGBps / targetRow->second.toDeviceGBps
            << ", device->host " << copies.toHostGBps / targetRow->second.toHostGBps << '\n';
      }
    }
  }

  bool dataOk = true;
  for (const SourceResult& source : results) {
    if (!source.copiesVerified)
      out << source.name << ": copied data differs\n";
    if (source.add.mismatches > 0)
      out << source.name << ", VecAdd: " << ms::describeMismatch(source.add) << '\n';
    dataOk = dataOk && source.passed();
  }

  ms::JsonArray sources;
  for (const SourceResult& source : results)
    sources.addRaw(sourceJson(source, reference).dump());
  json.set("device", ordinal)
      .set("deviceName", ms::deviceName(device))
      .set("pciBusId", busId)
      .set("attributeNode", nearest.attributeNode)
      .set("sysfsNode", nearest.sysfs.node)
      .set("nearestNode", nearest.node)
      .set("nodeSource", mn::nodeSourceName(nearest.source))
      .set("sourcesDisagree", nearest.sourcesDisagree)
      .set("targetNode", target)
      .set("strict", policy.strict)
      .set("bind", policy.bind)
      .set("binding", bindJson)
      .set("hostNumaVmmSupported", hostNumaVmm)
      .set("bytesPerVector", static_cast<std::uint64_t>(bytes))
      .set("iterations", work.iterations)
      .set("sources", sources)
      .set("nodes", nodeRows)
      .set("warnings", warnings);
  return dataOk && placementOk ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "numaHostAlloc",
      "Binds host memory to the NUMA node nearest the GPU with mbind before first touch, checks "
      "where the pages landed, registers it with CUDA and compares its bandwidth with "
      "cuMemCreate(HOST_NUMA) and cuMemHostAlloc.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4 (default 1G, less if memory is short); "
                      "each host source holds three",
                      options.sizeBytes);
  commandLine.addFlag("strict",
                      "MPOL_BIND: every page on the node or an error (default: MPOL_PREFERRED)",
                      options.strict);
  commandLine.addFlag("no-bind", "do not bind the host memory (no mbind call)", options.noBind);
  commandLine.addInteger("node", "bind to this NUMA node instead of the one nearest the GPU",
                         options.node, 0, 1023);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runNumaHostAlloc(options, report); });
}
