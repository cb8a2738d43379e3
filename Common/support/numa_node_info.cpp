/**
 * @file numa_node_info.cpp
 * @brief The sysfs readers of NUMA nodes and page sizes, the node queries built on them, the
 *        page placement queries and the layout of a host range (see numa_node_info.hpp).
 */
#include "support/numa_node_info.hpp"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "memsamples.hpp"

namespace memsamples {

namespace {

std::string nodeFolder(const std::string& sysfsRoot, int node) {
  return sysfsRoot + "/devices/system/node/node" + std::to_string(node);
}

// The errnos the NUMA calls answer, by name: the name is what people search for.
constexpr std::pair<int, const char*> kErrnoNames[] = {
    {EPERM, "EPERM"},   {ENOENT, "ENOENT"}, {EIO, "EIO"},
    {ENOMEM, "ENOMEM"}, {EACCES, "EACCES"}, {EFAULT, "EFAULT"},
    {EINVAL, "EINVAL"}, {ENOSYS, "ENOSYS"}, {EXDEV, "EXDEV"},
};

std::size_t basePageBytes() {
  return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
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

std::string errnoText(int error) {
  std::string name = "errno " + std::to_string(error);
  for (const auto& [value, text] : kErrnoNames) {
    if (value == error)
      name = text;
  }
  return std::string(std::strerror(error)) + " (" + name + ")";
}

bool PagePlacement::allOn(int node) const {
  const auto found = pagesPerNode.find(node);
  return known() && pages > 0 && found != pagesPerNode.end() && found->second == pages;
}

double PagePlacement::fractionOn(int node) const {
  const auto found = pagesPerNode.find(node);
  if (!known() || pages == 0 || found == pagesPerNode.end())
    return 0;
  return static_cast<double>(found->second) / static_cast<double>(pages);
}

std::string PagePlacement::summary() const {
  if (!known())
    return "unknown: " + error;
  std::ostringstream text;
  text << std::fixed << std::setprecision(1);
  const char* separator = "";
  for (const auto& [node, count] : pagesPerNode) {
    text << separator << "node " << node << ": " << count << " of " << pages << " pages ("
         << 100.0 * static_cast<double>(count) / static_cast<double>(pages) << " %)";
    separator = "; ";
  }
  if (notPresent > 0) {
    text << separator << notPresent << " not present";
    separator = "; ";
  }
  if (unreadable > 0)
    text << separator << unreadable << " unreadable (" << errnoText(firstUnreadableError) << ")";
  if (pages == 0)
    text << "no pages";
  text << " [" << formatBytes(pageBytes) << " pages, " << method << "]";
  return text.str();
}

std::vector<void*> pageAddresses(const void* address, std::size_t bytes) {
  std::vector<void*> pages;
  const std::size_t page = basePageBytes();
  const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(address);
  for (std::uintptr_t at = start & ~(page - 1); address && bytes && at < start + bytes; at += page)
    pages.push_back(reinterpret_cast<void*>(at));
  return pages;
}

PagePlacement placementFromStatus(const std::vector<int>& status) {
  PagePlacement placement;
  placement.pageBytes = basePageBytes();
  placement.method = "move_pages";
  placement.pages = status.size();
  // Per page: a node, -ENOENT (no page yet), or another negative errno (not reported).
  for (const int answer : status) {
    if (answer >= 0)
      ++placement.pagesPerNode[answer];
    else if (answer == -ENOENT)
      ++placement.notPresent;
    else if (placement.unreadable++ == 0)
      placement.firstUnreadableError = -answer;
  }
  return placement;
}

PagePlacement placementFromPolicyQueries(const std::vector<void*>& pages, int moveError) {
  // get_mempolicy names each page's node as move_pages would, so the same counting follows.
  std::vector<int> nodes;
  int node = -1;
  int policyError = 0;
  for (void* const page : pages) {
    if (syscall(SYS_get_mempolicy, &node, nullptr, 0, page, MPOL_F_NODE | MPOL_F_ADDR) != 0) {
      policyError = errno;
      break;
    }
    nodes.push_back(node);
  }
  PagePlacement placement = placementFromStatus(policyError == 0 ? nodes : std::vector<int>{});
  placement.method = "get_mempolicy";
  placement.pages = pages.size();
  if (policyError != 0)
    placement.error =
        "move_pages failed: " + errnoText(moveError) +
        "; get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) failed: " + errnoText(policyError);
  return placement;
}

PagePlacement pagesPerNode(const void* address, std::size_t bytes) {
  std::vector<void*> pages = pageAddresses(address, bytes);
  std::vector<int> status(pages.size());
  // Batches keep one call's work bounded; with a null node list move_pages moves nothing.
  constexpr std::size_t kBatch = 16384;
  for (std::size_t first = 0; first < pages.size(); first += kBatch) {
    const std::size_t n = std::min(kBatch, pages.size() - first);
    if (syscall(SYS_move_pages, 0, n, pages.data() + first, nullptr, status.data() + first, 0) != 0)
      return placementFromPolicyQueries(pages, errno);
  }
  return placementFromStatus(status);
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

std::uint64_t vectorStride(std::uint64_t vectorBytes, std::uint64_t pageBytes) {
  return (vectorBytes + pageBytes - 1) / pageBytes * pageBytes;
}

RangeLayout hostRangeLayout(std::size_t bytes, const PageSizes& pages) {
  RangeLayout layout;
  layout.alignment = pages.huge > 0 && bytes >= pages.huge ? pages.huge : pages.base;
  if (bytes == 0 || bytes > SIZE_MAX - 2 * layout.alignment)
    throw std::invalid_argument("host range of " + std::to_string(bytes) +
                                " bytes cannot be mapped");
  layout.mappedBytes = (bytes + layout.alignment - 1) / layout.alignment * layout.alignment;
  layout.reservedBytes =
      layout.mappedBytes + (layout.alignment > pages.base ? layout.alignment : 0);
  return layout;
}

}  // namespace memsamples
