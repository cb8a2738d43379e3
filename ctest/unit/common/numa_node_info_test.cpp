// The sysfs readers of NUMA nodes and page sizes, and the node queries built on them
// (Common/support/numa_node_info.hpp), on fake sysfs trees; moved here from 04_numaHostAlloc's
// tests with the code. Injected base pages stand in for 64 KiB-page kernels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/temp_dir.hpp"
#include "support/numa_node_info.hpp"

namespace ms = memsamples;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
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
