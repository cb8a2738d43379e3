// The NUMA host-memory library of sample 04: topology, binding policy, the bound range and the
// placement check. No CUDA call in here (see numa_binding.hpp).
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

// "Invalid argument (EINVAL)": the text and the name, because the name is what people search for.
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

std::string nodeText(int node) {
  return "node " + std::to_string(node);
}

}  // namespace

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

const char* nodeSourceName(NodeSource source) {
  switch (source) {
    case NodeSource::Sysfs:
      return "sysfs";
    case NodeSource::CudaAttribute:
      return "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID";
    case NodeSource::Both:
      return "both sources";
    case NodeSource::None:
      break;
  }
  return "none";
}

HostNumaNode findNearestHostNode(int attributeNode, std::string_view pciBusId,
                                 const NodeMemoryQuery& nodeMemory, const std::string& sysfsRoot) {
  HostNumaNode result;
  result.attributeNode = std::max(-1, attributeNode);
  result.sysfs = readPciNumaNode(sysfsRoot, pciBusId);
  if (!result.sysfs.problem.empty())
    result.notes.push_back("sysfs: " + result.sysfs.problem);

  const auto valueText = [](int node) {
    return node < 0 ? std::string("-1 (unknown)") : std::to_string(node);
  };
  if (result.attributeNode != result.sysfs.node) {
    result.sourcesDisagree = true;
    result.notes.push_back("the sources disagree: CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID says " +
                           valueText(result.attributeNode) + ", sysfs says " +
                           valueText(result.sysfs.node));
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

  for (const Candidate& candidate : candidates) {
    const std::string who =
        nodeText(candidate.node) + " (from " + nodeSourceName(candidate.source) + ")";
    NodeMemory memory;
    memory.detail = "no memory query was given";
    if (nodeMemory)
      memory = nodeMemory(candidate.node);
    if (memory.status == NodeMemory::Status::DoesNotExist) {
      result.notes.push_back(who + " rejected: it does not exist (" + memory.detail + ")");
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

NumaFacts queryNumaFacts(int node) {
  NumaFacts facts;
  facts.available = numaPolicyCallsAvailable();
  if (facts.available)
    facts.maxNode = numa_max_node();
  facts.target = libnumaNodeMemory()(node);
  return facts;
}

BindDecision chooseMbindMode(const BindPolicy& policy, int node, std::size_t bytes,
                             const NumaFacts& facts) {
  BindDecision decision;
  if (!policy.bind) {
    decision.unboundReason = "binding was not requested";
    return decision;
  }
  std::string problem;
  if (!facts.available) {
    problem =
        "NUMA is not available (no NUMA support in the kernel, or the memory-policy system calls "
        "are refused, e.g. by Docker's default seccomp profile without CAP_SYS_NICE)";
  } else if (node < 0) {
    problem = "no host NUMA node is known for this GPU";
  } else if (facts.target.status == NodeMemory::Status::DoesNotExist) {
    problem = nodeText(node) + " does not exist";
    if (!facts.target.detail.empty())
      problem += " (" + facts.target.detail + ")";
  } else if (facts.target.status == NodeMemory::Status::Present && facts.target.totalBytes == 0) {
    problem = nodeText(node) + " has no memory";
  }
  if (!problem.empty()) {
    if (policy.strict) {
      decision.error = "cannot bind " + formatBytes(bytes) + " strictly: " + problem;
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

std::vector<int> madviseAdvice(std::size_t bytes) {
  std::vector<int> advice;
  if (bytes >= kHugePageBytes)
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

PagePlacement pagesPerNode(const void* address, std::size_t bytes) {
  PagePlacement placement;
  const std::size_t page = pageSize();
  placement.pageBytes = page;
  placement.method = "move_pages";
  if (address == nullptr || bytes == 0)
    return placement;
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(address) & ~(page - 1);
  const std::uintptr_t end =
      (reinterpret_cast<std::uintptr_t>(address) + bytes + page - 1) & ~(page - 1);
  const std::size_t count = (end - begin) / page;
  const auto pageAt = [&](std::size_t index) {
    return reinterpret_cast<void*>(begin + index * page);
  };
  const auto tally = [&](int status) {
    if (status >= 0) {
      ++placement.pagesPerNode[status];
    } else if (status == -ENOENT) {
      ++placement.notPresent;
    } else {
      if (placement.unreadable++ == 0)
        placement.firstUnreadableError = -status;
    }
  };
  placement.pages = count;

  // move_pages with nodes == nullptr moves nothing: it fills status[] with each page's node.
  constexpr std::size_t kBatch = 16384;
  std::vector<void*> pages(std::min(count, kBatch));
  std::vector<int> status(pages.size());
  int moveError = 0;
  for (std::size_t first = 0; first < count && moveError == 0; first += kBatch) {
    const std::size_t n = std::min(kBatch, count - first);
    for (std::size_t i = 0; i < n; ++i)
      pages[i] = pageAt(first + i);
    if (move_pages(0, n, pages.data(), nullptr, status.data(), 0) != 0) {
      moveError = errno;
      break;
    }
    for (std::size_t i = 0; i < n; ++i)
      tally(status[i]);
  }
  if (moveError == 0)
    return placement;

  // Fallback for kernels or filters that refuse move_pages. Caution: asking for the node of an
  // address faults the page in, so the answer is only meaningful after first touch.
  placement = PagePlacement{};
  placement.pageBytes = page;
  placement.pages = count;
  placement.method = "get_mempolicy";
  for (std::size_t i = 0; i < count; ++i) {
    int node = -1;
    if (get_mempolicy(&node, nullptr, 0, pageAt(i), MPOL_F_NODE | MPOL_F_ADDR) != 0) {
      const int policyError = errno;
      placement.pagesPerNode.clear();
      placement.notPresent = placement.unreadable = 0;
      placement.error =
          "move_pages failed: " + errnoText(moveError) +
          "; get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) failed: " + errnoText(policyError);
      return placement;
    }
    tally(node);
  }
  return placement;
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

// ------------------------------------------------------------------------------ the bound range

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

NumaBoundHostRange::NumaBoundHostRange(std::size_t bytes, int node, const BindPolicy& policy,
                                       const WarningSink& warn)
    : bytes_(bytes), node_(node), policy_(policy) {
  if (bytes == 0)
    throw std::invalid_argument("NumaBoundHostRange: 0 bytes requested");
  const auto say = [&warn](const std::string& text) {
    if (warn)
      warn(text);
  };

  // 1. Decide before anything exists, so that a refusal leaves nothing behind.
  const NumaFacts facts = policy.bind ? queryNumaFacts(node) : NumaFacts{};
  const BindDecision decision = chooseMbindMode(policy, node, bytes, facts);
  if (!decision.error.empty())
    throw NumaBindError(decision.error);

  // 2. Map. Ranges from 2 MiB are 2 MiB aligned and sized (over-map, then trim both ends) so
  // that transparent huge pages can back all of them; mmap alone only promises 4 KiB alignment.
  const std::size_t page = pageSize();
  const std::size_t alignment = bytes >= kHugePageBytes ? kHugePageBytes : page;
  if (bytes > SIZE_MAX - 2 * alignment) {
    throw std::invalid_argument("NumaBoundHostRange: " + std::to_string(bytes) +
                                " bytes cannot be mapped");
  }
  mappedBytes_ = (bytes + alignment - 1) / alignment * alignment;
  const std::size_t reserved = mappedBytes_ + (alignment > page ? alignment : 0);
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
    if (decision.callMbind) {
      constexpr int kBitsPerWord = static_cast<int>(sizeof(unsigned long) * CHAR_BIT);
      std::vector<unsigned long> mask(static_cast<std::size_t>(node / kBitsPerWord) + 1, 0);
      mask[static_cast<std::size_t>(node / kBitsPerWord)] |= 1UL << (node % kBitsPerWord);
      // maxnode is the mask's width in bits + 1: the kernel drops one bit (libnuma passes the
      // same value).
      const unsigned long maxNode = mask.size() * kBitsPerWord + 1;
      if (mbind(address_, mappedBytes_, decision.mode, mask.data(), maxNode, 0) == 0) {
        state_ = BindState::Bound;
        mode_ = decision.mode;
        if (!decision.warning.empty())
          say(decision.warning);
      } else {
        const MbindFailure failure = classifyMbindFailure(errno, policy, node);
        if (failure.fatal)
          throw NumaBindError(failure.message);
        state_ = failure.blockedBySeccomp ? BindState::BlockedBySeccomp : BindState::FellBack;
        unboundReason_ = failure.message;
        say(failure.message);
      }
    } else {
      state_ = policy.bind ? BindState::FellBack : BindState::NotRequested;
      unboundReason_ = decision.unboundReason;
      if (!decision.warning.empty())
        say(decision.warning);
    }

    // 4. Advice: one call per advice value (they are numbers, not flags).
    for (const int advice : madviseAdvice(bytes)) {
      if (madvise(address_, mappedBytes_, advice) != 0) {
        say("madvise(" + adviceName(advice) + ") failed: " + errnoText(errno) +
            "; continuing without it");
        continue;
      }
      if (advice == MADV_HUGEPAGE)
        hugePagesAdvised_ = true;
      if (advice == MADV_DONTFORK)
        dontForkAdvised_ = true;
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
      state_(other.state_),
      mode_(other.mode_),
      unboundReason_(std::move(other.unboundReason_)),
      hugePagesAdvised_(other.hugePagesAdvised_),
      dontForkAdvised_(other.dontForkAdvised_) {}

NumaBoundHostRange& NumaBoundHostRange::operator=(NumaBoundHostRange&& other) noexcept {
  if (this != &other) {
    // This range is unmapped now, not whenever @p other happens to be destroyed.
    release();
    address_ = std::exchange(other.address_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mappedBytes_ = std::exchange(other.mappedBytes_, 0);
    node_ = other.node_;
    policy_ = other.policy_;
    state_ = other.state_;
    mode_ = other.mode_;
    unboundReason_ = std::move(other.unboundReason_);
    hugePagesAdvised_ = other.hugePagesAdvised_;
    dontForkAdvised_ = other.dontForkAdvised_;
  }
  return *this;
}

void NumaBoundHostRange::release() noexcept {
  // Unmapping also drops the range's memory policy: it belongs to the mapping, not to the
  // addresses, so a later mapping at the same place starts unbound.
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
  const PagePlacement where = placement();
  // A successful MPOL_BIND is the kernel's own guarantee; only an unverifiable range that was
  // never bound (mbind blocked) has to be refused.
  if (!where.known() && state_ == BindState::Bound)
    return;
  const std::string problem = strictPlacementProblem(where, node_);
  if (!problem.empty()) {
    throw NumaBindError("strict binding to " + nodeText(node_) + " not honoured (" +
                        bindStateName(state_) + "): " + problem);
  }
}

PagePlacement NumaBoundHostRange::placement() const {
  return pagesPerNode(address_, mappedBytes_);
}

std::string NumaBoundHostRange::describe() const {
  std::string text = formatBytes(bytes_) + " (mapped " + formatBytes(mappedBytes_) + ") for " +
                     nodeText(node_) + ", " + bindStateName(state_);
  if (state_ == BindState::Bound)
    text += " with " + describeMbindMode(mode_);
  text += "; advice:";
  if (hugePagesAdvised_)
    text += " MADV_HUGEPAGE";
  if (dontForkAdvised_)
    text += " MADV_DONTFORK";
  if (!hugePagesAdvised_ && !dontForkAdvised_)
    text += " none";
  return text;
}

}  // namespace memsamples::numa
