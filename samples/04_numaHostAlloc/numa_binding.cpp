/**
 * @file numa_binding.cpp
 * @brief The node, the mode, what an errno means and the placement report (numa_binding.hpp).
 *        No CUDA call in here.
 */
#include "numa_binding.hpp"

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <ostream>
#include <utility>

namespace memsamples::numa {

namespace {

// [decision-table]
// What each situation comes to under the soft policy (MPOL_PREFERRED, the default) and under
// --strict (MPOL_BIND): the state the range is left in, whether the situation is an error
// instead (nothing is bound or mapped then), and the words of its one warning or error, "%"
// standing for the problem and "#" for the size. chooseMbindMode() tries the first three in
// order before anything exists; classifyMbindFailure() picks one of the last two after mbind.
enum Situation { kNotRequested, kNodeUnusable, kShortOfMemory, kRefusedByFilter, kMbindFailed };
const BindAnswer kDecisions[][2] = {
    // --no-bind: no mbind and no warning.
    {{BindState::NotRequested, false, ""}, {BindState::NotRequested, false, ""}},
    // NUMA unavailable, no node known, or a node that does not exist, has no memory or is GPU
    // memory (whyNodeCannotBeBound): there is nothing to bind to.
    {{BindState::FellBack, false,
      "host memory not bound: %; its pages will land wherever they are first touched"},
     {BindState::FellBack, true, "cannot bind # strictly: %"}},
    // Less free memory than requested: mbind cannot check capacity for pages that do not exist
    // yet, so under MPOL_BIND the OOM killer, not an error code, would end the program later.
    {{BindState::Bound, false,
      "%; binding with MPOL_PREFERRED anyway, the pages that do not fit will come from other "
      "nodes"},
     {BindState::FellBack, true, "cannot bind strictly: %"}},
    // mbind refused with EPERM, a seccomp filter's answer (classifyMbindFailure): the memory
    // stays usable, strict or not, and a strict range proves its placement at first touch.
    {{BindState::BlockedBySeccomp, false, "%; the memory stays unbound"},
     {BindState::BlockedBySeccomp, false,
      "%; the memory stays unbound, and every page is checked after first touch"}},
    // mbind failed with any other errno: the kernel refused this binding.
    {{BindState::FellBack, false, "%; the memory stays unbound"}, {BindState::FellBack, true, "%"}},
};

// The decision table's answer for @p situation under @p policy, its words filled in.
BindAnswer decide(Situation situation, const BindPolicy& policy, const std::string& problem,
                  std::size_t bytes = 0) {
  const BindAnswer& row = kDecisions[situation][policy.strict ? 1 : 0];
  BindAnswer answer{row.state, row.fatal, {}};
  for (const char at : row.message)
    answer.message += at == '%' ? problem : at == '#' ? formatBytes(bytes) : std::string(1, at);
  return answer;
}
// [decision-table]

std::string nodeText(int node) {
  return "node " + std::to_string(node);
}

// What one of the lesson's looks found: move_pages' answer, or the get_mempolicy fallback.
PagePlacement placementOf(const std::vector<void*>& pages, const PageNodes& answer) {
  return answer.error == 0 ? placementFromStatus(answer.status)
                           : placementFromPolicyQueries(pages, answer.error);
}

}  // namespace

std::string nodeValueText(int node) {
  return node < 0 ? std::string("-1 (unknown)") : std::to_string(node);
}

void requireHostRegister(int ordinal, int hostRegisterSupported) {
  if (hostRegisterSupported == 0)
    throw WaivedError("device " + std::to_string(ordinal) +
                      " cannot register host memory (CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED"
                      " = 0), which the mbind path and the nearest-vs-remote table need");
}

// -------------------------------------------------------------------------------------- the node

bool numaPolicyCallsAvailable() {
  // libnuma's own rule: after numa_available() fails, no other libnuma function may be used.
  if (numa_available() < 0)
    return false;
  // What newer libnuma asks itself: a filter that refuses the policy calls (EPERM) makes them as
  // unusable as a kernel without NUMA (ENOSYS, which numa_available() caught).
  errno = 0;
  return !(get_mempolicy(nullptr, nullptr, 0, nullptr, 0) != 0 && errno == EPERM);
}

NodeMemoryQuery libnumaNodeMemory() {
  return [](int node) {
    NodeMemory memory;
    if (!numaPolicyCallsAvailable()) {
      memory.detail = "NUMA is not available (see numaPolicyCallsAvailable)";
      return memory;
    }
    memory.status = NodeMemory::Status::DoesNotExist;
    long long freeBytes = 0;
    if (node < 0 || node > numa_max_node()) {
      memory.detail = "numa_max_node() is " + std::to_string(numa_max_node());
      return memory;
    }
    const long long totalBytes = numa_node_size64(node, &freeBytes);
    if (totalBytes < 0) {
      // Node numbers may have holes (nodes 0 and 2 only): such a node has no meminfo file.
      memory.detail = "numa_node_size64() cannot read it: the node is not online";
      return memory;
    }
    memory.status = NodeMemory::Status::Present;
    memory.totalBytes = static_cast<std::uint64_t>(totalBytes);
    memory.freeBytes = static_cast<std::uint64_t>(std::max(0LL, freeBytes));
    return memory;
  };
}

NodeQueries libnumaNodes() {
  // Without the policy calls (a seccomp filter refusing get_mempolicy, which libnuma needs) the
  // same facts come from sysfs: the nearest node still matters to cuMemCreate(HOST_NUMA).
  if (!numaPolicyCallsAvailable())
    return sysfsNodes("/sys");
  NodeQueries queries;
  queries.memory = libnumaNodeMemory();
  for (int node = 0; node <= numa_max_node(); ++node)
    queries.nodes.push_back(node);
  queries.distance = [](int from, int to) { return numa_distance(from, to); };
  return queries;
}

const char* nodeSourceName(NodeSource source) {
  static const char* const kNames[] = {"none", "sysfs", "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID",
                                       "both sources", "closest node with memory (numa_distance)"};
  return kNames[static_cast<int>(source)];
}

HostNumaNode findNearestHostNode(int attributeNode, std::string_view pciBusId,
                                 const NodeQueries& nodes, const std::string& sysfsRoot) {
  HostNumaNode result;
  result.attributeNode = std::max(-1, attributeNode);
  result.sysfs = readPciNumaNode(sysfsRoot, pciBusId);
  if (!result.sysfs.problem.empty())
    result.notes.push_back("sysfs: " + result.sysfs.problem);
  result.sourcesDisagree = result.attributeNode != result.sysfs.node;
  if (result.sourcesDisagree)
    result.notes.push_back("the sources disagree: CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID says " +
                           nodeValueText(result.attributeNode) + ", sysfs says " +
                           nodeValueText(result.sysfs.node));
  // Sysfs first (the firmware's proximity domain), then the driver's answer where it differs;
  // -1 (unknown) is no candidate.
  const std::pair<int, NodeSource> candidates[] = {
      {result.sysfs.node, NodeSource::Sysfs},
      {result.sourcesDisagree ? result.attributeNode : -1, NodeSource::CudaAttribute}};
  int existing = -1;  // the first candidate that exists but holds no host memory
  for (const auto& [node, source] : candidates) {
    if (node < 0)
      continue;
    const std::string who = nodeText(node) + " (from " + nodeSourceName(source) + ")";
    const NodeMemory memory = nodes.hostMemory(node);
    std::string rejected;
    if (memory.status == NodeMemory::Status::DoesNotExist)
      rejected = "it does not exist (" + memory.detail + ")";
    else if (memory.status == NodeMemory::Status::DeviceMemory)
      rejected = "it is GPU memory, " + memory.detail;
    else if (memory.status == NodeMemory::Status::Present && memory.totalBytes == 0)
      rejected = "it has no memory";
    if (existing < 0 && memory.status != NodeMemory::Status::DoesNotExist)
      existing = node;
    if (!rejected.empty()) {
      result.notes.push_back(who + " rejected: " + rejected);
      continue;
    }
    if (memory.status == NodeMemory::Status::Unknown)
      result.notes.push_back(who + ": its memory could not be checked (" + memory.detail + ")");
    result.node = node;
    result.source = result.attributeNode == result.sysfs.node ? NodeSource::Both : source;
    return result;
  }
  // A GPU next to a node without host memory: that node's CPUs use the closest node's memory.
  result.node = existing >= 0 ? closestHostNodeWithMemory(existing, nodes) : -1;
  if (result.node < 0) {
    result.notes.push_back("no usable host NUMA node for this GPU");
    return result;
  }
  result.source = NodeSource::Closest;
  const int distance = nodes.distance ? nodes.distance(existing, result.node) : 0;
  result.notes.push_back(nodeText(result.node) + " is the closest node with memory to " +
                         nodeText(existing) + " (numa_distance " +
                         (distance > 0 ? std::to_string(distance) : "unknown") + ")");
  return result;
}

std::string nodeRowLabel(int node, int target, int nearest, bool targetFromOption) {
  if (node != target)
    return node == nearest ? "   <- nearest" : "";
  if (!targetFromOption)
    return "   <- nearest, the target";
  return node == nearest ? "   <- --node target, also the nearest" : "   <- --node target";
}

HostNumaVmmNode hostNumaVmmNode(int attributeNode, int target, int nearest,
                                const NodeQueries& nodes) {
  HostNumaVmmNode choice;
  if (attributeNode < 0) {
    choice.node = hostNumaLocationId(attributeNode);
    if (choice.node != target)
      choice.reason = "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID is -1, the driver sees no NUMA: id " +
                      std::to_string(choice.node) + ", as cuda.h asks";
    return choice;
  }
  choice.node = target;
  if (nodes.holdsHostMemory(target))
    return choice;
  const std::string unusable =
      target >= 0 ? nodeText(target) + " holds no host memory" : std::string("no target node");
  choice = {nearest, unusable + ": the nearest node"};
  if (nodes.holdsHostMemory(nearest))
    return choice;
  choice = {closestHostNodeWithMemory(target >= 0 ? target : nearest, nodes),
            unusable + ": the closest node with memory"};
  if (choice.node < 0)
    choice = {0, unusable + " and no node is known: id 0, as cuda.h asks without NUMA"};
  return choice;
}

// -------------------------------------------------------------------------------------- the mode

std::string describeMbindMode(int mode) {
  static const std::pair<int, const char*> kModes[] = {{MPOL_PREFERRED, "MPOL_PREFERRED"},
                                                       {MPOL_BIND, "MPOL_BIND"},
                                                       {MPOL_INTERLEAVE, "MPOL_INTERLEAVE"}};
  if (mode == 0)
    return "none";
  const int base = mode & ~kMpolStaticNodes;
  std::string text = "mode " + std::to_string(base);
  for (const auto& [value, name] : kModes)
    if (value == base)
      text = name;
  return text + ((mode & kMpolStaticNodes) ? " | MPOL_F_STATIC_NODES" : "");
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
  const NodeMemory& target = facts.target;
  if (!facts.available)
    return "NUMA is not available (no NUMA support in the kernel, or the memory-policy system "
           "calls are refused, e.g. by Docker's default seccomp profile without CAP_SYS_NICE)";
  if (node < 0)
    return "no host NUMA node is known for this GPU";
  if (target.status == NodeMemory::Status::DoesNotExist)
    return nodeText(node) + " does not exist" +
           (target.detail.empty() ? "" : " (" + target.detail + ")");
  if (target.status == NodeMemory::Status::Present && target.totalBytes == 0)
    return nodeText(node) + " has no memory";
  if (target.status == NodeMemory::Status::DeviceMemory)
    return nodeText(node) + " is GPU memory, not host memory (" + target.detail + ")";
  return {};
}

std::string strictRefusal(std::size_t bytes, const std::string& problem) {
  return decide(kNodeUnusable, BindPolicy{true, true}, problem, bytes).message;
}

// [choose-mode]
BindDecision chooseMbindMode(const BindPolicy& policy, int node, std::size_t bytes,
                             const NumaFacts& facts) {
  BindDecision decision;
  decision.policy = policy;
  decision.node = node;
  // The first situation of the decision table that applies; where none does, bind.
  Situation situation = policy.bind ? kNodeUnusable : kNotRequested;
  std::string problem =
      policy.bind ? whyNodeCannotBeBound(node, facts) : "binding was not requested";
  if (problem.empty() && facts.target.status == NodeMemory::Status::Present &&
      facts.target.freeBytes < bytes) {
    situation = kShortOfMemory;
    problem = nodeText(node) + " has " + formatBytes(facts.target.freeBytes) +
              " free, less than the " + formatBytes(bytes) + " requested";
  }
  const BindAnswer answer = problem.empty() ? BindAnswer{BindState::Bound, false, {}}
                                            : decide(situation, policy, problem, bytes);
  if (answer.fatal)
    decision.error = answer.message;
  else
    decision.warning = answer.message;
  decision.callMbind = answer.state == BindState::Bound;
  if (decision.callMbind)
    decision.mode = kMpolStaticNodes | (policy.strict ? MPOL_BIND : MPOL_PREFERRED);
  else if (!answer.fatal)
    decision.unboundReason = problem;
  return decision;
}
// [choose-mode]

NodeMask nodeMask(int node) {
  if (node < 0)
    throw std::invalid_argument("nodeMask: node " + std::to_string(node) + " is negative");
  constexpr int kBitsPerWord = static_cast<int>(sizeof(unsigned long) * CHAR_BIT);
  NodeMask mask;
  mask.words.assign(static_cast<std::size_t>(node / kBitsPerWord) + 1, 0);
  mask.words.back() |= 1UL << (node % kBitsPerWord);
  // The kernel reads maxnode - 1 bits (an old off-by-one kept); libnuma passes width + 1 too.
  mask.maxNode = mask.words.size() * kBitsPerWord + 1;
  return mask;
}

std::uint64_t sizeHostVectors(const std::optional<std::uint64_t>& requested,
                              std::uint64_t defaultBytes, int vectors, const BindPolicy& policy,
                              long long node) {
  if (!policy.bind && policy.strict)
    throw UsageError("--strict and --no-bind contradict each other");
  const std::uint64_t bytes = fitHostMemory(requested, defaultBytes, vectors, sizeof(float));
  if (!policy.strict || node < 0)
    return bytes;
  const int target = static_cast<int>(node);
  const std::string why = whyNodeCannotBeBound(target, queryNumaFacts(target));
  const std::uint64_t hostBytes = vectors * vectorStride(bytes, systemPageSizes().base);
  if (!why.empty())
    throw NumaBindError(strictRefusal(hostBytes, why));
  return bytes;
}

BindPlan planBinding(const BindPolicy& policy, int node, std::size_t bytes,
                     const NodeQueries& nodes, const PageSizes& pages) {
  BindPlan plan;
  static_cast<BindDecision&>(plan) =
      chooseMbindMode(policy, node, bytes, policy.bind ? queryNumaFacts(node, nodes) : NumaFacts{});
  if (!plan.error.empty())
    throw NumaBindError(plan.error);
  plan.bytes = bytes;
  plan.layout = hostRangeLayout(bytes, pages);
  plan.pageBytes = pages.base;
  if (plan.callMbind)
    plan.mask = nodeMask(node);
  return plan;
}

// ------------------------------------------------------------------------ what an errno means

// [errno-meaning]
BindAnswer classifyMbindFailure(int error, const BindPolicy& policy, int node) {
  // What an errno means: EPERM is a filter's answer (Docker's seccomp profile gives it); the
  // kernel gives it only to MPOL_MF_MOVE_ALL without CAP_SYS_NICE, which is never asked here.
  if (error == EPERM)
    return decide(
        kRefusedByFilter, policy,
        "mbind to " + nodeText(node) + " was refused with EPERM (a seccomp filter blocks it)");
  return decide(kMbindFailed, policy,
                "mbind to " + nodeText(node) + " failed: " + errnoText(error));
}
// [errno-meaning]

const char* bindStateName(BindState state) {
  static const char* const kNames[] = {"bound", "not requested", "fell back (unbound)",
                                       "blocked by seccomp (unbound)"};
  return kNames[static_cast<int>(state)];
}

BindOutcome settleBinding(const BindDecision& decision, const CallErrors& errors,
                          const WarningSink& warn) {
  BindOutcome outcome;
  std::vector<std::string> warnings = {decision.warning};
  outcome.state = decision.policy.bind ? BindState::FellBack : BindState::NotRequested;
  outcome.unboundReason = decision.unboundReason;
  if (decision.callMbind && errors.mbind == 0) {
    outcome.state = BindState::Bound;
    outcome.mode = decision.mode;
  } else if (decision.callMbind) {
    // A failed mbind's one warning replaces the decision's: it is the one that matters.
    const BindAnswer failure = classifyMbindFailure(errors.mbind, decision.policy, decision.node);
    if (failure.fatal)
      throw NumaBindError(failure.message);
    outcome.state = failure.state;
    outcome.unboundReason = failure.message;
    warnings = {failure.message};
  }
  // Refused advice costs speed, not correctness: a warning, and the range goes without it.
  outcome.hugePagesAdvised = errors.hugePage == 0;
  outcome.dontForkAdvised = errors.dontFork == 0;
  if (errors.hugePage > 0)
    warnings.push_back(adviceFailure(MADV_HUGEPAGE, errors.hugePage));
  if (errors.dontFork > 0)
    warnings.push_back(adviceFailure(MADV_DONTFORK, errors.dontFork));
  for (const std::string& text : warnings) {
    if (!text.empty() && warn)
      warn(text);
  }
  return outcome;
}

std::string describeBinding(std::size_t bytes, std::size_t mappedBytes, int node,
                            const BindOutcome& outcome) {
  std::string text = formatBytes(bytes) + " (mapped " + formatBytes(mappedBytes) + ") for " +
                     nodeText(node) + ", " + bindStateName(outcome.state);
  if (outcome.state == BindState::Bound)
    text += " with " + describeMbindMode(outcome.mode);
  std::string advice = outcome.hugePagesAdvised ? " MADV_HUGEPAGE" : "";
  advice += outcome.dontForkAdvised ? " MADV_DONTFORK" : "";
  return text + "; advice:" + (advice.empty() ? " none" : advice);
}

std::vector<int> madviseAdvice(std::size_t bytes, std::size_t hugePageBytes) {
  std::vector<int> advice;
  if (hugePageBytes > 0 && bytes >= hugePageBytes)
    advice.push_back(MADV_HUGEPAGE);
  advice.push_back(MADV_DONTFORK);
  return advice;
}

std::string adviceName(int advice) {
  if (advice == MADV_HUGEPAGE || advice == MADV_DONTFORK)
    return advice == MADV_HUGEPAGE ? "MADV_HUGEPAGE" : "MADV_DONTFORK";
  return "advice " + std::to_string(advice);
}

std::string adviceFailure(int advice, int error) {
  return "madvise(" + adviceName(advice) + ") failed: " + errnoText(error) +
         "; continuing without it";
}

// ------------------------------------------------------------------------ where the pages landed

std::string strictPlacementProblem(const PagePlacement& placement, int node) {
  const std::string of = " of " + std::to_string(placement.pages) + " pages";
  if (!placement.known())
    return "the placement could not be checked: " + placement.error;
  if (placement.notPresent > 0)
    return std::to_string(placement.notPresent) + of + " are not present (not touched yet)";
  if (placement.unreadable > 0)
    return std::to_string(placement.unreadable) + of + " could not be located";
  if (placement.pages > 0 && !placement.allOn(node))
    return "not every page is on " + nodeText(node) + ": " + placement.summary();
  return {};
}

std::string strictBindingProblem(const PagePlacement& placement, int node, BindState state) {
  const std::string problem = strictPlacementProblem(placement, node);
  if (problem.empty() || (!placement.known() && state == BindState::Bound))
    return {};
  return "strict binding to " + nodeText(node) + " not honoured (" + bindStateName(state) +
         "): " + problem;
}

PlacementReport reportPlacement(const BindPlan& plan, const BindOutcome& binding,
                                const PlacementLog& log, std::ostream& out) {
  out << "  range: " << describeBinding(plan.bytes, plan.layout.mappedBytes, plan.node, binding)
      << '\n';
  if (binding.state != BindState::Bound)
    out << "  unbound: " << binding.unboundReason << '\n';
  // A look whose move_pages failed can only be made again now, with get_mempolicy, after the
  // pages were touched and pinned: the look before the touch is then lost, and the one after
  // it describes the pages as they are now.
  if (log.beforeTouch.error != 0)
    out << "  before first touch: not readable: move_pages failed ("
        << errnoText(log.beforeTouch.error) << "); get_mempolicy could only be asked later\n";
  else
    out << "  before first touch: " << placementOf(log.pages, log.beforeTouch).summary() << '\n';
  const PagePlacement touched = placementOf(log.pages, log.touched);
  out << "  placement after first touch: " << touched.summary()
      << (log.touched.error != 0 ? " (move_pages failed: asked after cuMemHostRegister)" : "")
      << '\n';
  const std::string broken =
      plan.policy.strict ? strictBindingProblem(touched, plan.node, binding.state) : "";
  if (!broken.empty())
    throw NumaBindError(broken);
  const PagePlacement pinned = placementOf(log.pages, log.pinned);
  out << "  placement after cuMemHostRegister: " << pinned.summary() << '\n';
  PlacementReport report;
  const std::string pinning = plan.policy.strict ? strictPlacementProblem(pinned, plan.node) : "";
  report.ok = pinning.empty();
  if (!report.ok)
    out << "  strict binding broken by pinning: " << pinning << '\n';
  report.json.set("state", bindStateName(binding.state))
      .set("mode", describeMbindMode(binding.mode))
      .set("hugePageAdvice", binding.hugePagesAdvised)
      .set("dontForkAdvice", binding.dontForkAdvised)
      .set("fractionOnTarget", pinned.fractionOn(plan.node))
      .set("placement", pinned.summary());
  return report;
}

// -------------------------------------------------------------------------------- the bound range

NumaBoundHostRange::NumaBoundHostRange(std::size_t bytes, int node, const BindPolicy& policy,
                                       const WarningSink& warn, const PageSizes& pages)
    : bytes_(bytes), node_(node), policy_(policy) {
  if (bytes == 0)
    throw std::invalid_argument("NumaBoundHostRange: 0 bytes requested");
  // Decided before anything exists, so that a refusal leaves nothing behind.
  const BindPlan plan = planBinding(policy, node, bytes, libnumaNodes(), pages);
  // Over-map by one alignment, then trim both ends: mmap promises a base page only.
  const std::size_t reserved = plan.layout.reservedBytes;
  void* raw = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    throw NumaBindError("mmap of " + formatBytes(reserved) + " failed: " + errnoText(errno));
  const std::size_t alignment = plan.layout.alignment;
  const std::uintptr_t rawStart = reinterpret_cast<std::uintptr_t>(raw);
  const std::size_t head = (alignment - rawStart % alignment) % alignment;
  const std::size_t mapped = plan.layout.mappedBytes;
  if (head > 0)
    munmap(raw, head);
  if (reserved > head + mapped)
    munmap(static_cast<char*>(raw) + head + mapped, reserved - head - mapped);
  // From here on the member unmaps the range, also when settleBinding() throws.
  mapping_ = OwnedMapping(static_cast<char*>(raw) + head, mapped);
  // Bound before any page is touched: no page exists yet, so nothing has to move.
  CallErrors errors;
  errors.hugePage = kNotAsked;
  if (plan.callMbind &&
      mbind(data(), mapped, plan.mode, plan.mask.words.data(), plan.mask.maxNode, 0) != 0)
    errors.mbind = errno;
  // One call per advice: they are numbers, not flags.
  for (const int advice : madviseAdvice(bytes, pages.huge)) {
    const int error = madvise(data(), mapped, advice) == 0 ? 0 : errno;
    if (advice == MADV_HUGEPAGE)
      errors.hugePage = error;
    else
      errors.dontFork = error;
  }
  outcome_ = settleBinding(plan, errors, warn);
}

void NumaBoundHostRange::firstTouch() {
  for (void* const page : pageAddresses(data(), mappedBytes()))
    *static_cast<volatile char*>(page) = 0;
  const std::string problem =
      policy_.strict && data() ? strictBindingProblem(placement(), node_, outcome_.state) : "";
  if (!problem.empty())
    throw NumaBindError(problem);
}

PagePlacement NumaBoundHostRange::placement() const {
  return pagesPerNode(data(), mappedBytes());
}

}  // namespace memsamples::numa
