/**
 * @file numaHostAlloc_measure.cpp
 * @brief The topology probe, the workload, the measurements, tables and JSON fields of
 *        04_numaHostAlloc (see numaHostAlloc_measure.hpp).
 */
#include "numaHostAlloc_measure.hpp"

#include <numa.h>

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <utility>

namespace ms = memsamples;
namespace mn = memsamples::numa;

namespace {

constexpr std::size_t kMaxTableNodes = 8;
constexpr int kVectors = 3;      // A, B and C in every host source
constexpr int kBlockSize = 256;  // threads per block of VecAdd_kernel

// An attribute that older drivers may not know: @p fallback instead of an error.
int attributeOr(CUdevice device, CUdevice_attribute attribute, int fallback) {
  int value = 0;
  return cuDeviceGetAttribute(&value, attribute, device) == CUDA_SUCCESS ? value : fallback;
}

CopyResult timeCopies(char* hostSource, char* hostTarget, const Workload& work) {
  CopyResult result;
  const CUstream stream = work.stream.get();
  result.toDevice = ms::timeOnStream(stream, work.warmup, work.iterations, [&] {
    ms::check(cuMemcpyHtoDAsync(work.scratch.get(), hostSource, work.bytes, stream),
              "cuMemcpyHtoDAsync");
  });
  result.toHost = ms::timeOnStream(stream, work.warmup, work.iterations, [&] {
    ms::check(cuMemcpyDtoHAsync(hostTarget, work.scratch.get(), work.bytes, stream),
              "cuMemcpyDtoHAsync");
  });
  const auto bytes = static_cast<double>(work.bytes);
  result.toDeviceGBps = ms::gigabytesPerSecond(bytes, result.toDevice.medianMs);
  result.toHostGBps = ms::gigabytesPerSecond(bytes, result.toHost.medianMs);
  return result;
}

void printComparison(const std::vector<SourceResult>& results, const Workload& work,
                     std::ostream& out) {
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
  out << "  (VecAdd moves 3 x " << ms::formatBytes(work.bytes)
      << " across the bus: reads A and B, writes C)\n";
  const SourceResult& bound = results.front();
  out << std::fixed << std::setprecision(3) << "Ratio bound / cuMemHostAlloc: host->device "
      << bound.copies.toDeviceGBps / reference.copies.toDeviceGBps << ", device->host "
      << bound.copies.toHostGBps / reference.copies.toHostGBps << '\n';
}

// Nearest vs remote: the copies from a range bound to each host node with memory in turn.
ms::JsonArray compareNodes(const Topology& topology, const Workload& work,
                           const mn::WarningSink& warn, std::ostream& out) {
  const int target = topology.target;
  out << "\n"
      << (topology.targetFromOption ? "Target" : "Nearest") << " vs remote node (copies of "
      << ms::formatBytes(work.bytes) << ")\n";
  ms::JsonArray rowsJson;
  const std::vector<int> candidates = topology.numaAvailable
                                          ? ms::hostNodesWithMemory(topology.nodes, kMaxTableNodes)
                                          : std::vector<int>{};
  if (!topology.policy.bind || candidates.size() < 2) {
    out << "  skipped: "
        << (!topology.policy.bind ? "--no-bind"
            : topology.numaAvailable
                ? "only one host NUMA node has memory, nothing remote to compare with"
                : "NUMA not available, nothing remote to compare with")
        << '\n';
    return rowsJson;
  }
  out << "  " << std::setw(6) << "node" << std::setw(10) << "distance" << std::setw(12) << "on node"
      << std::setw(20) << "host->device" << std::setw(20) << "device->host" << '\n';
  std::vector<std::pair<int, CopyResult>> rows;
  for (const int node : candidates) {
    mn::NumaBoundHostRange range(2 * work.stride, node, topology.policy, warn);
    range.firstTouch();
    ms::check(cuMemHostRegister(range.data(), range.mappedBytes(), CU_MEMHOSTREGISTER_DEVICEMAP),
              "cuMemHostRegister");
    const ms::OwnedHostRegistration registration(range.data());
    const ms::DrainOnExit drain(work.stream.get());  // no copy runs when the range goes
    const double onNode = range.placement().fractionOn(node);
    char* host = static_cast<char*>(range.data());
    rows.emplace_back(node, timeCopies(host, host + work.stride, work));
    const CopyResult& copies = rows.back().second;
    const int distance = target >= 0 ? topology.nodes.distance(target, node) : 0;
    out << "  " << std::setw(6) << node << std::setw(10) << distance << std::setw(10)
        << std::setprecision(1) << 100 * onNode << " %" << std::setprecision(2) << std::setw(20)
        << copies.toDeviceGBps << std::setw(20) << copies.toHostGBps
        << mn::nodeRowLabel(node, target, topology.nearest.node, topology.targetFromOption) << '\n';
    rowsJson.addRaw(ms::JsonObject()
                        .set("node", node)
                        .set("distance", distance)
                        .set("fractionOnNode", onNode)
                        .set("hostToDeviceGBps", copies.toDeviceGBps)
                        .set("deviceToHostGBps", copies.toHostGBps)
                        .dump());
  }
  // Ratios against the target row: the --node target when given, else the nearest node.
  const auto targetRow =
      std::find_if(rows.begin(), rows.end(), [&](const auto& row) { return row.first == target; });
  const char* const targetName = topology.targetFromOption ? "target node" : "nearest node";
  for (const auto& [node, copies] : rows) {
    if (targetRow == rows.end() || node == target)
      continue;
    out << std::setprecision(3) << "  node " << node << " / " << targetName << " " << target
        << ": host->device " << copies.toDeviceGBps / targetRow->second.toDeviceGBps
        << ", device->host " << copies.toHostGBps / targetRow->second.toHostGBps << '\n';
  }
  return rowsJson;
}

}  // namespace

Topology probeTopology(CUdevice device, long long node, const mn::BindPolicy& policy,
                       ms::Report& report) {
  std::ostream& out = report.out();
  Topology topology;
  topology.ordinal = ms::deviceOrdinal(device);  // a CUdevice is a handle, not an ordinal
  const std::string name = ms::deviceName(device);
  out << "Device " << topology.ordinal << ": " << name << '\n';
  // The mbind path pins its range with cuMemHostRegister, and so does every row of the
  // nearest-vs-remote table: a device that cannot register host memory waives the sample
  // here, before anything is allocated (numa_binding.hpp: requireHostRegister).
  const auto hostRegister = CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED;
  mn::requireHostRegister(topology.ordinal, ms::deviceAttribute(device, hostRegister));
  // [topology]
  char busId[64] = {};
  ms::check(cuDeviceGetPCIBusId(busId, sizeof busId, device), "cuDeviceGetPCIBusId");
  const int attributeNode = attributeOr(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1);
  // GPU memory can be a NUMA node of its own (coherent Grace-class systems): it has memory, but
  // binding "host" buffers there would put them in HBM. Every device's node is marked.
  topology.nodes = mn::libnumaNodes();
  int deviceCount = 0;
  ms::check(cuDeviceGetCount(&deviceCount), "cuDeviceGetCount");
  for (int other = 0; other < deviceCount; ++other) {
    CUdevice handle = 0;
    ms::check(cuDeviceGet(&handle, other), "cuDeviceGet");
    const int numaConfig = ms::deviceAttribute(handle, CU_DEVICE_ATTRIBUTE_NUMA_CONFIG);
    const int numaId = ms::deviceAttribute(handle, CU_DEVICE_ATTRIBUTE_NUMA_ID);
    if (numaConfig == CU_DEVICE_NUMA_CONFIG_NUMA_NODE && numaId >= 0)
      topology.nodes.deviceMemoryNodes[numaId] = other;
  }
  const mn::HostNumaNode& nearest = topology.nearest =
      mn::findNearestHostNode(attributeNode, busId, topology.nodes);
  topology.targetFromOption = node >= 0;
  topology.target = topology.targetFromOption ? static_cast<int>(node) : nearest.node;
  topology.policy = policy;
  topology.numaAvailable = mn::numaPolicyCallsAvailable();  // also: not refused by seccomp
  const auto hostNumaVmm = CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
  topology.hostNumaVmm = attributeOr(device, hostNumaVmm, 0) != 0;
  // The driver needs a host node with memory, or id 0 where it sees no NUMA (cuda.h).
  topology.vmmNode =
      mn::hostNumaVmmNode(attributeNode, topology.target, nearest.node, topology.nodes);
  // [topology]

  out << "PCI bus id " << busId
      << ": CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = " << mn::nodeValueText(nearest.attributeNode) << ", "
      << (nearest.sysfs.path.empty() ? std::string("sysfs numa_node") : nearest.sysfs.path) << " = "
      << mn::nodeValueText(nearest.sysfs.node) << '\n';
  for (const std::string& note : nearest.notes)
    out << "  note: " << note << '\n';
  out << "Nearest host NUMA node: "
      << (nearest.known() ? std::to_string(nearest.node) : std::string("none"))
      << " (source: " << mn::nodeSourceName(nearest.source) << ")\n";
  if (topology.targetFromOption)
    out << "Target node " << topology.target << " (--node)\n";
  out << "libnuma: " << (topology.numaAvailable ? "available" : "NUMA not available");
  if (topology.numaAvailable)
    out << ", nodes 0-" << numa_max_node() << ", " << numa_num_configured_nodes() << " configured";
  out << '\n';
  if (!topology.nodes.deviceMemoryNodes.empty()) {
    out << "GPU memory NUMA nodes (not host memory):";
    for (const auto& [gpuNode, gpu] : topology.nodes.deviceMemoryNodes)
      out << " node " << gpuNode << " (device " << gpu << ")";
    out << '\n';
  }
  report.json()
      .set("device", topology.ordinal)
      .set("deviceName", name)
      .set("pciBusId", busId)
      .set("attributeNode", nearest.attributeNode)
      .set("sysfsNode", nearest.sysfs.node)
      .set("nearestNode", nearest.node)
      .set("nodeSource", mn::nodeSourceName(nearest.source))
      .set("sourcesDisagree", nearest.sourcesDisagree)
      .set("targetNode", topology.target)
      .set("strict", policy.strict)
      .set("bind", policy.bind);
  return topology;
}

Workload prepareWorkload(CUdevice device, const std::optional<std::uint64_t>& requested,
                         std::uint64_t hostVectorBytes, const ms::CommonOptions& options,
                         std::ostream& out) {
  Workload work;
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
  ms::check(cuModuleLoadData(work.module.out(), fatbin.data()), "cuModuleLoadData");
  ms::check(cuModuleGetFunction(&work.kernel, work.module.get(), "VecAdd_kernel"),
            "cuModuleGetFunction");
  // The device holds one vector, the target and source of the copies.
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  work.bytes = ms::chooseBufferBytes(requested, hostVectorBytes, freeBytes, 1, sizeof(float));
  work.count = work.bytes / sizeof(float);
  work.stride = ms::vectorStride(work.bytes, ms::systemPageSizes().base);
  work.hostBytes = work.stride * kVectors;
  out << "Vectors: " << work.count << " floats (" << ms::formatBytes(work.bytes)
      << ") each; every host source holds A, B and C (" << ms::formatBytes(work.hostBytes) << ")\n";
  ms::check(cuMemAlloc(work.scratch.out(), work.bytes), "cuMemAlloc");
  // Declared after the memory its work uses: destroyed first, it waits for that work.
  ms::check(cuStreamCreate(work.stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  work.block = kBlockSize;
  work.grid = ms::residentGridSize(work.kernel, device, kBlockSize);
  work.warmup = options.warmup;
  work.iterations = options.iterations;
  return work;
}

SourceResult measureSource(std::string name, const HostVectors& vectors, const Workload& work,
                           std::ostream& out, const std::string& placementLabel) {
  SourceResult result;
  result.name = std::move(name);
  ms::fillVectorAddInputs(vectors.cpu(0), vectors.cpu(1), work.count, 2024);
  std::memset(vectors.cpu(2), 0, work.bytes);

  // A -> device, device -> C; timeOnStream synchronizes, so C can be compared right after.
  result.copies = timeCopies(reinterpret_cast<char*>(vectors.cpu(0)),
                             reinterpret_cast<char*>(vectors.cpu(2)), work);
  result.copiesVerified = std::memcmp(vectors.cpu(2), vectors.cpu(0), work.bytes) == 0;

  // Zero-copy: the kernel reads A and B and writes C across the bus, in place.
  // Common's timeVectorAdd makes the cuLaunchKernel calls, with the kernel's parameter types.
  ms::VectorAddLaunch launch;
  launch.kernel = work.kernel;
  launch.grid = work.grid;
  launch.block = work.block;
  launch.stream = work.stream.get();
  launch.a = vectors.gpu(0);
  launch.b = vectors.gpu(1);
  launch.c = vectors.gpu(2);
  launch.count = work.count;
  result.kernel = ms::timeVectorAdd(launch, work.warmup, work.iterations);
  result.kernelGBps =
      ms::gigabytesPerSecond(3.0 * static_cast<double>(work.bytes), result.kernel.medianMs);
  result.add = ms::checkVectorAdd(vectors.cpu(0), vectors.cpu(1), vectors.cpu(2), work.count);
  result.placement = ms::pagesPerNode(vectors.host, kVectors * vectors.stride);
  if (!placementLabel.empty())
    out << "  " << placementLabel << ": " << result.placement.summary() << '\n';
  return result;
}

bool finishRun(const std::vector<SourceResult>& results, const Topology& topology,
               const Workload& work, const ms::JsonObject& binding, const mn::WarningSink& warn,
               const ms::JsonArray& warnings, ms::Report& report) {
  std::ostream& out = report.out();
  printComparison(results, work, out);
  const ms::JsonArray nodeRows = compareNodes(topology, work, warn, out);
  bool dataOk = true;
  ms::JsonArray sources;
  const SourceResult& reference = results.back();
  for (const SourceResult& source : results) {
    if (!source.copiesVerified)
      out << source.name << ": copied data differs\n";
    if (source.add.mismatches > 0)
      out << source.name << ", VecAdd: " << ms::describeMismatch(source.add) << '\n';
    dataOk = dataOk && source.passed();
    sources.addRaw(
        ms::JsonObject()
            .set("name", source.name)
            .set("hostToDeviceGBps", source.copies.toDeviceGBps)
            .set("deviceToHostGBps", source.copies.toHostGBps)
            .set("zeroCopyVecAddGBps", source.kernelGBps)
            .set("hostToDeviceRatio", source.copies.toDeviceGBps / reference.copies.toDeviceGBps)
            .set("deviceToHostRatio", source.copies.toHostGBps / reference.copies.toHostGBps)
            .set("zeroCopyVecAddRatio", source.kernelGBps / reference.kernelGBps)
            .set("copiesVerified", source.copiesVerified)
            .set("mismatches", static_cast<std::uint64_t>(source.add.mismatches))
            .dump());
  }
  report.json()
      .set("binding", binding)
      .set("hostNumaVmmSupported", topology.hostNumaVmm)
      .set("bytesPerVector", static_cast<std::uint64_t>(work.bytes))
      .set("iterations", work.iterations)
      .set("sources", sources)
      .set("nodes", nodeRows)
      .set("warnings", warnings);
  return dataOk;
}
