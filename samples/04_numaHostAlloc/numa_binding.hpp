/**
 * @file numa_binding.hpp
 * @brief The rules and small pieces of binding host memory to a NUMA node, for the lesson
 *        numaHostAlloc.cpp (which makes the mmap, mbind, madvise and move_pages calls itself) and
 *        a ready-made bound range, NumaBoundHostRange, for samples that reuse the technique.
 *
 * This is the CUDA-free half of the 04_numaHostAlloc sample, kept as a small library (target
 * `numaHostAlloc_logic`): it never calls the CUDA driver, so every branch is unit tested on
 * machines without a GPU, and 06_perDeviceResource serves a NumaBoundHostRange as a memory
 * resource.
 *
 * The pieces, in the order the lesson uses them:
 * 1. **Topology.** findNearestHostNode() combines the driver's CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID
 *    with the kernel's `<sysfs>/bus/pci/devices/<bdf>/numa_node`, rejects nodes that do not
 *    exist, and replaces a node without memory, or one that is GPU memory, by the closest host
 *    node with memory (NodeQueries: libnuma in a run, a fake sysfs tree in a test).
 * 2. **Policy.** chooseMbindMode() turns a BindPolicy (bind or not, strict or soft) and the
 *    system's NumaFacts into a decision: mbind with `MPOL_BIND` or `MPOL_PREFERRED` (always with
 *    `MPOL_F_STATIC_NODES`), continue unbound with one warning, or refuse with an error. The
 *    facts include whether a container's seccomp filter refuses the memory-policy calls
 *    (numaPolicyCallsAvailable()).
 * 3. **After mbind.** settleBinding() takes mbind's errno and decides, through
 *    classifyMbindFailure(), whether a failure is a warning or an error.
 * 4. **Verification.** placementFromStatus() counts what move_pages() reported per page;
 *    strictBindingProblem() says whether a strict binding kept its promise.
 *
 * NumaBoundHostRange puts the same sequence (mmap, mbind, two madvise calls) behind one
 * constructor, and pagesPerNode() the placement query, for code whose lesson is elsewhere.
 *
 * Warnings never go to stderr from here: they are handed to a caller-provided WarningSink, so a
 * program decides how to print them and a test can count them.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "host_layout.hpp"
#include "memsamples.hpp"
#include "support/numa_sysfs.hpp"

/// The NUMA host-memory library of the CUDA Memory Samples (sample 04, reused by sample 06).
namespace memsamples::numa {

/// Receives each warning as one line of text (no trailing newline). An empty sink drops them.
using WarningSink = std::function<void(const std::string& warning)>;

/// A binding that cannot be done under the requested policy, or a system call that failed.
class NumaBindError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "Invalid argument (EINVAL)": the text and the name, because the name is what people search for.
std::string errnoText(int error);

/// A node number as the output shows it: "3", or "-1 (unknown)" for a negative one.
std::string nodeValueText(int node);

// ------------------------------------------------------------------------------------------------
/// @name Topology: which host node is nearest the GPU
/// @{

/**
 * Whether NUMA memory policies can be used here: numa_available() succeeds **and** the
 * memory-policy system calls are not refused with EPERM.
 *
 * Docker's default seccomp profile allows get_mempolicy, mbind and set_mempolicy only to a
 * container with CAP_SYS_NICE; without it they fail with EPERM. libnuma releases since late 2024
 * (numactl pull request #232) count that as "unavailable" in numa_available() itself; older ones
 * (2.0.16, for instance) check only for ENOSYS and report NUMA as available. This function asks
 * get_mempolicy once more, so that the answer is the same with every libnuma. Every libnuma call
 * in this library is guarded by it.
 */
bool numaPolicyCallsAvailable();

/// What is known about the memory of one NUMA node.
struct NodeMemory {
  /// Whether the node exists and its size could be read.
  enum class Status {
    Present,       ///< The node exists; totalBytes and freeBytes are valid (total may be 0).
    DoesNotExist,  ///< There is no such node on this system.
    Unknown,       ///< The size could not be read (see detail); the node may still exist.
    DeviceMemory,  ///< The node is a GPU's memory (see detail), never host memory.
  };
  Status status = Status::Unknown;  ///< See Status.
  std::uint64_t totalBytes = 0;     ///< MemTotal of the node (Present only).
  std::uint64_t freeBytes = 0;      ///< MemFree of the node (Present only).
  std::string detail;               ///< Why the node does not exist or is Unknown.
};

/// Answers "how much memory does node N have" (the seed's memory-bank check).
using NodeMemoryQuery = std::function<NodeMemory(int node)>;

/**
 * The real answer, from libnuma: numa_node_size64(). Nodes above numa_max_node() do not exist;
 * when numaPolicyCallsAvailable() is false every node is Unknown (libnuma must not be used then).
 */
NodeMemoryQuery libnumaNodeMemory();

/**
 * The same numbers read from `<sysfsRoot>/devices/system/node/node<N>/meminfo` (the file libnuma
 * reads), so that a fake sysfs tree can describe a whole machine in a test.
 */
NodeMemoryQuery sysfsNodeMemory(std::string sysfsRoot);

/// How far node `from` is from node `to`, as numa_distance() says (10 = local); 0 when unknown.
using NodeDistanceQuery = std::function<int(int from, int to)>;

/// Everything the topology rules ask about the machine's NUMA nodes.
struct NodeQueries {
  std::vector<int> nodes;      ///< The nodes that exist, ascending; empty without NUMA.
  NodeMemoryQuery memory;      ///< Each node's memory.
  NodeDistanceQuery distance;  ///< Distances between nodes.
  /// GPU memory that is a NUMA node of its own (CU_DEVICE_ATTRIBUTE_NUMA_CONFIG =
  /// CU_DEVICE_NUMA_CONFIG_NUMA_NODE, as on coherent Grace-class systems): node
  /// (CU_DEVICE_ATTRIBUTE_NUMA_ID) -> device ordinal. Such a node has memory, but not host memory.
  std::map<int, int> deviceMemoryNodes;

  /// memory(@p node), or DeviceMemory for a node in deviceMemoryNodes.
  NodeMemory hostMemory(int node) const;
  /// True when @p node is a host node with memory (or memory that cannot be read).
  bool holdsHostMemory(int node) const;
};

/// The real queries: numa_max_node(), libnumaNodeMemory() and numa_distance(); sysfsNodes("/sys")
/// when numaPolicyCallsAvailable() is false (no nodes where the kernel has no NUMA). The caller
/// adds the GPU memory nodes.
NodeQueries libnumaNodes();

/// The same from a sysfs tree: the `node<N>` folders of `<sysfsRoot>/devices/system/node`,
/// sysfsNodeMemory(), and each node's `distance` file (one number per existing node, in order:
/// the table numa_distance() reads).
NodeQueries sysfsNodes(const std::string& sysfsRoot);

/**
 * The host node with memory that is closest to @p from (numa_distance; @p from itself when it
 * qualifies), the lower number on a tie; GPU memory nodes never qualify. Where @p from is -1 or
 * no distance is known, the lowest such node. -1 when there is none (no NUMA).
 */
int closestHostNodeWithMemory(int from, const NodeQueries& nodes);

/// The host nodes with memory, ascending, at most @p limit of them.
std::vector<int> hostNodesWithMemory(const NodeQueries& nodes, std::size_t limit);

/// Where the chosen node came from.
enum class NodeSource {
  None,           ///< No usable node: neither source gave a node with memory.
  Sysfs,          ///< The kernel's PCI `numa_node` file.
  CudaAttribute,  ///< CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID.
  Both,           ///< Both sources named the same node.
  Closest,        ///< The closest host node with memory to the node a source named.
};

/// "sysfs", "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID", "both sources", "closest node with memory
/// (numa_distance)" or "none".
const char* nodeSourceName(NodeSource source);

/// The host NUMA node nearest a GPU, and how it was found.
struct HostNumaNode {
  int node = -1;                         ///< The node to bind to, -1 when none is usable.
  NodeSource source = NodeSource::None;  ///< Which source gave `node`.
  int attributeNode = -1;                ///< What CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID said.
  PciNumaNode sysfs;                     ///< What sysfs said (memsamples::readPciNumaNode).
  bool sourcesDisagree = false;          ///< The two sources named different nodes (-1 counts).
  std::vector<std::string> notes;        ///< Why a candidate was rejected, disagreements.
  /// True when a usable node was found.
  bool known() const noexcept { return node >= 0; }
};

/**
 * Combines both sources into one node, as the seed does with its topology: GPU -> nearest CPU
 * node -> that node must have memory.
 *
 * Order of preference: sysfs first (the kernel's record of the device's proximity domain from
 * the firmware), then the CUDA attribute (the driver's answer, which is still a node where sysfs
 * says -1, e.g. 0 on a VM without NUMA information). A candidate that does not exist, has no
 * memory or is GPU memory is rejected with a note and the other source is tried; a node whose
 * memory cannot be read is accepted with a note. When every candidate was rejected but one
 * exists (a CPU node without memory, say), the result is closestHostNodeWithMemory() of the
 * first such candidate. A difference between the two values is reported in `sourcesDisagree` and
 * in the notes.
 *
 * @param attributeNode CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (-1 when unknown or not supported).
 * @param pciBusId what cuDeviceGetPCIBusId returned.
 * @param nodes the machine's nodes, normally libnumaNodes() with the GPU memory nodes added.
 * @param sysfsRoot the sysfs mount point; tests point it at a fake tree.
 */
HostNumaNode findNearestHostNode(int attributeNode, std::string_view pciBusId,
                                 const NodeQueries& nodes, const std::string& sysfsRoot = "/sys");

/**
 * The marker a per-node table prints after node @p node's row: which row is the binding target
 * and which is the node nearest the GPU, which differ when `--node` chose the target.
 * @param node the row's node.
 * @param target the node the sample binds to.
 * @param nearest the node nearest the GPU (-1 when unknown).
 * @param targetFromOption whether `--node` chose @p target.
 * @return e.g. "   <- nearest, the target", "   <- --node target", "   <- nearest", or "".
 */
std::string nodeRowLabel(int node, int target, int nearest, bool targetFromOption);

/// The node a cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA) location names, and why it is not the
/// binding target.
struct HostNumaVmmNode {
  int node = 0;        ///< The location id.
  std::string reason;  ///< Empty when `node` is the target; else why another node.
};

/**
 * The host node to give cuMemCreate with a CU_MEM_LOCATION_TYPE_HOST_NUMA location: the driver
 * needs a host node that exists and has memory.
 * - @p attributeNode (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID) is -1: the driver sees no NUMA, and
 *   cuda.h asks for id 0 (memsamples::hostNumaLocationId).
 * - Else @p target when it qualifies (or its memory cannot be read), else @p nearest, else the
 *   closest host node with memory to the target, and 0 only where no node is known (no NUMA).
 */
HostNumaVmmNode hostNumaVmmNode(int attributeNode, int target, int nearest,
                                const NodeQueries& nodes);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Policy: how to bind, and what to do when it cannot be done
/// @{

/// The two switches of the seed (its NoNUMABind and NoSubstitute flags).
struct BindPolicy {
  bool bind = true;     ///< false: do not bind at all (the seed's NoNUMABind).
  bool strict = false;  ///< true: MPOL_BIND and errors instead of fallbacks (NoSubstitute).
};

/// `MPOL_F_STATIC_NODES` from <linux/mempolicy.h>, which cannot be included together with
/// libnuma's <numaif.h>: the node mask means physical node numbers, never remapped when the
/// process's cpuset changes.
inline constexpr int kMpolStaticNodes = 1 << 15;

/// "MPOL_BIND | MPOL_F_STATIC_NODES" for a mode word; "none" for 0.
std::string describeMbindMode(int mode);

/// What the system says about NUMA and the target node, gathered before binding.
struct NumaFacts {
  bool available = false;  ///< numaPolicyCallsAvailable().
  int maxNode = -1;        ///< numa_max_node().
  NodeMemory target;       ///< The target node's memory.
};

/// The real NumaFacts for @p node: libnuma's, with @p nodes' answer for the node's memory (so
/// a GPU memory node is DeviceMemory).
NumaFacts queryNumaFacts(int node, const NodeQueries& nodes = libnumaNodes());

/**
 * Why nothing can be bound to @p node here, whatever the size: NUMA unavailable (including
 * policy calls refused by a seccomp filter), no node, a node that does not exist, has no memory
 * or is GPU memory. Empty when a binding is possible. chooseMbindMode() starts with this check; a
 * program can use it to reject `--strict --node N` before any GPU work.
 */
std::string whyNodeCannotBeBound(int node, const NumaFacts& facts);

/// chooseMbindMode()'s error for a strict binding of @p bytes that @p problem makes impossible.
std::string strictRefusal(std::size_t bytes, const std::string& problem);

/// What chooseMbindMode() decided.
struct BindDecision {
  bool callMbind = false;     ///< Bind with `mode`.
  int mode = 0;               ///< MPOL_BIND or MPOL_PREFERRED, with kMpolStaticNodes.
  std::string warning;        ///< Non-empty: hand it to the sink (the only warning of the choice).
  std::string error;          ///< Non-empty: refuse; only under a strict policy.
  std::string unboundReason;  ///< Why the range stays unbound (no mbind call).
};

/**
 * The binding rules of the sample (see the README for why):
 * - `bind == false`: no mbind, no warning.
 * - NUMA unavailable, no node, a node that does not exist or has no memory: strict -> error;
 *   soft -> continue unbound with one warning.
 * - The node's free memory is below @p bytes: strict -> error (an MPOL_BIND range that cannot be
 *   filled ends in the OOM killer, not in an error code); soft -> bind anyway with one warning
 *   (MPOL_PREFERRED spills to other nodes).
 * - Otherwise mbind with `MPOL_F_STATIC_NODES | (strict ? MPOL_BIND : MPOL_PREFERRED)`.
 *   A machine with a single node is not an error: binding to it is valid and always satisfied.
 */
BindDecision chooseMbindMode(const BindPolicy& policy, int node, std::size_t bytes,
                             const NumaFacts& facts);

/// What to do after mbind() failed.
struct MbindFailure {
  bool fatal = false;             ///< Throw NumaBindError with `message`.
  bool blockedBySeccomp = false;  ///< The failure was EPERM.
  std::string message;            ///< The warning or error text.
};

/**
 * - EPERM (a seccomp filter that refuses mbind but allows get_mempolicy: a profile that blocks
 *   all the memory-policy calls, like Docker's default one without CAP_SYS_NICE, is caught
 *   earlier as "NUMA is not available", see numaPolicyCallsAvailable()): one warning, continue
 *   unbound, strict or not, as the seed does. A strict range then still keeps its promise by
 *   verification after its first touch: strictBindingProblem() refuses a page off the node.
 * - Any other errno: strict -> fatal; soft -> one warning, continue unbound.
 */
MbindFailure classifyMbindFailure(int error, const BindPolicy& policy, int node);

/// mbind()'s node mask for one node: a bit array of node numbers and the `maxnode` to pass.
struct NodeMask {
  std::vector<unsigned long> words;  ///< Bit `node` set, every other bit clear.
  unsigned long maxNode = 0;         ///< The mask's width in bits + 1, as libnuma passes it.
};

/// The mask that names only @p node (0 or more). @throws std::invalid_argument for a negative one.
NodeMask nodeMask(int node);

/// How a binding ended up.
enum class BindState {
  Bound,             ///< mbind() succeeded.
  NotRequested,      ///< BindPolicy::bind was false.
  FellBack,          ///< Soft policy, binding impossible or failed: unbound, one warning.
  BlockedBySeccomp,  ///< mbind() returned EPERM: unbound, one warning.
};

/// "bound", "not requested", "fell back (unbound)" or "blocked by seccomp (unbound)".
const char* bindStateName(BindState state);

/// What binding a range came to, and which advice the kernel accepted.
struct BindOutcome {
  BindState state = BindState::NotRequested;  ///< See BindState.
  int mode = 0;                               ///< The mbind mode word in force (0 when unbound).
  std::string unboundReason;                  ///< Why the range is not bound (empty when Bound).
  bool hugePagesAdvised = false;              ///< madvise(MADV_HUGEPAGE) was accepted.
  bool dontForkAdvised = false;               ///< madvise(MADV_DONTFORK) was accepted.
};

/**
 * What a binding came to once mbind() was called, or not: @p decision is chooseMbindMode()'s,
 * @p mbindError the errno of a failed mbind() (0 when it succeeded or was not called). Hands at
 * most one warning to @p warn: the decision's, or classifyMbindFailure()'s message for a failure.
 * @throws NumaBindError when classifyMbindFailure() finds the failure fatal (strict, not EPERM).
 */
BindOutcome settleBinding(const BindDecision& decision, int mbindError, const BindPolicy& policy,
                          int node, const WarningSink& warn);

/// One line: "3.00 GiB (mapped 3.00 GiB) for node 0, bound with MPOL_PREFERRED |
/// MPOL_F_STATIC_NODES; advice: MADV_HUGEPAGE MADV_DONTFORK".
std::string describeBinding(std::size_t bytes, std::size_t mappedBytes, int node,
                            const BindOutcome& outcome);

/**
 * The madvise() advice for a range of @p bytes, one entry per call: MADV_HUGEPAGE (from one
 * transparent huge page of @p hugePageBytes; never when that is 0, no THP) and MADV_DONTFORK.
 * They are advice *numbers* (14 and 10 on Linux), not bit flags: OR-ing them would ask for
 * advice 14 | 10 = 14 and silently drop MADV_DONTFORK.
 */
std::vector<int> madviseAdvice(std::size_t bytes, std::size_t hugePageBytes);

/// "MADV_HUGEPAGE", "MADV_DONTFORK" or the number.
std::string adviceName(int advice);

/// The warning for a refused madvise(): advice is about speed, so the range is used without it.
std::string adviceFailure(int advice, int error);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Verification: where did the pages land
/// @{

/// Where the pages of a range are, counted in base pages.
struct PagePlacement {
  std::map<int, std::size_t> pagesPerNode;  ///< Node -> number of pages there.
  std::size_t pages = 0;                    ///< Pages queried.
  std::size_t notPresent = 0;    ///< Pages never touched (-ENOENT): no physical page yet.
  std::size_t unreadable = 0;    ///< Pages the kernel could not report (other negative status).
  int firstUnreadableError = 0;  ///< errno of the first unreadable page.
  std::size_t pageBytes = 0;     ///< Size of one counted page.
  std::string method;            ///< "move_pages" or "get_mempolicy".
  std::string error;             ///< Non-empty: the placement is unknown, and why.

  /// True when the kernel answered.
  bool known() const noexcept { return error.empty(); }
  /// True when every queried page is on @p node.
  bool allOn(int node) const;
  /// Fraction of the queried pages on @p node (0 when unknown or empty).
  double fractionOn(int node) const;
  /// "node 0: 768 pages (100.0 %)" and the not-present / unreadable counts, or the error.
  std::string summary() const;
};

/// The start of every base page of [@p address, @p address + @p bytes), for move_pages().
std::vector<void*> pageAddresses(const void* address, std::size_t bytes);

/**
 * Counts the @p status array move_pages() filled for a query without target nodes: a node
 * number per page, -ENOENT for a page never touched, another negative errno for a page the
 * kernel could not report.
 */
PagePlacement placementFromStatus(const std::vector<int>& status);

/**
 * The fallback where move_pages() failed with @p moveError (a filter that refuses it):
 * get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) page by page. It faults untouched pages in, so its
 * answer is only meaningful after first touch. Unknown (with both errors) when it fails too.
 */
PagePlacement placementFromPolicyQueries(const std::vector<void*>& pages, int moveError);

/**
 * Where each page of [@p address, @p address + @p bytes) is: move_pages() with a null node list
 * (a pure status query, no privilege needed for one's own pages), in batches; if the kernel
 * refuses it, placementFromPolicyQueries(). Call it after first touch.
 */
PagePlacement pagesPerNode(const void* address, std::size_t bytes);

/**
 * Empty when @p placement satisfies a strict binding to @p node, else why not: a page elsewhere,
 * a page not present, or a placement that could not be read.
 */
std::string strictPlacementProblem(const PagePlacement& placement, int node);

/**
 * After the first touch of a strict range bound to @p node: empty when it kept its promise,
 * else the error to raise. A successful MPOL_BIND is the kernel's own guarantee, so only a range
 * whose mbind did not happen (@p state not Bound, e.g. blocked by seccomp) must prove it with
 * a readable placement.
 */
std::string strictBindingProblem(const PagePlacement& placement, int node, BindState state);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name The bound range
/// @{

/// Takes over the munmap() of a mapping its caller made with mmap(); nothing else.
class OwnedMapping {
 public:
  /// Owns [@p address, @p address + @p bytes); a null @p address owns nothing.
  OwnedMapping(void* address, std::size_t bytes) noexcept : address_(address), bytes_(bytes) {}
  ~OwnedMapping();
  OwnedMapping(const OwnedMapping&) = delete;
  OwnedMapping& operator=(const OwnedMapping&) = delete;

 private:
  void* address_;
  std::size_t bytes_;
};

/**
 * Anonymous host memory bound to one NUMA node before its first touch; unmapped on destruction.
 *
 * Construction: the policy decision -> mmap (laid out by hostRangeLayout(): huge-page aligned
 * from one transparent huge page up, so that huge pages fit) -> mbind -> madvise(MADV_HUGEPAGE) and
 * madvise(MADV_DONTFORK) as two calls. No page is touched, so no page exists yet: the first touch
 * allocates each page under the policy, and nothing has to be migrated. Warnings go to the sink, at
 * most one per cause.
 *
 * Movable, not copyable. Not thread-safe; the memory itself may be used from any thread.
 */
class NumaBoundHostRange {
 public:
  /// An empty range (no memory).
  NumaBoundHostRange() = default;
  /**
   * Maps @p bytes and binds them to @p node under @p policy; @p pages are this kernel's page
   * sizes (tests give others).
   * @throws std::invalid_argument for 0 bytes; NumaBindError when a strict binding is impossible
   *         or mbind fails under a strict policy, or when mmap fails.
   */
  NumaBoundHostRange(std::size_t bytes, int node, const BindPolicy& policy, const WarningSink& warn,
                     const PageSizes& pages = systemPageSizes());
  ~NumaBoundHostRange();
  /// Takes over @p other's mapping; @p other becomes empty.
  NumaBoundHostRange(NumaBoundHostRange&& other) noexcept;
  /// Unmaps this range, then takes over @p other's mapping; @p other becomes empty.
  NumaBoundHostRange& operator=(NumaBoundHostRange&& other) noexcept;
  NumaBoundHostRange(const NumaBoundHostRange&) = delete;
  NumaBoundHostRange& operator=(const NumaBoundHostRange&) = delete;

  /// The start of the range (page aligned; huge-page aligned from one huge page).
  void* data() const noexcept { return address_; }
  /// The bytes requested.
  std::size_t size() const noexcept { return bytes_; }
  /// The bytes mapped (the request rounded up to a page, or to a huge page from one huge page).
  std::size_t mappedBytes() const noexcept { return mappedBytes_; }
  /// The target node.
  int node() const noexcept { return node_; }
  /// The policy it was made with.
  const BindPolicy& policy() const noexcept { return policy_; }
  /// Whether the binding is in force.
  BindState state() const noexcept { return outcome_.state; }
  /// The mbind mode word used (0 when mbind was not called or failed).
  int mode() const noexcept { return outcome_.mode; }
  /// Why the range is not bound (empty when Bound).
  const std::string& unboundReason() const noexcept { return outcome_.unboundReason; }
  /// madvise(MADV_HUGEPAGE) was given and accepted.
  bool hugePagesAdvised() const noexcept { return outcome_.hugePagesAdvised; }
  /// madvise(MADV_DONTFORK) was accepted.
  bool dontForkAdvised() const noexcept { return outcome_.dontForkAdvised; }

  /**
   * Writes one byte to every page, which allocates the pages under the binding. Under a strict
   * policy the placement is then checked: every page must be on the node (this is what keeps a
   * strict range honest when mbind was blocked by seccomp).
   * @throws NumaBindError under a strict policy when strictPlacementProblem() finds one.
   */
  void firstTouch();
  /// pagesPerNode() of the mapped range.
  PagePlacement placement() const;
  /// One line: size, node, state, mode and advice.
  std::string describe() const;

 private:
  void release() noexcept;

  void* address_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t mappedBytes_ = 0;
  int node_ = -1;
  BindPolicy policy_;
  BindOutcome outcome_;
};

/// @}

}  // namespace memsamples::numa
