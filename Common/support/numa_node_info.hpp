/**
 * @file numa_node_info.hpp
 * @brief What Linux says about its NUMA nodes and its pages: from sysfs, each node's memory, the
 *        nodes that exist, the distances between them (and, from those, the host nodes with
 *        memory and the closest one) and the page sizes (base and transparent huge page, and how
 *        a host range is laid out in them); from the kernel's move_pages and get_mempolicy
 *        queries, which node each page of a range is on.
 *
 * Plain readers with no CUDA and no libnuma (the two queries are made with syscall(), as libnuma
 * makes them), so that they work where libnuma is missing or a container's seccomp filter
 * refuses the NUMA system calls, and so that a test can point them at a fake sysfs tree. They
 * read and count; what a placement means for a binding is 04's to decide. Used by
 * 04_numaHostAlloc's binding rules (and through them by 06_perDeviceResource); unit tested in
 * ctest/unit/common/numa_node_info_test.cpp.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace memsamples {

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

/// Node @p node's MemTotal and MemFree from `<sysfsRoot>/devices/system/node/node<N>/meminfo`
/// (the file libnuma's numa_node_size64() reads; its lines read "Node 1 MemTotal: 16315156 kB").
/// DoesNotExist without that file, Unknown when the two lines cannot be read.
NodeMemory readNodeMemory(const std::string& sysfsRoot, int node);

/// The nodes that exist: the `node<N>` folders of `<sysfsRoot>/devices/system/node`, ascending
/// (numbers may have holes); empty where the kernel has no NUMA.
std::vector<int> sysfsNumaNodes(const std::string& sysfsRoot);

/// The distance from node @p from to node @p to (10 = local), from @p from's `distance` file:
/// one number per existing node in the order of @p nodes (sysfsNumaNodes()), so a position, not
/// a node number. 0 when unknown: no file, or @p to is not in @p nodes.
int readNodeDistance(const std::string& sysfsRoot, const std::vector<int>& nodes, int from, int to);

/// Answers "what memory does node N have" (the seed's memory-bank check).
using NodeMemoryQuery = std::function<NodeMemory(int node)>;

/// Everything there is to ask about the machine's NUMA nodes: from sysfs (sysfsNodes()), from
/// libnuma (04's libnumaNodes()) or from a test's fake tree.
struct NodeQueries {
  std::vector<int> nodes;                 ///< The nodes that exist, ascending.
  NodeMemoryQuery memory;                 ///< Each node's memory.
  std::function<int(int, int)> distance;  ///< numa_distance (10 = local; 0 = unknown).
  std::map<int, int> deviceMemoryNodes;   ///< GPU memory nodes (CUDA's NUMA_ID) -> device.
  NodeMemory hostMemory(int node) const;  ///< memory(), or DeviceMemory for GPU memory.
  bool holdsHostMemory(int node) const;   ///< Host memory there, or memory not readable.
};

/// The nodes, their memory and distances from a sysfs tree (sysfsNumaNodes(), readNodeMemory(),
/// readNodeDistance()).
NodeQueries sysfsNodes(const std::string& sysfsRoot);

/// The host node with memory closest to @p from (itself if it qualifies; lower number on a tie;
/// the lowest where no distance is known); -1 when there is none.
int closestHostNodeWithMemory(int from, const NodeQueries& nodes);

/// The host nodes with memory, ascending, at most @p limit of them.
std::vector<int> hostNodesWithMemory(const NodeQueries& nodes, std::size_t limit);

/// "Invalid argument (EINVAL)": the text and the name, because the name is what people search for;
/// "... (errno N)" for an errno the table does not name.
std::string errnoText(int error);

/// Where the pages of a range are, counted in base pages.
struct PagePlacement {
  std::map<int, std::size_t> pagesPerNode;               ///< Node -> number of pages there.
  std::size_t pages = 0;                                 ///< Pages queried.
  std::size_t notPresent = 0;                            ///< Never touched (-ENOENT): no page yet.
  std::size_t unreadable = 0;                            ///< Pages the kernel could not report.
  int firstUnreadableError = 0;                          ///< errno of the first unreadable page.
  std::size_t pageBytes = 0;                             ///< Size of one counted page.
  std::string method;                                    ///< "move_pages" or "get_mempolicy".
  std::string error;                                     ///< Non-empty: unknown, and why.
  bool known() const noexcept { return error.empty(); }  ///< The kernel answered.
  bool allOn(int node) const;                            ///< Every page is on @p node.
  double fractionOn(int node) const;  ///< Share of the pages on @p node (0: unknown, empty).
  /// "node 0: 768 of 768 pages (100.0 %)", the not-present and unreadable counts, or the error.
  std::string summary() const;
};

/// The start of every base page of [@p address, @p address + @p bytes), for move_pages().
std::vector<void*> pageAddresses(const void* address, std::size_t bytes);
/// Counts move_pages()'s @p status: a node per page, -ENOENT (never touched) or another -errno.
PagePlacement placementFromStatus(const std::vector<int>& status);
/// Where move_pages() failed with @p moveError: get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) page
/// by page (it faults untouched pages in); unknown when that fails too.
PagePlacement placementFromPolicyQueries(const std::vector<void*>& pages, int moveError);
/// move_pages() with no target nodes (a pure query) in batches, or the fallback above.
PagePlacement pagesPerNode(const void* address, std::size_t bytes);

/// The two page sizes a host range is laid out with. Neither is a constant: arm64 kernels run
/// with 4 KiB, 16 KiB or 64 KiB base pages, and the PMD-level transparent huge page follows
/// (2 MiB, 32 MiB, 512 MiB).
struct PageSizes {
  std::size_t base = 4096;  ///< sysconf(_SC_PAGESIZE).
  std::size_t huge = 0;     ///< hpage_pmd_size; 0 where the kernel has no transparent huge pages.
};

/// @p basePageBytes with the transparent huge page size from
/// `<sysfsRoot>/kernel/mm/transparent_hugepage/hpage_pmd_size`. A missing or malformed file, or
/// a size that is not a multiple of the base page, leaves `huge` at 0 (base pages only).
PageSizes readPageSizes(std::size_t basePageBytes, const std::string& sysfsRoot = "/sys");

/// readPageSizes() of this machine: sysconf(_SC_PAGESIZE) and /sys, read once.
PageSizes systemPageSizes();

/// @p vectorBytes rounded up to a page: each vector of a host range starts on a page of its own.
std::uint64_t vectorStride(std::uint64_t vectorBytes, std::uint64_t pageBytes);

/// How an anonymous mapping for a host range is made.
struct RangeLayout {
  std::size_t alignment = 0;      ///< Where the range starts: a huge page, or a base page.
  std::size_t mappedBytes = 0;    ///< The range: the request rounded up to `alignment`.
  std::size_t reservedBytes = 0;  ///< What to mmap: one `alignment` more when it exceeds a page.
};
/// Huge-page aligned and sized from one huge page up, so that THP can back all of it (the margins
/// of the extra alignment are never touched); base pages below, because rounding a small range up
/// to a huge page would touch and pin memory nobody asked for. @throws std::invalid_argument for
/// 0 bytes or a size that cannot be rounded up.
RangeLayout hostRangeLayout(std::size_t bytes, const PageSizes& pages);

}  // namespace memsamples
