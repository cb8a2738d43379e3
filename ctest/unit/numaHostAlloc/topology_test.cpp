// Which host node is nearest the GPU: the choice between the CUDA attribute and sysfs, on fake
// sysfs trees. (The bus-id spelling, memsamples::sysfsPciName, the node readers, meminfo and
// distances, and the node queries built on them, memsamples::sysfsNodes, hostNodesWithMemory and
// closestHostNodeWithMemory, are Common's: ctest/unit/common/sysfs_test.cpp and
// numa_node_info_test.cpp.)
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "numa_binding.hpp"

namespace ms = memsamples;
namespace mn = memsamples::numa;
namespace fs = std::filesystem;

namespace {

constexpr const char* kBusId = "0000:3B:00.0";  // as cuDeviceGetPCIBusId spells it
constexpr const char* kSysfsName = "0000:3b:00.0";

/// A throw-away sysfs tree: PCI devices with a numa_node file, NUMA nodes with a meminfo file.
class FakeSysfs {
 public:
  FakeSysfs() {
    std::string pattern = (fs::temp_directory_path() / "numaHostAlloc-sysfs-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
  }
  ~FakeSysfs() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  const std::string& root() const { return root_; }
  void write(const std::string& relative, const std::string& content) const {
    const fs::path path = fs::path(root_) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
  }
  /// The GPU's numa_node file, with exactly @p content.
  void gpuNode(const std::string& content) const {
    write(std::string("bus/pci/devices/") + kSysfsName + "/numa_node", content);
  }
  /// A node's meminfo in the kernel's format.
  void node(int node, std::uint64_t totalKiB, std::uint64_t freeKiB) const {
    const std::string prefix = "Node " + std::to_string(node) + " ";
    write("devices/system/node/node" + std::to_string(node) + "/meminfo",
          prefix + "MemTotal:       " + std::to_string(totalKiB) + " kB\n" + prefix +
              "MemFree:        " + std::to_string(freeKiB) + " kB\n" + prefix +
              "MemUsed:        " + std::to_string(totalKiB - freeKiB) + " kB\n");
  }
  /// A node's distance file: one distance per existing node, in node order.
  void distances(int node, const std::string& row) const {
    write("devices/system/node/node" + std::to_string(node) + "/distance", row + "\n");
  }
  std::string gpuNodePath() const {
    return root_ + "/bus/pci/devices/" + kSysfsName + "/numa_node";
  }
  /// The machine's nodes, with @p gpuMemory marked as device memory (node -> device).
  ms::NodeQueries nodes(std::map<int, int> gpuMemory = {}) const {
    ms::NodeQueries queries = ms::sysfsNodes(root_);
    queries.deviceMemoryNodes = std::move(gpuMemory);
    return queries;
  }
  mn::HostNumaNode find(int attributeNode, std::map<int, int> gpuMemory = {}) const {
    return mn::findNearestHostNode(attributeNode, kBusId, nodes(std::move(gpuMemory)), root_);
  }

 private:
  std::string root_;
};

bool hasNote(const mn::HostNumaNode& found, const std::string& note) {
  for (const auto& n : found.notes) {
    if (n == note)
      return true;
  }
  return false;
}

}  // namespace

TEST(Topology, GpuOnNode1FromSysfs) {
  FakeSysfs sysfs;
  sysfs.gpuNode("1\n");
  sysfs.node(0, 8 << 20, 4 << 20);
  sysfs.node(1, 8 << 20, 6 << 20);

  const mn::HostNumaNode agree = sysfs.find(1);
  EXPECT_EQ(agree.node, 1);
  EXPECT_EQ(agree.source, mn::NodeSource::Both);
  EXPECT_FALSE(agree.sourcesDisagree);
  EXPECT_TRUE(agree.notes.empty());
  EXPECT_EQ(agree.sysfs.path, sysfs.gpuNodePath());
  EXPECT_EQ(agree.sysfs.node, 1);

  const mn::HostNumaNode sysfsOnly = sysfs.find(-1);
  EXPECT_EQ(sysfsOnly.node, 1);
  EXPECT_EQ(sysfsOnly.source, mn::NodeSource::Sysfs);
  EXPECT_TRUE(sysfsOnly.sourcesDisagree);
  EXPECT_TRUE(hasNote(sysfsOnly,
                      "the sources disagree: CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID says -1 "
                      "(unknown), sysfs says 1"));
}

TEST(Topology, SysfsWinsARealDisagreement) {
  FakeSysfs sysfs;
  sysfs.gpuNode("1");
  sysfs.node(0, 8 << 20, 4 << 20);
  sysfs.node(1, 8 << 20, 4 << 20);
  const mn::HostNumaNode found = sysfs.find(0);
  EXPECT_EQ(found.node, 1);
  EXPECT_EQ(found.source, mn::NodeSource::Sysfs);
  EXPECT_EQ(found.attributeNode, 0);
  EXPECT_TRUE(found.sourcesDisagree);
  EXPECT_TRUE(hasNote(found,
                      "the sources disagree: CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID says 0, "
                      "sysfs says 1"));
}

TEST(Topology, TheH200VmAttributeZeroSysfsUnknown) {
  FakeSysfs sysfs;
  sysfs.gpuNode("-1\n");
  sysfs.node(0, 128ull << 20, 120ull << 20);
  const mn::HostNumaNode found = sysfs.find(0);
  EXPECT_EQ(found.node, 0);
  EXPECT_EQ(found.source, mn::NodeSource::CudaAttribute);
  EXPECT_EQ(found.sysfs.node, -1);
  EXPECT_TRUE(found.sysfs.problem.empty());  // -1 is a valid answer: "unknown"
  EXPECT_TRUE(found.sourcesDisagree);
  ASSERT_EQ(found.notes.size(), 1u);
  EXPECT_EQ(found.notes[0],
            "the sources disagree: CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID says 0, sysfs says -1 "
            "(unknown)");
}

TEST(Topology, BothUnknownMeansNoNode) {
  FakeSysfs sysfs;
  sysfs.gpuNode("-1\n");
  sysfs.node(0, 8 << 20, 4 << 20);
  const mn::HostNumaNode found = sysfs.find(-1);
  EXPECT_FALSE(found.known());
  EXPECT_EQ(found.node, -1);
  EXPECT_EQ(found.source, mn::NodeSource::None);
  EXPECT_FALSE(found.sourcesDisagree);
  EXPECT_TRUE(hasNote(found, "no usable host NUMA node for this GPU"));
  // A value below -1 from the driver is treated as unknown as well.
  EXPECT_EQ(sysfs.find(-7).attributeNode, -1);
}

TEST(Topology, ANodeWithoutMemoryIsRejected) {
  FakeSysfs sysfs;
  sysfs.gpuNode("1\n");
  sysfs.node(0, 8 << 20, 4 << 20);
  sysfs.node(1, 0, 0);  // CPUs only, like a memoryless node

  const mn::HostNumaNode fallback = sysfs.find(0);
  EXPECT_EQ(fallback.node, 0);
  EXPECT_EQ(fallback.source, mn::NodeSource::CudaAttribute);
  EXPECT_TRUE(hasNote(fallback, "node 1 (from sysfs) rejected: it has no memory"));

  // Only sysfs names a node, and it has none: the closest node with memory stands in.
  const mn::HostNumaNode closest = sysfs.find(-1);
  EXPECT_EQ(closest.node, 0);
  EXPECT_EQ(closest.source, mn::NodeSource::Closest);
  EXPECT_TRUE(hasNote(closest, "node 1 (from sysfs) rejected: it has no memory"));
  EXPECT_TRUE(hasNote(closest,
                      "node 0 is the closest node with memory to node 1 "
                      "(numa_distance unknown)"));

  // The same node named by both sources is tried once.
  const mn::HostNumaNode both = sysfs.find(1);
  EXPECT_EQ(both.node, 0);
  EXPECT_EQ(both.notes.size(), 2u);
}

TEST(Topology, AMemorylessNearestNodeGivesTheClosestNodeWithMemory) {
  // Node 0 has CPUs but no memory; node 2 is closer to it than node 1.
  FakeSysfs sysfs;
  sysfs.gpuNode("0\n");
  sysfs.node(0, 0, 0);
  sysfs.node(1, 8 << 20, 4 << 20);
  sysfs.node(2, 8 << 20, 4 << 20);
  sysfs.distances(0, "10 21 12");
  const mn::HostNumaNode found = sysfs.find(0);
  EXPECT_EQ(found.node, 2);
  EXPECT_EQ(found.source, mn::NodeSource::Closest);
  EXPECT_TRUE(hasNote(found, "node 0 (from both sources) rejected: it has no memory") ||
              hasNote(found, "node 0 (from sysfs) rejected: it has no memory"));
  EXPECT_TRUE(hasNote(found,
                      "node 2 is the closest node with memory to node 0 "
                      "(numa_distance 12)"));
  // Without distances the lowest node with memory is taken.
  FakeSysfs flat;
  flat.gpuNode("0\n");
  flat.node(0, 0, 0);
  flat.node(2, 8 << 20, 4 << 20);
  flat.node(3, 8 << 20, 4 << 20);
  EXPECT_EQ(flat.find(-1).node, 2);
}

TEST(Topology, GpuMemoryIsNeverTheHostNode) {
  // A coherent Grace-class system: node 1 is device 0's HBM (CU_DEVICE_NUMA_CONFIG_NUMA_NODE).
  FakeSysfs sysfs;
  sysfs.gpuNode("1\n");
  sysfs.node(0, 8 << 20, 4 << 20);
  sysfs.node(1, 96 << 20, 90 << 20);
  sysfs.distances(1, "40 10");
  const mn::HostNumaNode found = sysfs.find(0, {{1, 0}});
  EXPECT_EQ(found.node, 0);
  EXPECT_EQ(found.source, mn::NodeSource::CudaAttribute);
  EXPECT_TRUE(hasNote(found,
                      "node 1 (from sysfs) rejected: it is GPU memory, the memory of "
                      "device 0 (CU_DEVICE_ATTRIBUTE_NUMA_ID)"));
  // Named by the only source, it is replaced by the closest host node with memory.
  EXPECT_EQ(sysfs.find(-1, {{1, 0}}).node, 0);
  EXPECT_EQ(sysfs.find(-1, {{1, 0}}).source, mn::NodeSource::Closest);

  // (The node queries' own view of GPU memory, hostMemory and hostNodesWithMemory, is Common's:
  // ctest/unit/common/numa_node_info_test.cpp, NodeQueries.GpuMemoryIsNeverHostMemory.)
  const ms::NodeQueries nodes = sysfs.nodes({{1, 0}});
  // --node 1 is refused as a binding target, strict or soft.
  mn::NumaFacts facts;
  facts.available = true;
  facts.maxNode = 1;
  facts.target = nodes.hostMemory(1);
  EXPECT_EQ(mn::whyNodeCannotBeBound(1, facts),
            "node 1 is GPU memory, not host memory (the memory of device 0 "
            "(CU_DEVICE_ATTRIBUTE_NUMA_ID))");
  EXPECT_FALSE(mn::chooseMbindMode(mn::BindPolicy{true, false}, 1, 4096, facts).callMbind);
  EXPECT_FALSE(mn::chooseMbindMode(mn::BindPolicy{true, true}, 1, 4096, facts).error.empty());
}

TEST(Topology, ANodeThatDoesNotExistIsRejected) {
  FakeSysfs sysfs;
  sysfs.gpuNode("3\n");
  sysfs.node(0, 8 << 20, 4 << 20);
  const mn::HostNumaNode found = sysfs.find(0);
  EXPECT_EQ(found.node, 0);
  EXPECT_EQ(found.source, mn::NodeSource::CudaAttribute);
  EXPECT_TRUE(hasNote(found, "node 3 (from sysfs) rejected: it does not exist (cannot read " +
                                 sysfs.root() +
                                 "/devices/system/node/node3/meminfo: No such file or "
                                 "directory)"));
}

TEST(Topology, MalformedNumaNodeFilesCountAsUnknown) {
  const std::vector<std::string> malformed = {"abc", "",    "\n",   "1x",
                                              "-7",  "-2",  "1024", "99999999999",
                                              "1 2", "0x1", "+1",   std::string("\x01\x02", 2)};
  for (const std::string& content : malformed) {
    FakeSysfs sysfs;
    sysfs.gpuNode(content);
    sysfs.node(0, 8 << 20, 4 << 20);
    const mn::HostNumaNode found = sysfs.find(0);
    EXPECT_EQ(found.sysfs.node, -1) << "content '" << content << "'";
    EXPECT_FALSE(found.sysfs.problem.empty()) << "content '" << content << "'";
    EXPECT_EQ(found.node, 0);
    EXPECT_EQ(found.source, mn::NodeSource::CudaAttribute);
    EXPECT_TRUE(hasNote(found, "sysfs: " + found.sysfs.problem));
  }
  FakeSysfs sysfs;
  sysfs.gpuNode("abc\n");
  EXPECT_EQ(ms::readPciNumaNode(sysfs.root(), kBusId).problem,
            sysfs.gpuNodePath() + " holds 'abc', not a node number from -1 to 1023");
  sysfs.gpuNode(std::string(100, '7'));
  EXPECT_EQ(ms::readPciNumaNode(sysfs.root(), kBusId).problem,
            sysfs.gpuNodePath() + " holds '" + std::string(40, '7') +
                "...', not a node number from -1 to 1023");
}

TEST(Topology, WhiteSpaceAroundTheNumberIsFine) {
  FakeSysfs sysfs;
  sysfs.gpuNode("  1 \n");
  const ms::PciNumaNode read = ms::readPciNumaNode(sysfs.root(), kBusId);
  EXPECT_EQ(read.node, 1);
  EXPECT_TRUE(read.problem.empty());
}

TEST(Topology, MissingFileAndMalformedBusId) {
  FakeSysfs sysfs;
  sysfs.node(0, 8 << 20, 4 << 20);
  const mn::HostNumaNode missing = sysfs.find(0);
  EXPECT_EQ(missing.sysfs.problem,
            "cannot read " + sysfs.gpuNodePath() + ": No such file or directory");
  EXPECT_EQ(missing.node, 0);

  const mn::HostNumaNode badId =
      mn::findNearestHostNode(0, "not-a-bus-id", sysfs.nodes(), sysfs.root());
  EXPECT_TRUE(badId.sysfs.path.empty());
  EXPECT_EQ(badId.sysfs.problem,
            "malformed PCI bus id 'not-a-bus-id': expected domain:bus:device.function in hex, "
            "e.g. 0000:3b:00.0");
  EXPECT_EQ(badId.node, 0);
}

TEST(Topology, UnreadableNodeMemoryIsAcceptedWithANote) {
  FakeSysfs sysfs;
  sysfs.gpuNode("1");
  sysfs.write("devices/system/node/node1/meminfo", "Node 1 MemTotal: lots\n");
  const mn::HostNumaNode found = sysfs.find(-1);
  EXPECT_EQ(found.node, 1);
  EXPECT_TRUE(hasNote(found, "node 1 (from sysfs): its memory could not be checked (" +
                                 sysfs.root() +
                                 "/devices/system/node/node1/meminfo has no readable MemTotal "
                                 "and MemFree lines)"));
  // Without any memory query the node is accepted the same way.
  const mn::HostNumaNode noQuery =
      mn::findNearestHostNode(-1, kBusId, ms::NodeQueries{}, sysfs.root());
  EXPECT_EQ(noQuery.node, 1);
  EXPECT_TRUE(hasNote(noQuery,
                      "node 1 (from sysfs): its memory could not be checked (no memory "
                      "query was given)"));
}

TEST(NodeMemory, LibnumaOnThisMachine) {
  const ms::NodeMemoryQuery memory = mn::libnumaNodeMemory();
  const memsamples::NodeMemory node0 = memory(0);
  if (node0.status == memsamples::NodeMemory::Status::Unknown) {
    GTEST_SKIP() << "libnuma unavailable here: " << node0.detail;
  }
  // Node 0 exists on every Linux machine; whether it has memory depends on the machine.
  EXPECT_EQ(node0.status, memsamples::NodeMemory::Status::Present);
  EXPECT_LE(node0.freeBytes, node0.totalBytes);
  const memsamples::NodeMemory missing = memory(1000);
  EXPECT_EQ(missing.status, memsamples::NodeMemory::Status::DoesNotExist);
  EXPECT_EQ(missing.detail.rfind("numa_max_node() is ", 0), 0u) << missing.detail;
  EXPECT_EQ(memory(-1).status, memsamples::NodeMemory::Status::DoesNotExist);
}

TEST(Topology, SourceNames) {
  EXPECT_STREQ(mn::nodeSourceName(mn::NodeSource::Sysfs), "sysfs");
  EXPECT_STREQ(mn::nodeSourceName(mn::NodeSource::CudaAttribute),
               "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID");
  EXPECT_STREQ(mn::nodeSourceName(mn::NodeSource::Both), "both sources");
  EXPECT_STREQ(mn::nodeSourceName(mn::NodeSource::Closest),
               "closest node with memory (numa_distance)");
  EXPECT_STREQ(mn::nodeSourceName(mn::NodeSource::None), "none");
}

TEST(NodeRowLabel, MarksTheTargetAndTheNearestNode) {
  // Without --node the target is the nearest node.
  EXPECT_EQ(mn::nodeRowLabel(0, 0, 0, false), "   <- nearest, the target");
  EXPECT_EQ(mn::nodeRowLabel(1, 0, 0, false), "");
  // --node 1 while node 0 is nearest: two different rows, each named for what it is.
  EXPECT_EQ(mn::nodeRowLabel(1, 1, 0, true), "   <- --node target");
  EXPECT_EQ(mn::nodeRowLabel(0, 1, 0, true), "   <- nearest");
  EXPECT_EQ(mn::nodeRowLabel(2, 1, 0, true), "");
  // --node naming the nearest node anyway.
  EXPECT_EQ(mn::nodeRowLabel(0, 0, 0, true), "   <- --node target, also the nearest");
  // No nearest node known (-1): only the target is marked.
  EXPECT_EQ(mn::nodeRowLabel(1, 1, -1, true), "   <- --node target");
  EXPECT_EQ(mn::nodeRowLabel(0, 1, -1, true), "");
}

TEST(HostNumaVmmNode, TheTargetIfItCanHoldMemoryElseTheNearestElseTheClosest) {
  FakeSysfs sysfs;
  sysfs.node(0, 1024, 512);
  sysfs.node(1, 1024, 512);
  sysfs.node(2, 0, 0);  // a node without memory (a CPU-only node)
  sysfs.distances(2, "20 11 10");
  const ms::NodeQueries nodes = sysfs.nodes();
  EXPECT_EQ(mn::hostNumaVmmNode(0, 1, 0, nodes).node, 1);
  EXPECT_EQ(mn::hostNumaVmmNode(0, 1, 0, nodes).reason, "");
  const mn::HostNumaVmmNode empty = mn::hostNumaVmmNode(0, 2, 0, nodes);
  EXPECT_EQ(empty.node, 0);  // no memory: the nearest node
  EXPECT_EQ(empty.reason, "node 2 holds no host memory: the nearest node");
  EXPECT_EQ(mn::hostNumaVmmNode(0, 7, 1, nodes).node, 1);  // does not exist: the nearest node
  // No usable nearest node either: the closest node with memory to the target, not node 0.
  const mn::HostNumaVmmNode closest = mn::hostNumaVmmNode(0, 2, -1, nodes);
  EXPECT_EQ(closest.node, 1);
  EXPECT_EQ(closest.reason, "node 2 holds no host memory: the closest node with memory");
  // Memory that cannot be read does not disqualify the target: the driver has the last word.
  ms::NodeQueries unknown;
  unknown.memory = [](int) { return memsamples::NodeMemory{}; };
  EXPECT_EQ(mn::hostNumaVmmNode(0, 3, 0, unknown).node, 3);
  // No NUMA at all (no node known): 0, as cuda.h asks.
  EXPECT_EQ(mn::hostNumaVmmNode(0, -1, -1, ms::NodeQueries{}).node, 0);
}

TEST(HostNumaVmmNode, NodeZeroMissingWhileNodeOneHasMemory) {
  FakeSysfs sysfs;
  sysfs.node(1, 1024, 512);
  sysfs.node(2, 1024, 512);
  const ms::NodeQueries nodes = sysfs.nodes();
  EXPECT_EQ(mn::hostNumaVmmNode(3, -1, -1, nodes).node, 1);  // not node 0: it does not exist
  EXPECT_EQ(mn::hostNumaVmmNode(3, 0, -1, nodes).node, 1);
}

TEST(HostNumaVmmNode, DriverWithoutNumaMeansIdZero) {
  // CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = -1 with host-NUMA VMM supported: cuda.h's "no NUMA" case.
  FakeSysfs sysfs;
  sysfs.node(0, 1024, 512);
  sysfs.node(1, 1024, 512);
  const mn::HostNumaVmmNode choice = mn::hostNumaVmmNode(-1, 1, 1, sysfs.nodes());
  EXPECT_EQ(choice.node, 0);
  EXPECT_EQ(choice.reason,
            "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID is -1, the driver sees no NUMA: id 0, as cuda.h "
            "asks");
  EXPECT_EQ(mn::hostNumaVmmNode(-1, 0, 0, sysfs.nodes()).reason, "");
}

TEST(HostNumaVmmNode, GpuMemoryIsNotAHostNumaLocation) {
  FakeSysfs sysfs;
  sysfs.node(0, 1024, 512);
  sysfs.node(1, 1024, 512);  // device 0's HBM
  sysfs.distances(1, "40 10");
  const mn::HostNumaVmmNode choice = mn::hostNumaVmmNode(0, 1, -1, sysfs.nodes({{1, 0}}));
  EXPECT_EQ(choice.node, 0);
  EXPECT_EQ(choice.reason, "node 1 holds no host memory: the closest node with memory");
}

// A device that cannot register host memory waives the sample before anything is allocated, and
// the WAIVED line names the attribute and the device, as 06_perDeviceResource's does; any nonzero
// answer lets the run go on.
TEST(RequireHostRegister, WaivesNamingTheAttributeAndTheDeviceOnlyWhereItIsZero) {
  EXPECT_NO_THROW(mn::requireHostRegister(0, 1));
  EXPECT_NO_THROW(mn::requireHostRegister(3, 2));
  try {
    mn::requireHostRegister(0, 0);
    FAIL() << "no WaivedError for CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED = 0";
  } catch (const ms::WaivedError& waived) {
    EXPECT_STREQ(waived.what(),
                 "device 0 cannot register host memory (CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED "
                 "= 0), which the mbind path and the nearest-vs-remote table need");
  }
  try {
    mn::requireHostRegister(5, 0);
    FAIL() << "no WaivedError for device 5";
  } catch (const ms::WaivedError& waived) {
    EXPECT_EQ(std::string(waived.what()).rfind("device 5 cannot register host memory", 0), 0u);
  }
}
