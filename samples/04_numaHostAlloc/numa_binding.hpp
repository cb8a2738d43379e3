/**
 * @file numa_binding.hpp
 * @brief What decides when host memory is bound to a NUMA node: the node (nearest the GPU), the
 *        mode (MPOL_BIND, MPOL_PREFERRED or none), what an errno of mbind or madvise means (a
 *        warning or an error), and the report of where the pages landed.
 *
 * The CUDA-free half of 04_numaHostAlloc (target `numaHostAlloc_logic`), unit tested on the real
 * kernel without a GPU. The lesson makes the mmap, mbind, madvise and move_pages calls itself
 * and asks these rules before and after; NumaBoundHostRange makes the same calls in one
 * constructor for code whose lesson is elsewhere (04's nearest-vs-remote table, 06's NUMA
 * resource). Warnings go to a WarningSink, never to stderr. Why each rule is what it is: the
 * sample's README, "Details". What only reads and counts (the sysfs readers, the node queries,
 * the page sizes and a range's layout in them, where the pages are, the errno names) is Common's:
 * support/numa_node_info.hpp.
 */
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "memsamples.hpp"
#include "support/numa_node_info.hpp"
#include "support/numa_sysfs.hpp"

/// The NUMA host-memory rules of the CUDA Memory Samples (sample 04, reused by sample 06).
namespace memsamples::numa {

/// Receives each warning as one line of text (no trailing newline). An empty sink drops them.
using WarningSink = std::function<void(const std::string& warning)>;

/// A binding that cannot be done under the requested policy, or a system call that failed.
class NumaBindError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A node number as the output shows it: "3", or "-1 (unknown)" for a negative one.
std::string nodeValueText(int node);

/// Waives the sample (WaivedError naming device @p ordinal and the attribute) where
/// CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED (@p hostRegisterSupported) is 0: the mbind path
/// and the nearest-vs-remote table pin their ranges with cuMemHostRegister, as 06 asks too.
void requireHostRegister(int ordinal, int hostRegisterSupported);

/// @name The node: which host node is nearest the GPU
/// @{

/// numa_available() succeeds **and** get_mempolicy is not refused with EPERM (a seccomp filter,
/// which libnuma before late 2024 does not notice). Guards every libnuma call here.
bool numaPolicyCallsAvailable();

/// libnuma's numa_node_size64(); every node is Unknown when numaPolicyCallsAvailable() is false.
NodeMemoryQuery libnumaNodeMemory();

/// libnuma's nodes, memory and distances; Common's sysfsNodes("/sys") where the policy calls are
/// refused. (NodeQueries, closestHostNodeWithMemory and hostNodesWithMemory are Common's.)
NodeQueries libnumaNodes();

/// Where the chosen node came from: None (no usable node), Sysfs (the kernel's PCI `numa_node`
/// file), CudaAttribute (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID), Both (both sources named the same
/// node) or Closest (the closest host node with memory to the node a source named).
enum class NodeSource { None, Sysfs, CudaAttribute, Both, Closest };
/// "none", "sysfs", "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID", "both sources" or "closest node with
/// memory (numa_distance)".
const char* nodeSourceName(NodeSource source);

/// The host NUMA node nearest a GPU, and how it was found.
struct HostNumaNode {
  int node = -1;                         ///< The node to bind to, -1 when none is usable.
  NodeSource source = NodeSource::None;  ///< Which source gave `node`.
  int attributeNode = -1;                ///< What CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID said.
  PciNumaNode sysfs;                     ///< What sysfs said (memsamples::readPciNumaNode).
  bool sourcesDisagree = false;          ///< The two sources named different nodes (-1 counts).
  std::vector<std::string> notes;        ///< Why a candidate was rejected, disagreements.
  bool known() const noexcept { return node >= 0; }  ///< A usable node was found.
};

/// Sysfs's `bus/pci/devices/<bdf>/numa_node` first, then @p attributeNode; a candidate that
/// does not exist, has no memory or is GPU memory is rejected with a note, and where every one
/// was, the closest host node with memory to the first that exists.
HostNumaNode findNearestHostNode(int attributeNode, std::string_view pciBusId,
                                 const NodeQueries& nodes, const std::string& sysfsRoot = "/sys");

/// The marker after a node's row of a per-node table: "   <- nearest, the target",
/// "   <- --node target" (", also the nearest"), "   <- nearest" or "".
std::string nodeRowLabel(int node, int target, int nearest, bool targetFromOption);

/// The node a cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA) location names.
struct HostNumaVmmNode {
  int node = 0;        ///< The location id.
  std::string reason;  ///< Empty when `node` is the target; else why another node.
};
/// 0 where @p attributeNode is -1 (cuda.h's "no NUMA"); else @p target if it holds host memory
/// (or cannot be read), else @p nearest, else the closest host node with memory, else 0.
HostNumaVmmNode hostNumaVmmNode(int attributeNode, int target, int nearest,
                                const NodeQueries& nodes);

/// @}
/// @name The mode: how to bind, or why not
/// @{

/// The seed's NoNUMABind and NoSubstitute switches.
struct BindPolicy {
  bool bind = true;     ///< false: no binding at all (`--no-bind`).
  bool strict = false;  ///< true: MPOL_BIND, and errors instead of fallbacks (`--strict`).
};

/// `MPOL_F_STATIC_NODES` (<linux/mempolicy.h> clashes with <numaif.h>): the mask names physical
/// nodes, never remapped when the process's cpuset changes.
inline constexpr int kMpolStaticNodes = 1 << 15;
/// "MPOL_BIND | MPOL_F_STATIC_NODES" for a mode word; "none" for 0.
std::string describeMbindMode(int mode);

/// What the system says about NUMA and the target node, gathered before binding.
struct NumaFacts {
  bool available = false;  ///< numaPolicyCallsAvailable().
  int maxNode = -1;        ///< numa_max_node().
  NodeMemory target;       ///< The target node's memory.
};
/// libnuma's NumaFacts for @p node, with @p nodes' answer for its memory (GPU memory included).
NumaFacts queryNumaFacts(int node, const NodeQueries& nodes = libnumaNodes());

/// Why nothing can be bound to @p node whatever the size (NUMA unavailable, no node, a node that
/// does not exist, has no memory or is GPU memory); empty when a binding is possible.
std::string whyNodeCannotBeBound(int node, const NumaFacts& facts);
/// The error for a strict binding of @p bytes that @p problem makes impossible.
std::string strictRefusal(std::size_t bytes, const std::string& problem);

/// What chooseMbindMode() decided, and for what.
struct BindDecision {
  bool callMbind = false;     ///< Bind with `mode`.
  int mode = 0;               ///< MPOL_BIND or MPOL_PREFERRED, with kMpolStaticNodes.
  std::string warning;        ///< Non-empty: the choice's one warning.
  std::string error;          ///< Non-empty: refuse (strict only).
  std::string unboundReason;  ///< Why the range stays unbound (no mbind call).
  BindPolicy policy;          ///< The policy it was decided under.
  int node = -1;              ///< The target node.
};

/// No binding asked: no mbind. A node that cannot be bound (whyNodeCannotBeBound), or less free
/// memory than @p bytes: strict -> error (MPOL_BIND would end in the OOM killer), soft -> one
/// warning (unbound, or MPOL_PREFERRED spilling over). Else
/// `MPOL_F_STATIC_NODES | (strict ? MPOL_BIND : MPOL_PREFERRED)`, one node or many.
BindDecision chooseMbindMode(const BindPolicy& policy, int node, std::size_t bytes,
                             const NumaFacts& facts);

/// mbind()'s node mask for one node.
struct NodeMask {
  std::vector<unsigned long> words;  ///< Bit `node` set, every other bit clear.
  unsigned long maxNode = 0;         ///< The mask's width in bits + 1, as libnuma passes it.
};
/// The mask that names only @p node. @throws std::invalid_argument for a negative one.
NodeMask nodeMask(int node);

/// (vectorStride(), RangeLayout and hostRangeLayout(), how a host range is laid out in the page
/// sizes, are Common's: support/numa_node_info.hpp.)

/// Step 1 of the lesson, before any GPU work: refuses `--strict` with `--no-bind` (UsageError)
/// and a strict binding to an explicit @p node (>= 0) that cannot hold memory (NumaBindError),
/// then sizes each of @p vectors host vectors with memsamples::fitHostMemory().
std::uint64_t sizeHostVectors(const std::optional<std::uint64_t>& requested,
                              std::uint64_t defaultBytes, int vectors, const BindPolicy& policy,
                              long long node);

/// Everything mmap and mbind need, decided before either is called.
struct BindPlan : BindDecision {
  std::size_t bytes = 0;      ///< The bytes requested.
  RangeLayout layout;         ///< What to map and what to bind.
  NodeMask mask;              ///< mbind's mask (empty without callMbind).
  std::size_t pageBytes = 0;  ///< The base page.
};
/// chooseMbindMode() on queryNumaFacts(@p node, @p nodes), hostRangeLayout(), nodeMask().
/// @throws NumaBindError for an error decision: nothing exists yet to undo.
BindPlan planBinding(const BindPolicy& policy, int node, std::size_t bytes,
                     const NodeQueries& nodes, const PageSizes& pages = systemPageSizes());

/// @}
/// @name What an errno means
/// @{

/// How a binding ended up: Bound (mbind() succeeded), NotRequested (BindPolicy::bind was false),
/// FellBack (binding impossible or failed under the soft policy: unbound, one warning) or
/// BlockedBySeccomp (mbind() returned EPERM: unbound, one warning).
enum class BindState { Bound, NotRequested, FellBack, BlockedBySeccomp };
/// "bound", "not requested", "fell back (unbound)" or "blocked by seccomp (unbound)".
const char* bindStateName(BindState state);

/// One row of the decision table (numa_binding.cpp) under one policy: what a situation comes to.
struct BindAnswer {
  BindState state = BindState::FellBack;  ///< The state it leaves the range in.
  bool fatal = false;                     ///< Refuse: throw NumaBindError with `message`.
  std::string message;                    ///< The warning or the error; empty: none.
};
/// What mbind() failing with @p error means. EPERM (a filter refusing mbind only): a warning
/// even when strict (BlockedBySeccomp), the first touch then checks every page. Any other errno:
/// fatal when strict, else a warning (FellBack).
BindAnswer classifyMbindFailure(int error, const BindPolicy& policy, int node);

/// What binding a range came to, and which advice the kernel accepted.
struct BindOutcome {
  BindState state = BindState::NotRequested;  ///< See BindState.
  int mode = 0;                               ///< The mbind mode word in force (0: unbound).
  std::string unboundReason;                  ///< Why the range is not bound (empty: Bound).
  bool hugePagesAdvised = false;              ///< madvise(MADV_HUGEPAGE) was accepted.
  bool dontForkAdvised = false;               ///< madvise(MADV_DONTFORK) was accepted.
};

/// CallErrors' mark for advice that was not given: not accepted, no warning.
inline constexpr int kNotAsked = -1;
/// The errno of each call after mmap: 0 when it succeeded (mbind: or was not called).
struct CallErrors {
  int mbind = 0;     ///< mbind().
  int hugePage = 0;  ///< madvise(MADV_HUGEPAGE), or kNotAsked.
  int dontFork = 0;  ///< madvise(MADV_DONTFORK), or kNotAsked.
};

/// The outcome of @p decision and of the calls' @p errors: hands @p warn the decision's or
/// classifyMbindFailure()'s warning, then adviceFailure() per refused advice.
/// @throws NumaBindError when the mbind failure is fatal.
BindOutcome settleBinding(const BindDecision& decision, const CallErrors& errors,
                          const WarningSink& warn);

/// "3.00 GiB (mapped 3.00 GiB) for node 0, bound with MPOL_PREFERRED | MPOL_F_STATIC_NODES;
/// advice: MADV_HUGEPAGE MADV_DONTFORK".
std::string describeBinding(std::size_t bytes, std::size_t mappedBytes, int node,
                            const BindOutcome& outcome);

/// One madvise() per advice: MADV_HUGEPAGE from one huge page up (none without THP), then
/// MADV_DONTFORK. Numbers, not flags: 14 | 10 asks for 14 and drops MADV_DONTFORK.
std::vector<int> madviseAdvice(std::size_t bytes, std::size_t hugePageBytes);
/// "MADV_HUGEPAGE", "MADV_DONTFORK" or "advice N".
std::string adviceName(int advice);
/// The warning for refused advice: the range is used without it.
std::string adviceFailure(int advice, int error);

/// @}
/// @name Where the pages landed
/// @{

/// (PagePlacement, pagesPerNode(), placementFromStatus() and the get_mempolicy fallback, which
/// read and count where pages are, are Common's: support/numa_node_info.hpp.)

/// Empty when @p placement satisfies a strict binding to @p node, else why not.
std::string strictPlacementProblem(const PagePlacement& placement, int node);
/// After a strict range's first touch: empty when it kept its promise, else the error. A
/// successful MPOL_BIND (@p state Bound) is the kernel's guarantee; others must prove it.
std::string strictBindingProblem(const PagePlacement& placement, int node, BindState state);

/// What one move_pages() call without target nodes answered.
struct PageNodes {
  std::vector<int> status;  ///< Per page: its node, -ENOENT (no page yet) or another -errno.
  int error = 0;            ///< move_pages()'s own errno; 0 when it answered.
};
/// The lesson's three looks at its range.
struct PlacementLog {
  std::vector<void*> pages;  ///< Every base page of the range.
  PageNodes beforeTouch;     ///< Before the first touch: no page should exist.
  PageNodes touched;         ///< After it: each page where the policy put it.
  PageNodes pinned;          ///< After cuMemHostRegister (pinning may migrate pages).
};
/// What reportPlacement() found.
struct PlacementReport {
  bool ok = true;               ///< false: pinning broke a strict binding.
  memsamples::JsonObject json;  ///< The binding, its advice and the pinned placement.
};
/// Prints the range (describeBinding), why it is unbound and the three placements; when strict,
/// a broken first touch throws (strictBindingProblem) and broken pinning clears `ok`.
PlacementReport reportPlacement(const BindPlan& plan, const BindOutcome& binding,
                                const PlacementLog& log, std::ostream& out);

/// @}
/// @name The bound range
/// @{

/// munmap() of a mapping of `bytes`, as OwnedMapping's deleter.
struct Unmap {
  std::size_t bytes = 0;  ///< The length of the mapping.
  /// Unmapping also drops the range's memory policy: it belongs to the mapping, not to the
  /// addresses, so a later mapping at the same place starts unbound.
  void operator()(void* address) const noexcept { munmap(address, bytes); }
};

/// Takes over the munmap() of a mapping its caller made with mmap(); nothing else. A
/// std::unique_ptr: release() gives the mapping up unmapped, for the good path's own munmap
/// call, and a move-assignment unmaps the mapping it replaces at once.
class OwnedMapping : public std::unique_ptr<void, Unmap> {
 public:
  OwnedMapping() noexcept = default;  ///< Owns nothing.
  /// Owns [@p address, @p address + @p bytes); a null @p address owns nothing.
  OwnedMapping(void* address, std::size_t bytes) noexcept : unique_ptr(address, Unmap{bytes}) {}
  /// The bytes owned: 0 when empty.
  std::size_t size() const noexcept { return get() != nullptr ? get_deleter().bytes : 0; }
};

/// Anonymous host memory bound to one node before its first touch, unmapped on destruction:
/// planBinding(), mmap (margins trimmed), mbind, madviseAdvice(), settleBinding(). Movable (a
/// moved-from range is empty; a move-assignment unmaps the range it replaces at once), not
/// copyable.
class NumaBoundHostRange {
 public:
  NumaBoundHostRange() = default;  ///< An empty range.
  /// Maps @p bytes bound to @p node, laid out in @p pages. @throws std::invalid_argument for 0
  /// bytes; NumaBindError from planBinding() or settleBinding(), or when mmap fails.
  NumaBoundHostRange(std::size_t bytes, int node, const BindPolicy& policy, const WarningSink& warn,
                     const PageSizes& pages = systemPageSizes());

  void* data() const noexcept { return mapping_.get(); }                ///< The (aligned) start.
  std::size_t size() const noexcept { return data() ? bytes_ : 0; }     ///< The bytes requested.
  std::size_t mappedBytes() const noexcept { return mapping_.size(); }  ///< The bytes mapped.
  /// The binding's state and mode, why it is unbound (empty when Bound), the advice accepted.
  const BindOutcome& outcome() const noexcept { return outcome_; }
  /// One byte per page creates every page under the binding; when strict, then checked.
  /// @throws NumaBindError from strictBindingProblem().
  void firstTouch();
  PagePlacement placement() const;  ///< pagesPerNode() of the mapped range.

 private:
  OwnedMapping mapping_;  // unmapping also drops the range's memory policy
  std::size_t bytes_ = 0;
  int node_ = -1;
  BindPolicy policy_;
  BindOutcome outcome_;
};

/// @}

}  // namespace memsamples::numa
