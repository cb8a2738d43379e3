/**
 * @file numa_binding.cpp
 * @brief The NUMA host-memory library of sample 04: topology, binding policy, the placement
 *        check and the ready-made bound range. No CUDA call in here (see numa_binding.hpp).
 */
#include "numa_binding.hpp"

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <optional>
#include <sstream>
#include <utility>

#include "memsamples.hpp"

namespace memsamples::numa {

namespace {

std::size_t pageSize() {
  return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

std::string nodeText(int node) {
  return "node " + std::to_string(node);
}

}  // namespace

std::string errnoText(int error) {
  const char* name = nullptr;
  switch (error) {
    case EPERM:
      name = "EPERM";
      break;
    case ENOENT:
      name = "ENOENT";
      break;
    case EIO:
      name = "EIO";
      break;
    case ENOMEM:
      name = "ENOMEM";
      break;
    case EACCES:
      name = "EACCES";
      break;
    case EFAULT:
      name = "EFAULT";
      break;
    case EINVAL:
      name = "EINVAL";
      break;
    case ENOSYS:
      name = "ENOSYS";
      break;
    case EXDEV:
      name = "EXDEV";
      break;
    default:
      break;
  }
  return std::string(std::strerror(error)) + " (" +
         (name ? std::string(name) : "errno " + std::to_string(error)) + ")";
}

std::string nodeValueText(int node) {
  return node < 0 ? std::string("-1 (unknown)") : std::to_string(node);
}

// ------------------------------------------------------------------------------------ topology

bool numaPolicyCallsAvailable() {
  // libnuma's own rule: after numa_available() fails, no other libnuma function may be used.
  if (numa_available() < 0)
    return false;
  // What newer libnuma asks itself: a filter that refuses the memory-policy calls (EPERM) makes
  // them as unusable as a kernel without NUMA support (ENOSYS, which numa_available() caught).
  errno = 0;
  const long answer = get_mempolicy(nullptr, nullptr, 0, nullptr, 0);
  return !(answer != 0 && errno == EPERM);
}

NodeMemoryQuery libnumaNodeMemory() {
  return [](int node) {
    NodeMemory memory;
    if (!numaPolicyCallsAvailable()) {
      memory.detail = "NUMA is not available (see numaPolicyCallsAvailable)";
      return memory;
    }
    const int maxNode = numa_max_node();
    if (node < 0 || node > maxNode) {
      memory.status = NodeMemory::Status::DoesNotExist;
      memory.detail = "numa_max_node() is " + std::to_string(maxNode);
      return memory;
    }
    long long freeBytes = 0;
    const long long totalBytes = numa_node_size64(node, &freeBytes);
    if (totalBytes < 0) {
      // Node numbers may have holes (nodes 0 and 2 only): such a node has no meminfo file.
      memory.status = NodeMemory::Status::DoesNotExist;
      memory.detail = "numa_node_size64() cannot read it: the node is not online";
      return memory;
    }
    memory.status = NodeMemory::Status::Present;
    memory.totalBytes = static_cast<std::uint64_t>(totalBytes);
    memory.freeBytes = static_cast<std::uint64_t>(std::max(0LL, freeBytes));
    return memory;
  };
}

NodeMemoryQuery sysfsNodeMemory(std::string sysfsRoot) {
  return [root = std::move(sysfsRoot)](int node) {
    NodeMemory memory;
    if (node < 0) {
      memory.status = NodeMemory::Status::DoesNotExist;
      memory.detail = "negative node number";
      return memory;
    }
    const std::string path = root + "/devices/system/node/node" + std::to_string(node) + "/meminfo";
    std::ifstream file(path);
    if (!file) {
      memory.status = NodeMemory::Status::DoesNotExist;
      memory.detail = "cannot read " + path + ": " + std::strerror(errno);
      return memory;
    }
    // Lines read "Node 1 MemTotal:       16315156 kB".
    std::optional<std::uint64_t> totalKiB, freeKiB;
    std::string line;
    while (std::getline(file, line)) {
      for (auto [key, target] :
           {std::pair{"MemTotal:", &totalKiB}, std::pair{"MemFree:", &freeKiB}}) {
        const std::size_t at = line.find(key);
        if (at == std::string::npos)
          continue;
        std::istringstream rest(line.substr(at + std::strlen(key)));
        std::uint64_t value = 0;
        std::string unit;
        if (rest >> value >> unit && unit == "kB")
          *target = value;
      }
    }
    if (!totalKiB || !freeKiB) {
      memory.detail = path + " has no readable MemTotal and MemFree lines";
      return memory;
    }
    memory.status = NodeMemory::Status::Present;
    memory.totalBytes = *totalKiB * 1024;
    memory.freeBytes = *freeKiB * 1024;
    return memory;
  };
}

NodeMemory NodeQueries::hostMemory(int node) const {
  const auto device = deviceMemoryNodes.find(node);
  if (device != deviceMemoryNodes.end()) {
    NodeMemory gpu;
    gpu.status = NodeMemory::Status::DeviceMemory;
    gpu.detail =
        "the memory of device " + std::to_string(device->second) + " (CU_DEVICE_ATTRIBUTE_NUMA_ID)";
    return gpu;
  }
  NodeMemory unknown;
  unknown.detail = "no memory query was given";
  return memory ? memory(node) : unknown;
}

bool NodeQueries::holdsHostMemory(int node) const {
  if (node < 0)
    return false;
  const NodeMemory found = hostMemory(node);
  switch (found.status) {
    case NodeMemory::Status::Present:
      return found.totalBytes > 0;
    case NodeMemory::Status::Unknown:
      return true;  // the driver or the kernel has the last word
    case NodeMemory::Status::DoesNotExist:
    case NodeMemory::Status::DeviceMemory:
      break;
  }
  return false;
}

NodeQueries libnumaNodes() {
  // Without the policy calls (a container's seccomp filter refusing get_mempolicy, which libnuma
  // needs) the same facts come from sysfs, which needs no such call: the nearest node with memory
  // still matters to cuMemCreate(HOST_NUMA), a driver call no filter refuses.
  if (!numaPolicyCallsAvailable())
    return sysfsNodes("/sys");
  NodeQueries queries;
  queries.memory = libnumaNodeMemory();
  for (int node = 0; node <= numa_max_node(); ++node)
    queries.nodes.push_back(node);
  queries.distance = [](int from, int to) { return numa_distance(from, to); };
  return queries;
}

NodeQueries sysfsNodes(const std::string& sysfsRoot) {
  NodeQueries queries;
  queries.memory = sysfsNodeMemory(sysfsRoot);
  const std::string folder = sysfsRoot + "/devices/system/node";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    int node = -1;
    const char* digits = name.c_str() + 4;
    const auto [end, parsed] = std::from_chars(digits, name.c_str() + name.size(), node);
    if (name.rfind("node", 0) == 0 && name.size() > 4 && parsed == std::errc() && *end == '\0')
      queries.nodes.push_back(node);
  }
  std::sort(queries.nodes.begin(), queries.nodes.end());
  queries.distance = [folder, nodes = queries.nodes](int from, int to) {
    // The kernel writes one distance per existing node, in node order: position, not number.
    std::ifstream file(folder + "/node" + std::to_string(from) + "/distance");
    const auto position = std::find(nodes.begin(), nodes.end(), to);
    int value = 0;
    for (auto at = nodes.begin(); at != nodes.end() && file >> value; ++at) {
      if (at == position)
        return value;
    }
    return 0;
  };
  return queries;
}

int closestHostNodeWithMemory(int from, const NodeQueries& nodes) {
  int best = -1, bestDistance = 0;
  for (const int node : nodes.nodes) {
    const NodeMemory memory = nodes.hostMemory(node);
    if (memory.status != NodeMemory::Status::Present || memory.totalBytes == 0)
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
    const NodeMemory memory = nodes.hostMemory(node);
    if (found.size() < limit && memory.status == NodeMemory::Status::Present &&
        memory.totalBytes > 0)
      found.push_back(node);
  }
  return found;
}

const char* nodeSourceName(NodeSource source) {
  switch (source) {
    case NodeSource::Sysfs:
      return "sysfs";
    case NodeSource::CudaAttribute:
      return "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID";
    case NodeSource::Both:
      return "both sources";
    case NodeSource::Closest:
      return "closest node with memory (numa_distance)";
    case NodeSource::None:
      break;
  }
  return "none";
}

HostNumaNode findNearestHostNode(int attributeNode, std::string_view pciBusId,
                                 const NodeQueries& nodes, const std::string& sysfsRoot) {
  HostNumaNode result;
  result.attributeNode = std::max(-1, attributeNode);
  result.sysfs = readPciNumaNode(sysfsRoot, pciBusId);
  if (!result.sysfs.problem.empty())
    result.notes.push_back("sysfs: " + result.sysfs.problem);

  if (result.attributeNode != result.sysfs.node) {
    result.sourcesDisagree = true;
    result.notes.push_back("the sources disagree: CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID says " +
                           nodeValueText(result.attributeNode) + ", sysfs says " +
                           nodeValueText(result.sysfs.node));
  }

  struct Candidate {
    int node;
    NodeSource source;
  };
  std::vector<Candidate> candidates;
  if (result.sysfs.node >= 0)
    candidates.push_back({result.sysfs.node, NodeSource::Sysfs});
  if (result.attributeNode >= 0 && result.attributeNode != result.sysfs.node) {
    candidates.push_back({result.attributeNode, NodeSource::CudaAttribute});
  }

  int existing = -1;  // the first candidate that exists but holds no host memory
  for (const Candidate& candidate : candidates) {
    const std::string who =
        nodeText(candidate.node) + " (from " + nodeSourceName(candidate.source) + ")";
    const NodeMemory memory = nodes.hostMemory(candidate.node);
    if (memory.status == NodeMemory::Status::DoesNotExist) {
      result.notes.push_back(who + " rejected: it does not exist (" + memory.detail + ")");
      continue;
    }
    if (existing < 0)
      existing = candidate.node;
    if (memory.status == NodeMemory::Status::DeviceMemory) {
      result.notes.push_back(who + " rejected: it is GPU memory, " + memory.detail);
      continue;
    }
    if (memory.status == NodeMemory::Status::Present && memory.totalBytes == 0) {
      result.notes.push_back(who + " rejected: it has no memory");
      continue;
    }
    if (memory.status == NodeMemory::Status::Unknown) {
      result.notes.push_back(who + ": its memory could not be checked (" + memory.detail + ")");
    }
    result.node = candidate.node;
    result.source = result.attributeNode == result.sysfs.node ? NodeSource::Both : candidate.source;
    return result;
  }
  // The GPU sits next to a node without host memory: the memory the kernel would use for that
  // node's CPUs is the closest node's, so that is the nearest host memory.
  const int closest = existing >= 0 ? closestHostNodeWithMemory(existing, nodes) : -1;
  if (closest >= 0) {
    result.node = closest;
    result.source = NodeSource::Closest;
    const int distance = nodes.distance ? nodes.distance(existing, closest) : 0;
    result.notes.push_back(nodeText(closest) + " is the closest node with memory to " +
                           nodeText(existing) + " (numa_distance " +
                           (distance > 0 ? std::to_string(distance) : std::string("unknown")) +
                           ")");
    return result;
  }
  result.notes.push_back("no usable host NUMA node for this GPU");
  return result;
}

std::string nodeRowLabel(int node, int target, int nearest, bool targetFromOption) {
  if (node == target) {
    if (!targetFromOption)
      return "   <- nearest, the target";
    return node == nearest ? "   <- --node target, also the nearest" : "   <- --node target";
  }
  return node == nearest ? "   <- nearest" : "";
}

HostNumaVmmNode hostNumaVmmNode(int attributeNode, int target, int nearest,
                                const NodeQueries& nodes) {
  HostNumaVmmNode choice;
  if (attributeNode < 0) {
    choice.node = hostNumaLocationId(attributeNode);
    if (choice.node != target) {
      choice.reason = "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID is -1, the driver sees no NUMA: id " +
                      std::to_string(choice.node) + ", as cuda.h asks";
    }
    return choice;
  }
  if (nodes.holdsHostMemory(target)) {
    choice.node = target;
    return choice;
  }
  const std::string unusable =
      target >= 0 ? nodeText(target) + " holds no host memory" : std::string("no target node");
  if (nodes.holdsHostMemory(nearest)) {
    choice.node = nearest;
    choice.reason = unusable + ": the nearest node";
    return choice;
  }
  choice.node = closestHostNodeWithMemory(target >= 0 ? target : nearest, nodes);
  choice.reason = unusable + ": the closest node with memory";
  if (choice.node < 0) {
    choice.node = 0;
    choice.reason = unusable + " and no node is known: id 0, as cuda.h asks without NUMA";
  }
  return choice;
}

// -------------------------------------------------------------------------------------- policy

std::string describeMbindMode(int mode) {
  if (mode == 0)
    return "none";
  const int base = mode & ~kMpolStaticNodes;
  std::string text;
  switch (base) {
    case MPOL_PREFERRED:
      text = "MPOL_PREFERRED";
      break;
    case MPOL_BIND:
      text = "MPOL_BIND";
      break;
    case MPOL_INTERLEAVE:
      text = "MPOL_INTERLEAVE";
      break;
    default:
      text = "mode " + std::to_string(base);
      break;
  }
  if (mode & kMpolStaticNodes)
    text += " | MPOL_F_STATIC_NODES";
  return text;
}

NumaFacts queryNumaFacts(int node, const NodeQueries& nodes) {
  NumaFacts facts;
  facts.available = numaPolicyCallsAvailable();
  if (facts.available)
    facts.maxNode = numa_max_node();
  facts.target = nodes.hostMemory(node);
  return facts;
}

std::string whyNodeCannotBeBound(int node, const NumaFacts& facts) {
  if (!facts.available) {
    return "NUMA is not available (no NUMA support in the kernel, or the memory-policy system "
           "calls are refused, e.g. by Docker's default seccomp profile without CAP_SYS_NICE)";
  }
  if (node < 0)
    return "no host NUMA node is known for this GPU";
  if (facts.target.status == NodeMemory::Status::DoesNotExist) {
    return nodeText(node) + " does not exist" +
           (facts.target.detail.empty() ? "" : " (" + facts.target.detail + ")");
  }
  if (facts.target.status == NodeMemory::Status::Present && facts.target.totalBytes == 0)
    return nodeText(node) + " has no memory";
  if (facts.target.status == NodeMemory::Status::DeviceMemory)
    return nodeText(node) + " is GPU memory, not host memory (" + facts.target.detail + ")";
  return {};
}

std::string strictRefusal(std::size_t bytes, const std::string& problem) {
  return "cannot bind " + formatBytes(bytes) + " strictly: " + problem;
}

BindDecision chooseMbindMode(const BindPolicy& policy, int node, std::size_t bytes,
                             const NumaFacts& facts) {
  BindDecision decision;
  if (!policy.bind) {
    decision.unboundReason = "binding was not requested";
    return decision;
  }
  const std::string problem = whyNodeCannotBeBound(node, facts);
  if (!problem.empty()) {
    if (policy.strict) {
      decision.error = strictRefusal(bytes, problem);
    } else {
      decision.warning = "host memory not bound: " + problem +
                         "; its pages will land wherever they are first touched";
      decision.unboundReason = problem;
    }
    return decision;
  }
  if (facts.target.status == NodeMemory::Status::Present && facts.target.freeBytes < bytes) {
    const std::string shortage = nodeText(node) + " has " + formatBytes(facts.target.freeBytes) +
                                 " free, less than the " + formatBytes(bytes) + " requested";
    if (policy.strict) {
      // MPOL_BIND does not fail at mbind time: the page faults would run out of memory later,
      // and the OOM killer, not an error code, would end the program.
      decision.error = "cannot bind strictly: " + shortage;
      return decision;
    }
    decision.warning = shortage +
                       "; binding with MPOL_PREFERRED anyway, the pages that do not "
                       "fit will come from other nodes";
  }
  decision.callMbind = true;
  decision.mode = kMpolStaticNodes | (policy.strict ? MPOL_BIND : MPOL_PREFERRED);
  return decision;
}

MbindFailure classifyMbindFailure(int error, const BindPolicy& policy, int node) {
  MbindFailure failure;
  if (error == EPERM) {
    failure.blockedBySeccomp = true;
    failure.message = "mbind to " + nodeText(node) +
                      " was refused with EPERM (a seccomp filter blocks it); the memory stays "
                      "unbound";
    if (policy.strict)
      failure.message += ", and every page is checked after first touch";
    return failure;
  }
  failure.fatal = policy.strict;
  failure.message = "mbind to " + nodeText(node) + " failed: " + errnoText(error);
  if (!policy.strict)
    failure.message += "; the memory stays unbound";
  return failure;
}

NodeMask nodeMask(int node) {
  if (node < 0)
    throw std::invalid_argument("nodeMask: node " + std::to_string(node) + " is negative");
  constexpr int kBitsPerWord = static_cast<int>(sizeof(unsigned long) * CHAR_BIT);
  NodeMask mask;
  mask.words.assign(static_cast<std::size_t>(node / kBitsPerWord) + 1, 0);
  mask.words.back() |= 1UL << (node % kBitsPerWord);
  // The kernel reads maxnode - 1 bits (an off-by-one kept for compatibility); libnuma passes the
  // mask's width + 1 as well.
  mask.maxNode = mask.words.size() * kBitsPerWord + 1;
  return mask;
}

const char* bindStateName(BindState state) {
  switch (state) {
    case BindState::Bound:
      return "bound";
    case BindState::NotRequested:
      return "not requested";
    case BindState::FellBack:
      return "fell back (unbound)";
    case BindState::BlockedBySeccomp:
      return "blocked by seccomp (unbound)";
  }
  return "?";
}

BindOutcome settleBinding(const BindDecision& decision, int mbindError, const BindPolicy& policy,
                          int node, const WarningSink& warn) {
  BindOutcome outcome;
  std::string warning = decision.warning;
  if (!decision.callMbind) {
    outcome.state = policy.bind ? BindState::FellBack : BindState::NotRequested;
    outcome.unboundReason = decision.unboundReason;
  } else if (mbindError == 0) {
    outcome.state = BindState::Bound;
    outcome.mode = decision.mode;
  } else {
    const MbindFailure failure = classifyMbindFailure(mbindError, policy, node);
    if (failure.fatal)
      throw NumaBindError(failure.message);
    outcome.state = failure.blockedBySeccomp ? BindState::BlockedBySeccomp : BindState::FellBack;
    outcome.unboundReason = failure.message;
    warning = failure.message;
  }
  if (!warning.empty() && warn)
    warn(warning);
  return outcome;
}

std::string describeBinding(std::size_t bytes, std::size_t mappedBytes, int node,
                            const BindOutcome& outcome) {
  std::string text = formatBytes(bytes) + " (mapped " + formatBytes(mappedBytes) + ") for " +
                     nodeText(node) + ", " + bindStateName(outcome.state);
  if (outcome.state == BindState::Bound)
    text += " with " + describeMbindMode(outcome.mode);
  text += "; advice:";
  if (outcome.hugePagesAdvised)
    text += " MADV_HUGEPAGE";
  if (outcome.dontForkAdvised)
    text += " MADV_DONTFORK";
  if (!outcome.hugePagesAdvised && !outcome.dontForkAdvised)
    text += " none";
  return text;
}

std::vector<int> madviseAdvice(std::size_t bytes, std::size_t hugePageBytes) {
  std::vector<int> advice;
  if (hugePageBytes > 0 && bytes >= hugePageBytes)
    advice.push_back(MADV_HUGEPAGE);
  advice.push_back(MADV_DONTFORK);
  return advice;
}

std::string adviceName(int advice) {
  switch (advice) {
    case MADV_HUGEPAGE:
      return "MADV_HUGEPAGE";
    case MADV_DONTFORK:
      return "MADV_DONTFORK";
    default:
      return "advice " + std::to_string(advice);
  }
}

std::string adviceFailure(int advice, int error) {
  return "madvise(" + adviceName(advice) + ") failed: " + errnoText(error) +
         "; continuing without it";
}

// -------------------------------------------------------------------------------- verification

bool PagePlacement::allOn(int node) const {
  if (!known() || pages == 0)
    return false;
  const auto found = pagesPerNode.find(node);
  return found != pagesPerNode.end() && found->second == pages;
}

double PagePlacement::fractionOn(int node) const {
  if (!known() || pages == 0)
    return 0;
  const auto found = pagesPerNode.find(node);
  return found == pagesPerNode.end()
             ? 0
             : static_cast<double>(found->second) / static_cast<double>(pages);
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
  if (notPresent > 0)
    text << separator << notPresent << " not present", separator = "; ";
  if (unreadable > 0) {
    text << separator << unreadable << " unreadable (" << errnoText(firstUnreadableError) << ")";
    separator = "; ";
  }
  if (pages == 0)
    text << "no pages";
  text << " [" << formatBytes(pageBytes) << " pages, " << method << "]";
  return text.str();
}

std::vector<void*> pageAddresses(const void* address, std::size_t bytes) {
  std::vector<void*> pages;
  if (address == nullptr || bytes == 0)
    return pages;
  const std::size_t page = pageSize();
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(address) & ~(page - 1);
  const std::uintptr_t end =
      (reinterpret_cast<std::uintptr_t>(address) + bytes + page - 1) & ~(page - 1);
  pages.reserve((end - begin) / page);
  for (std::uintptr_t at = begin; at < end; at += page)
    pages.push_back(reinterpret_cast<void*>(at));
  return pages;
}

namespace {

// Adds one page's answer (a node, -ENOENT, or another negative errno) to @p placement.
void tally(PagePlacement& placement, int status) {
  if (status >= 0) {
    ++placement.pagesPerNode[status];
  } else if (status == -ENOENT) {
    ++placement.notPresent;
  } else if (placement.unreadable++ == 0) {
    placement.firstUnreadableError = -status;
  }
}

}  // namespace

PagePlacement placementFromStatus(const std::vector<int>& status) {
  PagePlacement placement;
  placement.pageBytes = pageSize();
  placement.method = "move_pages";
  placement.pages = status.size();
  for (const int answer : status)
    tally(placement, answer);
  return placement;
}

PagePlacement placementFromPolicyQueries(const std::vector<void*>& pages, int moveError) {
  PagePlacement placement;
  placement.pageBytes = pageSize();
  placement.method = "get_mempolicy";
  placement.pages = pages.size();
  for (void* const page : pages) {
    int node = -1;
    if (get_mempolicy(&node, nullptr, 0, page, MPOL_F_NODE | MPOL_F_ADDR) != 0) {
      const int policyError = errno;
      placement.pagesPerNode.clear();
      placement.notPresent = placement.unreadable = 0;
      placement.error =
          "move_pages failed: " + errnoText(moveError) +
          "; get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) failed: " + errnoText(policyError);
      return placement;
    }
    tally(placement, node);
  }
  return placement;
}

PagePlacement pagesPerNode(const void* address, std::size_t bytes) {
  std::vector<void*> pages = pageAddresses(address, bytes);
  std::vector<int> status(pages.size());
  // Batches keep one call's work bounded; with a null node list move_pages moves nothing.
  constexpr std::size_t kBatch = 16384;
  for (std::size_t first = 0; first < pages.size(); first += kBatch) {
    const std::size_t n = std::min(kBatch, pages.size() - first);
    if (move_pages(0, n, pages.data() + first, nullptr, status.data() + first, 0) != 0)
      return placementFromPolicyQueries(pages, errno);
  }
  return placementFromStatus(status);
}

std::string strictPlacementProblem(const PagePlacement& placement, int node) {
  if (!placement.known())
    return "the placement could not be checked: " + placement.error;
  if (placement.notPresent > 0) {
    return std::to_string(placement.notPresent) + " of " + std::to_string(placement.pages) +
           " pages are not present (not touched yet)";
  }
  if (placement.unreadable > 0) {
    return std::to_string(placement.unreadable) + " of " + std::to_string(placement.pages) +
           " pages could not be located";
  }
  if (placement.pages > 0 && !placement.allOn(node)) {
    return "not every page is on " + nodeText(node) + ": " + placement.summary();
  }
  return {};
}

std::string strictBindingProblem(const PagePlacement& placement, int node, BindState state) {
  if (!placement.known() && state == BindState::Bound)
    return {};
  const std::string problem = strictPlacementProblem(placement, node);
  if (problem.empty())
    return {};
  return "strict binding to " + nodeText(node) + " not honoured (" + bindStateName(state) +
         "): " + problem;
}

// ------------------------------------------------------------------------------ the bound range

OwnedMapping::~OwnedMapping() {
  // Unmapping also drops the range's memory policy: it belongs to the mapping, not to the
  // addresses, so a later mapping at the same place starts unbound.
  if (address_ != nullptr)
    munmap(address_, bytes_);
}

NumaBoundHostRange::NumaBoundHostRange(std::size_t bytes, int node, const BindPolicy& policy,
                                       const WarningSink& warn, const PageSizes& pages)
    : bytes_(bytes), node_(node), policy_(policy) {
  if (bytes == 0)
    throw std::invalid_argument("NumaBoundHostRange: 0 bytes requested");

  // 1. Decide before anything exists, so that a refusal leaves nothing behind.
  const NumaFacts facts = policy.bind ? queryNumaFacts(node) : NumaFacts{};
  const BindDecision decision = chooseMbindMode(policy, node, bytes, facts);
  if (!decision.error.empty())
    throw NumaBindError(decision.error);

  // 2. Map. Ranges from one huge page up are huge-page aligned and sized (over-map, then trim
  // both ends) so that transparent huge pages can back all of them; mmap promises a base page.
  const RangeLayout layout = hostRangeLayout(bytes, pages);
  const std::size_t alignment = layout.alignment;
  mappedBytes_ = layout.mappedBytes;
  const std::size_t reserved = layout.reservedBytes;
  void* raw = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    throw NumaBindError("mmap of " + formatBytes(reserved) + " failed: " + errnoText(errno));
  }
  const std::uintptr_t rawStart = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t start = (rawStart + alignment - 1) / alignment * alignment;
  const std::size_t head = start - rawStart;
  const std::size_t tail = reserved - head - mappedBytes_;
  if (head > 0)
    munmap(raw, head);
  if (tail > 0)
    munmap(reinterpret_cast<void*>(start + mappedBytes_), tail);
  address_ = reinterpret_cast<void*>(start);

  try {
    // 3. Bind, before any page is touched: no page exists yet, so nothing has to move.
    int mbindError = 0;
    if (decision.callMbind) {
      const NodeMask mask = nodeMask(node);
      if (mbind(address_, mappedBytes_, decision.mode, mask.words.data(), mask.maxNode, 0) != 0)
        mbindError = errno;
    }
    outcome_ = settleBinding(decision, mbindError, policy, node, warn);

    // 4. Advice: one call per advice value (they are numbers, not flags).
    for (const int advice : madviseAdvice(bytes, pages.huge)) {
      if (madvise(address_, mappedBytes_, advice) != 0) {
        if (warn)
          warn(adviceFailure(advice, errno));
        continue;
      }
      if (advice == MADV_HUGEPAGE)
        outcome_.hugePagesAdvised = true;
      if (advice == MADV_DONTFORK)
        outcome_.dontForkAdvised = true;
    }
  } catch (...) {
    release();
    throw;
  }
}

NumaBoundHostRange::~NumaBoundHostRange() {
  release();
}

NumaBoundHostRange::NumaBoundHostRange(NumaBoundHostRange&& other) noexcept
    : address_(std::exchange(other.address_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      mappedBytes_(std::exchange(other.mappedBytes_, 0)),
      node_(other.node_),
      policy_(other.policy_),
      outcome_(std::move(other.outcome_)) {}

NumaBoundHostRange& NumaBoundHostRange::operator=(NumaBoundHostRange&& other) noexcept {
  if (this != &other) {
    // This range is unmapped now, not whenever @p other happens to be destroyed.
    release();
    address_ = std::exchange(other.address_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mappedBytes_ = std::exchange(other.mappedBytes_, 0);
    node_ = other.node_;
    policy_ = other.policy_;
    outcome_ = std::move(other.outcome_);
  }
  return *this;
}

void NumaBoundHostRange::release() noexcept {
  // As for OwnedMapping: the memory policy goes with the mapping.
  if (address_ != nullptr)
    munmap(address_, mappedBytes_);
  address_ = nullptr;
}

void NumaBoundHostRange::firstTouch() {
  if (address_ == nullptr)
    return;
  const std::size_t page = pageSize();
  volatile char* bytes = static_cast<volatile char*>(address_);
  for (std::size_t offset = 0; offset < mappedBytes_; offset += page)
    bytes[offset] = 0;
  if (!policy_.strict)
    return;
  const std::string problem = strictBindingProblem(placement(), node_, outcome_.state);
  if (!problem.empty())
    throw NumaBindError(problem);
}

PagePlacement NumaBoundHostRange::placement() const {
  return pagesPerNode(address_, mappedBytes_);
}

std::string NumaBoundHostRange::describe() const {
  return describeBinding(bytes_, mappedBytes_, node_, outcome_);
}

}  // namespace memsamples::numa
