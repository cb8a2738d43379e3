/**
 * @file numaHostAlloc_measure.cpp
 * @brief The measurements, tables and JSON fields of 04_numaHostAlloc (see
 *        numaHostAlloc_measure.hpp).
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

}  // namespace

Workload makeWorkload(CUfunction kernel, CUdevice device, unsigned int block, CUstream stream,
                      CUdeviceptr scratch, std::size_t bytes, const ms::CommonOptions& options) {
  Workload work;
  work.kernel = kernel;
  work.grid = ms::residentGridSize(kernel, device, static_cast<int>(block));
  work.block = block;
  work.stream = stream;
  work.scratch = scratch;
  work.bytes = bytes;
  work.count = bytes / sizeof(float);
  work.warmup = options.warmup;
  work.iterations = options.iterations;
  return work;
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
    ms::check(cuLaunchKernel(work.kernel, work.grid, 1, 1, work.block, 1, 1, 0, work.stream, args,
                             nullptr),
              "cuLaunchKernel");
  });
  result.kernelGBps =
      ms::gigabytesPerSecond(3.0 * static_cast<double>(work.bytes), result.kernel.medianMs);
  result.add = ms::checkVectorAdd(vectors.cpu(0), vectors.cpu(1), vectors.cpu(2), work.count);
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

ms::JsonArray compareNodes(const NodeComparison& nodes, const Workload& work,
                           const mn::WarningSink& warn, std::ostream& out) {
  const int target = nodes.target;
  out << "\n"
      << (nodes.targetFromOption ? "Target" : "Nearest") << " vs remote node (copies of "
      << ms::formatBytes(work.bytes) << ")\n";
  ms::JsonArray rowsJson;
  if (!nodes.policy.bind) {
    out << "  skipped: --no-bind\n";
    return rowsJson;
  }
  const std::vector<int> candidates = nodes.numaAvailable
                                          ? mn::hostNodesWithMemory(nodes.nodes, kMaxTableNodes)
                                          : std::vector<int>{};
  if (candidates.size() < 2) {
    out << "  skipped: "
        << (nodes.numaAvailable ? "only one host NUMA node has memory" : "NUMA not available")
        << ", nothing remote to compare with\n";
    return rowsJson;
  }
  out << "  " << std::setw(6) << "node" << std::setw(10) << "distance" << std::setw(12) << "on node"
      << std::setw(20) << "host->device" << std::setw(20) << "device->host" << '\n';
  std::vector<std::pair<int, CopyResult>> rows;
  for (const int node : candidates) {
    mn::NumaBoundHostRange range(2 * nodes.stride, node, nodes.policy, warn);
    range.firstTouch();
    ms::check(cuMemHostRegister(range.data(), range.mappedBytes(), CU_MEMHOSTREGISTER_DEVICEMAP),
              "cuMemHostRegister");
    const ms::OwnedHostRegistration registration(range.data());
    const ms::DrainOnExit drain(work.stream);  // no copy runs when the range goes
    const double onNode = range.placement().fractionOn(node);
    char* host = static_cast<char*>(range.data());
    rows.emplace_back(node, timeCopies(host, host + nodes.stride, work));
    const CopyResult& copies = rows.back().second;
    const int distance = target >= 0 ? nodes.nodes.distance(target, node) : 0;
    out << "  " << std::setw(6) << node << std::setw(10) << distance << std::setw(10)
        << std::setprecision(1) << 100 * onNode << " %" << std::setprecision(2) << std::setw(20)
        << copies.toDeviceGBps << std::setw(20) << copies.toHostGBps
        << mn::nodeRowLabel(node, target, nodes.nearest, nodes.targetFromOption) << '\n';
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
  if (targetRow != rows.end()) {
    const char* const targetName = nodes.targetFromOption ? "target node" : "nearest node";
    for (const auto& [node, copies] : rows) {
      if (node == target)
        continue;
      out << std::setprecision(3) << "  node " << node << " / " << targetName << " " << target
          << ": host->device " << copies.toDeviceGBps / targetRow->second.toDeviceGBps
          << ", device->host " << copies.toHostGBps / targetRow->second.toHostGBps << '\n';
    }
  }
  return rowsJson;
}

void printTopology(const char* busId, const mn::HostNumaNode& nearest, int target,
                   bool targetFromOption, const mn::NodeQueries& nodes, bool numaAvailable,
                   std::ostream& out) {
  out << "PCI bus id " << busId
      << ": CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = " << mn::nodeValueText(nearest.attributeNode) << ", "
      << (nearest.sysfs.path.empty() ? std::string("sysfs numa_node") : nearest.sysfs.path) << " = "
      << mn::nodeValueText(nearest.sysfs.node) << '\n';
  for (const std::string& note : nearest.notes)
    out << "  note: " << note << '\n';
  out << "Nearest host NUMA node: "
      << (nearest.known() ? std::to_string(nearest.node) : std::string("none"))
      << " (source: " << mn::nodeSourceName(nearest.source) << ")\n";
  if (targetFromOption)
    out << "Target node " << target << " (--node)\n";
  out << "libnuma: " << (numaAvailable ? "available" : "NUMA not available");
  if (numaAvailable)
    out << ", nodes 0-" << numa_max_node() << ", " << numa_num_configured_nodes() << " configured";
  out << '\n';
  if (!nodes.deviceMemoryNodes.empty()) {
    out << "GPU memory NUMA nodes (not host memory):";
    for (const auto& [node, device] : nodes.deviceMemoryNodes)
      out << " node " << node << " (device " << device << ")";
    out << '\n';
  }
}

void recordTopology(ms::JsonObject& json, int ordinal, const std::string& deviceName,
                    const char* busId, const mn::HostNumaNode& nearest, int target,
                    const mn::BindPolicy& policy) {
  json.set("device", ordinal)
      .set("deviceName", deviceName)
      .set("pciBusId", busId)
      .set("attributeNode", nearest.attributeNode)
      .set("sysfsNode", nearest.sysfs.node)
      .set("nearestNode", nearest.node)
      .set("nodeSource", mn::nodeSourceName(nearest.source))
      .set("sourcesDisagree", nearest.sourcesDisagree)
      .set("targetNode", target)
      .set("strict", policy.strict)
      .set("bind", policy.bind);
}

ms::JsonObject bindingJson(const mn::BindOutcome& binding, const mn::PagePlacement& pinned,
                           int target) {
  ms::JsonObject json;
  json.set("state", mn::bindStateName(binding.state))
      .set("mode", mn::describeMbindMode(binding.mode))
      .set("hugePageAdvice", binding.hugePagesAdvised)
      .set("dontForkAdvice", binding.dontForkAdvised)
      .set("fractionOnTarget", pinned.fractionOn(target))
      .set("placement", pinned.summary());
  return json;
}

bool reportDataChecks(const std::vector<SourceResult>& results, std::ostream& out) {
  bool dataOk = true;
  for (const SourceResult& source : results) {
    if (!source.copiesVerified)
      out << source.name << ": copied data differs\n";
    if (source.add.mismatches > 0)
      out << source.name << ", VecAdd: " << ms::describeMismatch(source.add) << '\n';
    dataOk = dataOk && source.passed();
  }
  return dataOk;
}

void recordResults(ms::JsonObject& json, const ms::JsonObject& binding, bool hostNumaVmmSupported,
                   const Workload& work, const std::vector<SourceResult>& results,
                   const ms::JsonArray& nodeRows, const ms::JsonArray& warnings) {
  ms::JsonArray sources;
  for (const SourceResult& source : results)
    sources.addRaw(sourceJson(source, results.back()).dump());
  json.set("binding", binding)
      .set("hostNumaVmmSupported", hostNumaVmmSupported)
      .set("bytesPerVector", static_cast<std::uint64_t>(work.bytes))
      .set("iterations", work.iterations)
      .set("sources", sources)
      .set("nodes", nodeRows)
      .set("warnings", warnings);
}
