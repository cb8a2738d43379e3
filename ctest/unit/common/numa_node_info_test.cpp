// The sysfs readers of NUMA nodes and page sizes and the node queries built on them, on fake
// sysfs trees, and the page placement queries on this process's own memory
// (Common/support/numa_node_info.hpp); moved here from 04_numaHostAlloc's tests with the code.
// Injected base pages stand in for 64 KiB-page kernels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "common/temp_dir.hpp"
#include "support/numa_node_info.hpp"

namespace ms = memsamples;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::size_t kPage4K = 4096;
constexpr std::size_t kPage64K = 65536;

/// Writes @p content as the file @p relative of the fake sysfs tree @p root.
void write(const ms::test::TempDir& root, const std::string& relative, const std::string& content) {
  root.touch(relative);
  std::ofstream(root.path() + "/" + relative) << content;
}

/// A node's meminfo in the kernel's format.
void writeNode(const ms::test::TempDir& root, int node, std::uint64_t totalKiB,
               std::uint64_t freeKiB) {
  const std::string prefix = "Node " + std::to_string(node) + " ";
  write(root, "devices/system/node/node" + std::to_string(node) + "/meminfo",
        prefix + "MemTotal:       " + std::to_string(totalKiB) + " kB\n" + prefix +
            "MemFree:        " + std::to_string(freeKiB) + " kB\n" + prefix +
            "MemUsed:        " + std::to_string(totalKiB - freeKiB) + " kB\n");
}

/// A node's distance file: one distance per existing node, in node order.
void writeDistances(const ms::test::TempDir& root, int node, const std::string& row) {
  write(root, "devices/system/node/node" + std::to_string(node) + "/distance", row + "\n");
}

/// Writes @p content as `<root>/kernel/mm/transparent_hugepage/hpage_pmd_size`.
void writeHugePageSize(const ms::test::TempDir& root, const std::string& content) {
  write(root, "kernel/mm/transparent_hugepage/hpage_pmd_size", content);
}

}  // namespace

TEST(NodeMemory, SysfsMeminfoIsReadInBytes) {
  const ms::test::TempDir sysfs;
  writeNode(sysfs, 2, 1024, 512);
  const ms::NodeMemory memory = ms::readNodeMemory(sysfs.path(), 2);
  EXPECT_EQ(memory.status, ms::NodeMemory::Status::Present);
  EXPECT_EQ(memory.totalBytes, 1024u * 1024u);
  EXPECT_EQ(memory.freeBytes, 512u * 1024u);
  EXPECT_EQ(ms::readNodeMemory(sysfs.path(), -1).status, ms::NodeMemory::Status::DoesNotExist);
  EXPECT_EQ(ms::readNodeMemory(sysfs.path(), 5).status, ms::NodeMemory::Status::DoesNotExist);
}

TEST(NodeDistance, SysfsRowsAreInNodeOrderNotByNumber) {
  // Nodes 0 and 2 exist (a hole at 1): node 0's row "10 20" means 20 to node 2.
  const ms::test::TempDir sysfs;
  writeNode(sysfs, 0, 1024, 512);
  writeNode(sysfs, 2, 1024, 512);
  writeDistances(sysfs, 0, "10 20");
  const std::vector<int> nodes = ms::sysfsNumaNodes(sysfs.path());
  EXPECT_EQ(nodes, (std::vector<int>{0, 2}));
  EXPECT_EQ(ms::readNodeDistance(sysfs.path(), nodes, 0, 0), 10);
  EXPECT_EQ(ms::readNodeDistance(sysfs.path(), nodes, 0, 2), 20);
  EXPECT_EQ(ms::readNodeDistance(sysfs.path(), nodes, 0, 1), 0);  // no such node
  EXPECT_EQ(ms::readNodeDistance(sysfs.path(), nodes, 2, 0), 0);  // no distance file
}

TEST(NodeDistance, NumbersBeyondTheNodesAreNotADistance) {
  // A row longer than the node list (a node gone offline since) must not give a node that does
  // not exist the distance of whatever number comes after the last one.
  const ms::test::TempDir sysfs;
  writeNode(sysfs, 0, 1024, 512);
  writeNode(sysfs, 1, 1024, 512);
  writeDistances(sysfs, 0, "10 20 30 40");
  const std::vector<int> nodes = ms::sysfsNumaNodes(sysfs.path());
  EXPECT_EQ(ms::readNodeDistance(sysfs.path(), nodes, 0, 1), 20);
  EXPECT_EQ(ms::readNodeDistance(sysfs.path(), nodes, 0, 5), 0);
}

TEST(NodeQueries, GpuMemoryIsNeverHostMemory) {
  // A coherent Grace-class system: node 1 is device 0's HBM (CU_DEVICE_NUMA_CONFIG_NUMA_NODE).
  // Moved here from 04's Topology.GpuMemoryIsNeverTheHostNode with the queries themselves.
  const ms::test::TempDir sysfs;
  writeNode(sysfs, 0, 8 << 20, 4 << 20);
  writeNode(sysfs, 1, 96 << 20, 90 << 20);
  writeDistances(sysfs, 1, "40 10");
  ms::NodeQueries nodes = ms::sysfsNodes(sysfs.path());
  nodes.deviceMemoryNodes = {{1, 0}};
  EXPECT_EQ(ms::hostNodesWithMemory(nodes, 8), std::vector<int>{0});
  EXPECT_EQ(ms::closestHostNodeWithMemory(1, nodes), 0);
  EXPECT_EQ(nodes.hostMemory(1).status, ms::NodeMemory::Status::DeviceMemory);
  EXPECT_FALSE(nodes.holdsHostMemory(1));
}

TEST(PageSizes, TheHugePageComesFromSysfs) {
  const ms::test::TempDir sysfs;
  // No transparent huge pages in this kernel: the file is missing.
  EXPECT_EQ(ms::readPageSizes(kPage4K, sysfs.path()).huge, 0u);
  writeHugePageSize(sysfs, "2097152\n");
  const ms::PageSizes x86 = ms::readPageSizes(kPage4K, sysfs.path());
  EXPECT_EQ(x86.base, kPage4K);
  EXPECT_EQ(x86.huge, 2 * kMiB);
  // arm64 with 64 KiB pages: the PMD maps 512 MiB.
  writeHugePageSize(sysfs, "536870912\n");
  const ms::PageSizes arm64 = ms::readPageSizes(kPage64K, sysfs.path());
  EXPECT_EQ(arm64.base, kPage64K);
  EXPECT_EQ(arm64.huge, 512 * kMiB);
  for (const char* bad : {"lots\n", "", "2097152 kB\n", "4096\n", "100000\n"}) {
    writeHugePageSize(sysfs, bad);
    EXPECT_EQ(ms::readPageSizes(kPage64K, sysfs.path()).huge, 0u) << "'" << bad << "'";
  }
}

TEST(PageSizes, ThisMachine) {
  const ms::PageSizes pages = ms::systemPageSizes();
  EXPECT_EQ(pages.base, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(pages.huge % pages.base, 0u);
}

// How a host range is laid out in the page sizes: moved here from 04's host_layout_test.cpp with
// vectorStride and hostRangeLayout.

TEST(HostLayout, VectorStrideIsPageAligned) {
  EXPECT_EQ(ms::vectorStride(4, kPage4K), 4096u);
  EXPECT_EQ(ms::vectorStride(4096, kPage4K), 4096u);
  EXPECT_EQ(ms::vectorStride(4100, kPage4K), 8192u);
  EXPECT_EQ(ms::vectorStride(kGiB, kPage4K), kGiB);
  // With 64 KiB pages each vector still starts on a page of its own.
  EXPECT_EQ(ms::vectorStride(4, kPage64K), 65536u);
  EXPECT_EQ(ms::vectorStride(4100, kPage64K), 65536u);
  EXPECT_EQ(ms::vectorStride(65537, kPage64K), 131072u);
}

TEST(RangeLayout, HugePagesFromOneHugePageUp) {
  const ms::PageSizes x86{kPage4K, 2 * kMiB};
  // The H200 run: 3 x 1 GiB, already whole huge pages; one huge page of extra addresses.
  const ms::RangeLayout big = ms::hostRangeLayout(3 * kGiB, x86);
  EXPECT_EQ(big.alignment, 2 * kMiB);
  EXPECT_EQ(big.mappedBytes, 3 * kGiB);
  EXPECT_EQ(big.reservedBytes, 3 * kGiB + 2 * kMiB);
  const ms::RangeLayout odd = ms::hostRangeLayout(3 * kMiB, x86);
  EXPECT_EQ(odd.mappedBytes, 4 * kMiB);
  // Below one huge page: base pages, no extra addresses.
  const ms::RangeLayout small = ms::hostRangeLayout(kMiB + 1, x86);
  EXPECT_EQ(small.alignment, kPage4K);
  EXPECT_EQ(small.mappedBytes, kMiB + kPage4K);
  EXPECT_EQ(small.reservedBytes, small.mappedBytes);
}

TEST(RangeLayout, SixtyFourKiBPagesDoNotPadToHalfAGibibyte) {
  const ms::PageSizes arm64{kPage64K, 512 * kMiB};
  // --size 16M: 48 MiB stays 48 MiB (a 2 MiB assumption would be wrong, a 512 MiB pad wasteful).
  const ms::RangeLayout small = ms::hostRangeLayout(48 * kMiB + 4, arm64);
  EXPECT_EQ(small.alignment, kPage64K);
  EXPECT_EQ(small.mappedBytes, 48 * kMiB + kPage64K);
  EXPECT_EQ(small.reservedBytes, small.mappedBytes);
  const ms::RangeLayout big = ms::hostRangeLayout(1536 * kMiB, arm64);
  EXPECT_EQ(big.alignment, 512 * kMiB);
  EXPECT_EQ(big.mappedBytes, 1536 * kMiB);
  EXPECT_EQ(big.reservedBytes, 2048 * kMiB);
  // No transparent huge pages: base pages whatever the size.
  EXPECT_EQ(ms::hostRangeLayout(3 * kGiB, ms::PageSizes{kPage64K, 0}).alignment, kPage64K);
  EXPECT_THROW(ms::hostRangeLayout(0, arm64), std::invalid_argument);
  EXPECT_THROW(ms::hostRangeLayout(SIZE_MAX - kPage64K, arm64), std::invalid_argument);
}

// Where the pages of a range are (PagePlacement, pageAddresses, placementFromStatus, the
// get_mempolicy fallback, pagesPerNode) and errnoText: moved here from 04's placement, binding and
// policy tests with the code; the strict checks of a placement stay 04's (placement_test.cpp).

TEST(ErrnoText, TextAndName) {
  // Moved here from 04's Errors.ErrnoAndNodeTexts with errnoText itself.
  EXPECT_EQ(ms::errnoText(EPERM), "Operation not permitted (EPERM)");
  EXPECT_NE(ms::errnoText(4000).find("(errno 4000)"), std::string::npos);
}

TEST(PagePlacement, PageAddressesCoverTheRangeInWholePages) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto* base = reinterpret_cast<const char*>(16 * page);
  EXPECT_TRUE(ms::pageAddresses(nullptr, 100).empty());
  EXPECT_TRUE(ms::pageAddresses(base, 0).empty());
  EXPECT_EQ(ms::pageAddresses(base, 1), std::vector<void*>{reinterpret_cast<void*>(16 * page)});
  // An unaligned start and end: the pages that hold the first and the last byte are included.
  const std::vector<void*> pages = ms::pageAddresses(base + page - 1, page + 2);
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0], reinterpret_cast<void*>(16 * page));
  EXPECT_EQ(pages[2], reinterpret_cast<void*>(18 * page));
}

TEST(PagePlacement, CountsWhatMovePagesReported) {
  // A node per page, -ENOENT for a page never touched, another -errno for one not reported.
  const ms::PagePlacement placement = ms::placementFromStatus({0, 1, 0, -ENOENT, -EFAULT, -EACCES});
  EXPECT_TRUE(placement.known());
  EXPECT_EQ(placement.method, "move_pages");
  EXPECT_EQ(placement.pages, 6u);
  EXPECT_EQ(placement.pagesPerNode, (std::map<int, std::size_t>{{0, 2}, {1, 1}}));
  EXPECT_EQ(placement.notPresent, 1u);
  EXPECT_EQ(placement.unreadable, 2u);
  EXPECT_EQ(placement.firstUnreadableError, EFAULT);
  EXPECT_EQ(placement.pageBytes, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(ms::placementFromStatus({}).pages, 0u);
}

TEST(PagePlacement, PolicyQueriesAreTheFallback) {
  // Real pages of this process, touched: get_mempolicy names a node for each.
  std::vector<char> buffer(3 * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), 1);
  const std::vector<void*> pages = ms::pageAddresses(buffer.data(), buffer.size());
  const ms::PagePlacement placement = ms::placementFromPolicyQueries(pages, EPERM);
  if (!placement.known()) {
    // Where get_mempolicy is refused too, both errors are named.
    EXPECT_EQ(placement.error.rfind("move_pages failed: Operation not permitted (EPERM); "
                                    "get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) failed: ",
                                    0),
              0u);
    return;
  }
  EXPECT_EQ(placement.method, "get_mempolicy");
  EXPECT_EQ(placement.pages, pages.size());
  std::size_t counted = 0;
  for (const auto& entry : placement.pagesPerNode)
    counted += entry.second;
  EXPECT_EQ(counted, pages.size());
}

TEST(PagePlacement, PlacementOfOrdinaryMemoryAddsUp) {
  std::vector<char> buffer(5 * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) + 123, 1);
  const ms::PagePlacement placement = ms::pagesPerNode(buffer.data(), buffer.size());
  ASSERT_TRUE(placement.known()) << placement.error;
  std::size_t counted = placement.notPresent + placement.unreadable;
  for (const auto& entry : placement.pagesPerNode)
    counted += entry.second;
  EXPECT_EQ(counted, placement.pages);
  EXPECT_GE(placement.pages, 6u);  // an unaligned start touches one more page
  EXPECT_EQ(placement.pageBytes, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
}
