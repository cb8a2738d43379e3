/**
 * @file numa_node_info.cpp
 * @brief The sysfs readers of NUMA nodes and page sizes, and the node queries built on them (see
 *        numa_node_info.hpp).
 */
#include "support/numa_node_info.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

namespace memsamples {

namespace {

std::string nodeFolder(const std::string& sysfsRoot, int node) {
  return sysfsRoot + "/devices/system/node/node" + std::to_string(node);
}

bool hasHostMemory(const NodeMemory& memory) {
  return memory.status == NodeMemory::Status::Present && memory.totalBytes > 0;
}

}  // namespace

NodeMemory readNodeMemory(const std::string& sysfsRoot, int node) {
  NodeMemory memory;
  memory.status = NodeMemory::Status::DoesNotExist;
  if (node < 0) {
    memory.detail = "negative node number";
    return memory;
  }
  const std::string path = nodeFolder(sysfsRoot, node) + "/meminfo";
  std::ifstream file(path);
  if (!file) {
    memory.detail = "cannot read " + path + ": " + std::strerror(errno);
    return memory;
  }
  std::optional<std::uint64_t> totalKiB;
  std::optional<std::uint64_t> freeKiB;
  std::string line;
  while (std::getline(file, line)) {
    for (auto [key, target] :
         {std::pair{"MemTotal:", &totalKiB}, std::pair{"MemFree:", &freeKiB}}) {
      const std::size_t at = line.find(key);
      std::istringstream rest(at == std::string::npos ? "" : line.substr(at + std::strlen(key)));
      std::uint64_t value = 0;
      std::string unit;
      if (rest >> value >> unit && unit == "kB")
        *target = value;
    }
  }
  if (!totalKiB || !freeKiB) {
    memory.status = NodeMemory::Status::Unknown;
    memory.detail = path + " has no readable MemTotal and MemFree lines";
    return memory;
  }
  memory.status = NodeMemory::Status::Present;
  memory.totalBytes = *totalKiB * 1024;
  memory.freeBytes = *freeKiB * 1024;
  return memory;
}

std::vector<int> sysfsNumaNodes(const std::string& sysfsRoot) {
  std::vector<int> nodes;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(sysfsRoot + "/devices/system/node", error)) {
    const std::string name = entry.path().filename().string();
    int node = -1;
    const char* const end = name.c_str() + name.size();
    const auto [stop, parsed] =
        std::from_chars(name.c_str() + std::min<std::size_t>(4, name.size()), end, node);
    if (name.rfind("node", 0) == 0 && name.size() > 4 && parsed == std::errc() && stop == end)
      nodes.push_back(node);
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

int readNodeDistance(const std::string& sysfsRoot, const std::vector<int>& nodes, int from,
                     int to) {
  // The kernel writes one distance per existing node, in node order: a position, not a number.
  std::ifstream file(nodeFolder(sysfsRoot, from) + "/distance");
  const auto position = std::find(nodes.begin(), nodes.end(), to);
  int value = 0;
  for (auto at = nodes.begin(); at != nodes.end() && file >> value; ++at) {
    if (at == position)
      return value;
  }
  return 0;
}

NodeMemory NodeQueries::hostMemory(int node) const {
  NodeMemory found;
  const auto device = deviceMemoryNodes.find(node);
  if (device != deviceMemoryNodes.end()) {
    found.status = NodeMemory::Status::DeviceMemory;
    found.detail =
        "the memory of device " + std::to_string(device->second) + " (CU_DEVICE_ATTRIBUTE_NUMA_ID)";
    return found;
  }
  found.detail = "no memory query was given";
  return memory ? memory(node) : found;
}

bool NodeQueries::holdsHostMemory(int node) const {
  if (node < 0)
    return false;
  // Memory that cannot be read is the driver's or the kernel's to judge.
  const NodeMemory found = hostMemory(node);
  return hasHostMemory(found) || found.status == NodeMemory::Status::Unknown;
}

NodeQueries sysfsNodes(const std::string& sysfsRoot) {
  NodeQueries queries;
  queries.nodes = sysfsNumaNodes(sysfsRoot);
  queries.memory = [sysfsRoot](int node) { return readNodeMemory(sysfsRoot, node); };
  queries.distance = [sysfsRoot, nodes = queries.nodes](int from, int to) {
    return readNodeDistance(sysfsRoot, nodes, from, to);
  };
  return queries;
}

int closestHostNodeWithMemory(int from, const NodeQueries& nodes) {
  int best = -1;
  int bestDistance = 0;
  for (const int node : nodes.nodes) {
    if (!hasHostMemory(nodes.hostMemory(node)))
      continue;
    const int distance = from >= 0 && nodes.distance ? nodes.distance(from, node) : 0;
    if (best < 0 || (distance > 0 && (bestDistance <= 0 || distance < bestDistance))) {
      best = node;
      bestDistance = distance;
    }
  }
  return best;
}

std::vector<int> hostNodesWithMemory(const NodeQueries& nodes, std::size_t limit) {
  std::vector<int> found;
  for (const int node : nodes.nodes) {
    if (found.size() < limit && hasHostMemory(nodes.hostMemory(node)))
      found.push_back(node);
  }
  return found;
}

PageSizes readPageSizes(std::size_t basePageBytes, const std::string& sysfsRoot) {
  PageSizes pages;
  pages.base = basePageBytes;
  std::ifstream file(sysfsRoot + "/kernel/mm/transparent_hugepage/hpage_pmd_size");
  std::uint64_t huge = 0;
  std::string extra;
  if (file >> huge && !(file >> extra) && huge > basePageBytes && huge % basePageBytes == 0 &&
      huge <= SIZE_MAX)
    pages.huge = static_cast<std::size_t>(huge);
  return pages;
}

PageSizes systemPageSizes() {
  // Read once: 06 lays out a range per allocation inside its timed latency loops.
  static const PageSizes pages = readPageSizes(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
  return pages;
}

}  // namespace memsamples
