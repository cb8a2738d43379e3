/**
 * @file numaHostAlloc.cpp
 * @brief Host memory on the NUMA node nearest the GPU: bound with mbind before first touch,
 *        verified, registered with CUDA and measured; next to the CUDA-native
 *        cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA) and the cuMemHostAlloc reference.
 *
 * On a machine with several CPU sockets, host memory behind the socket the GPU is attached to is
 * one interconnect hop closer than the rest; the GPU reads and writes it faster. Linux places a
 * page when it is first touched, so the placement has to be decided *before* that.
 *
 * 1. **Sizes and input first**, with no GPU (a strict binding to a `--node` that cannot hold one
 *    is an error before any waiver); then **cuInit**, **cuCtxCreate** and the fatbin, as in 01.
 * 2. **Topology.** CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (the driver's answer) and
 *    `/sys/bus/pci/devices/<bdf>/numa_node` for the bus id from **cuDeviceGetPCIBusId** (the
 *    kernel's answer) give the nearest node with memory (findNearestHostNode()). GPU memory that
 *    is a NUMA node (CU_DEVICE_ATTRIBUTE_NUMA_CONFIG, CU_DEVICE_ATTRIBUTE_NUMA_ID of every
 *    device) is never taken for host memory.
 * 3. **The mbind path**, every call written here: the binding rules decide first
 *    (chooseMbindMode(), which also notices a container's seccomp filter); **mmap**; **mbind**
 *    with `MPOL_F_STATIC_NODES | MPOL_BIND` (`--strict`) or `| MPOL_PREFERRED` while no page
 *    exists, its errno handed to settleBinding() (a warning or an error); **madvise** twice
 *    (MADV_HUGEPAGE, MADV_DONTFORK); the first touch; **move_pages** to see where the pages
 *    landed; **cuMemHostRegister** and **cuMemHostGetDevicePointer**; the placement once more.
 * 4. **The CUDA-native path** (HostNumaAllocation, host_numa_allocation.cpp), where
 *    CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is set: **cuMemCreate**
 *    with a CU_MEM_LOCATION_TYPE_HOST_NUMA location (id 0 where the driver sees no NUMA),
 *    **cuMemAddressReserve** + **cuMemMap**, and **cuMemSetAccess** for the device *and* for the
 *    CPU.
 * 5. **The reference**: **cuMemHostAlloc**(CU_MEMHOSTALLOC_DEVICEMAP), placed by the driver.
 * 6. **Measured** (numaHostAlloc_measure.cpp), each source while it exists: copies both ways and
 *    a zero-copy VecAdd through the device pointer, checked; GB/s and ratios to cuMemHostAlloc.
 * 7. **Nearest vs remote** (two or more nodes with memory): the copies from each node.
 * 8. Cleanup by RAII in reverse order: unregister before unmap, unmap before the addresses are
 *    freed; every error path releases what was built.
 */
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "host_layout.hpp"
#include "host_numa_allocation.hpp"
#include "memsamples.hpp"
#include "numaHostAlloc_measure.hpp"
#include "numa_binding.hpp"

namespace ms = memsamples;
namespace mn = memsamples::numa;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // per vector; each host range holds three
constexpr int kVectors = 3;                          // A, B, C
constexpr int kBlockSize = 256;  // threads per block of the VecAdd_kernel launches

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  bool noBind = false;
  bool strict = false;
  long long node = -1;  // -1: the node nearest the GPU
};

// [move-pages]
/// Where each page of a range is. move_pages with no target nodes moves nothing: it fills
/// `status` with each page's node, or -ENOENT for a page that does not exist yet. Where a filter
/// refuses it, the helper asks get_mempolicy page by page instead.
mn::PagePlacement wherePagesAre(const void* address, std::size_t bytes) {
  std::vector<void*> pages = mn::pageAddresses(address, bytes);
  std::vector<int> status(pages.size());
  if (move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0)
    return mn::placementFromPolicyQueries(pages, errno);
  return mn::placementFromStatus(status);
}
// [move-pages]

/// An attribute that older drivers may not know: @p fallback instead of an error.
int attributeOr(CUdevice device, CUdevice_attribute attribute, int fallback) {
  int value = 0;
  return cuDeviceGetAttribute(&value, attribute, device) == CUDA_SUCCESS ? value : fallback;
}

ms::Verdict runNumaHostAlloc(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();
  if (options.noBind && options.strict)
    throw ms::UsageError("--strict and --no-bind contradict each other");
  // Warnings are printed here, at once, and kept for the JSON: the helper only reports them.
  ms::JsonArray warnings;
  const mn::WarningSink warn = [&warnings](const std::string& text) {
    std::cerr << "numaHostAlloc: warning: " << text << '\n';
    warnings.add(text);
  };

  // 1. Host memory first (no GPU needed to reject a bad --size): three vectors per host source,
  // one source at a time, within MemAvailable and any container's memory limit. A strict binding
  // to a --node that cannot hold one is bad input too, reported before any GPU work.
  const std::uint64_t hostVectorBytes =
      ms::fitHostMemory(options.sizeBytes, kDefaultBytes, kVectors, sizeof(float));
  const mn::PageSizes pages = mn::systemPageSizes();  // base and transparent huge page
  const mn::BindPolicy policy{!options.noBind, options.strict};
  const bool overridden = options.node >= 0;
  if (policy.strict && overridden) {
    const int node = static_cast<int>(options.node);
    const std::string why = mn::whyNodeCannotBeBound(node, mn::queryNumaFacts(node));
    if (!why.empty())
      throw mn::NumaBindError(
          mn::strictRefusal(kVectors * mn::vectorStride(hostVectorBytes, pages.base), why));
  }
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);
  const int ordinal = ms::deviceOrdinal(device);  // a CUdevice is a handle, not an ordinal
  out << "Device " << ordinal << ": " << ms::deviceName(device) << '\n';
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
  ms::OwnedModule module;
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction kernel = nullptr;
  ms::check(cuModuleGetFunction(&kernel, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");

  // 2. Topology: the driver's and the kernel's answer.
  char busId[64] = {};
  ms::check(cuDeviceGetPCIBusId(busId, sizeof busId, device), "cuDeviceGetPCIBusId");
  const int attributeNode = attributeOr(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1);
  // GPU memory can be a NUMA node of its own (coherent Grace-class systems): it has memory, but
  // binding "host" buffers there would put them in HBM. Every device's node is marked.
  mn::NodeQueries nodes = mn::libnumaNodes();
  int deviceCount = 0;
  ms::check(cuDeviceGetCount(&deviceCount), "cuDeviceGetCount");
  for (int other = 0; other < deviceCount; ++other) {
    CUdevice handle = 0;
    ms::check(cuDeviceGet(&handle, other), "cuDeviceGet");
    int numaConfig = 0, numaId = -1;
    ms::check(cuDeviceGetAttribute(&numaConfig, CU_DEVICE_ATTRIBUTE_NUMA_CONFIG, handle),
              "cuDeviceGetAttribute");
    ms::check(cuDeviceGetAttribute(&numaId, CU_DEVICE_ATTRIBUTE_NUMA_ID, handle),
              "cuDeviceGetAttribute");
    if (numaConfig == CU_DEVICE_NUMA_CONFIG_NUMA_NODE && numaId >= 0)
      nodes.deviceMemoryNodes[numaId] = other;
  }
  const mn::HostNumaNode nearest = mn::findNearestHostNode(attributeNode, busId, nodes);
  const int target = overridden ? static_cast<int>(options.node) : nearest.node;
  const bool numaAvailable = mn::numaPolicyCallsAvailable();  // also: not refused by seccomp
  printTopology(busId, nearest, target, overridden, nodes, numaAvailable, out);
  recordTopology(json, ordinal, ms::deviceName(device), busId, nearest, target, policy);

  // The device holds one vector, the target and source of the copies.
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const std::uint64_t bytes =
      ms::chooseBufferBytes(options.sizeBytes, hostVectorBytes, freeBytes, 1, sizeof(float));
  const std::size_t stride = mn::vectorStride(bytes, pages.base);
  const std::size_t hostBytes = stride * kVectors;
  out << "Vectors: " << bytes / sizeof(float) << " floats (" << ms::formatBytes(bytes)
      << ") each; every host source holds A, B and C (" << ms::formatBytes(hostBytes) << ")\n";
  ms::OwnedDeviceMemory scratch;
  ms::check(cuMemAlloc(scratch.out(), bytes), "cuMemAlloc");
  // Declared after the memory its work uses: destroyed first, it waits for that work.
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const Workload work =
      makeWorkload(kernel, device, kBlockSize, stream.get(), scratch.get(), bytes, options.common);
  std::vector<SourceResult> results;
  bool placementOk = true;
  ms::JsonObject bindingRecord;

  // 3. The mbind path: decide, map, bind, advise, touch, check, register.
  out << "\n[1] mmap + mbind before first touch + cuMemHostRegister\n";
  {
    // [decide]
    // The rules decide before anything exists: strict or soft, a node that is missing, empty or
    // full, memory-policy calls refused by a container's seccomp filter (numa_binding.cpp).
    const mn::NumaFacts facts = policy.bind ? mn::queryNumaFacts(target, nodes) : mn::NumaFacts{};
    const mn::BindDecision decision = mn::chooseMbindMode(policy, target, hostBytes, facts);
    if (!decision.error.empty())
      throw mn::NumaBindError(decision.error);
    // [decide]
    // [map]
    // mmap only reserves addresses; no physical page exists until the first touch. A range of a
    // huge page or more gets one huge page (hpage_pmd_size, 2 MiB on x86-64) of extra addresses
    // to start on its boundary, so that transparent huge pages can back all of it; the margins
    // are never touched and hold no memory.
    const mn::RangeLayout layout = mn::hostRangeLayout(hostBytes, pages);
    const std::size_t mappedBytes = layout.mappedBytes, alignment = layout.alignment;
    void* const mapping = mmap(nullptr, layout.reservedBytes, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) {
      throw mn::NumaBindError("mmap of " + ms::formatBytes(layout.reservedBytes) +
                              " failed: " + mn::errnoText(errno));
    }
    const mn::OwnedMapping ownedMapping(mapping, layout.reservedBytes);  // munmap, after unregister
    char* const host = reinterpret_cast<char*>(
        (reinterpret_cast<std::uintptr_t>(mapping) + alignment - 1) & ~(alignment - 1));
    // [map]
    // [mbind]
    // Bound while no page exists, so nothing has to move. The mask has one bit per node.
    int mbindError = 0;
    if (decision.callMbind) {
      const mn::NodeMask mask = mn::nodeMask(target);
      if (mbind(host, mappedBytes, decision.mode, mask.words.data(), mask.maxNode, 0) != 0)
        mbindError = errno;
    }
    // EPERM (a seccomp filter) is a warning even under --strict, and the first touch then checks
    // every page; another errno fails a strict binding. The helper decides and warns once.
    mn::BindOutcome binding = mn::settleBinding(decision, mbindError, policy, target, warn);
    // [mbind]
    // [madvise]
    // Advice numbers, not flags: MADV_HUGEPAGE (14) | MADV_DONTFORK (10) would ask for 14 only.
    // DONTFORK keeps a forked child from sharing the pinned pages copy-on-write. Refused advice
    // costs speed, not correctness: a warning.
    binding.hugePagesAdvised = madvise(host, mappedBytes, MADV_HUGEPAGE) == 0;
    if (!binding.hugePagesAdvised)
      warn(mn::adviceFailure(MADV_HUGEPAGE, errno));
    binding.dontForkAdvised = madvise(host, mappedBytes, MADV_DONTFORK) == 0;
    if (!binding.dontForkAdvised)
      warn(mn::adviceFailure(MADV_DONTFORK, errno));
    // [madvise]
    out << "  range: " << mn::describeBinding(hostBytes, mappedBytes, target, binding) << '\n';
    if (binding.state != mn::BindState::Bound)
      out << "  unbound: " << binding.unboundReason << '\n';
    // [first-touch]
    out << "  before first touch: " << wherePagesAre(host, mappedBytes).summary() << '\n';
    for (std::size_t offset = 0; offset < mappedBytes; offset += pages.base)
      host[offset] = 0;  // the page is created now, on the node the policy picks
    const mn::PagePlacement touched = wherePagesAre(host, mappedBytes);
    out << "  placement after first touch: " << touched.summary() << '\n';
    if (policy.strict) {
      const std::string problem = mn::strictBindingProblem(touched, target, binding.state);
      if (!problem.empty())
        throw mn::NumaBindError(problem);
    }
    // [first-touch]
    // [register]
    // Pinned, and mapped for the device: DEVICEMAP gives the range an address a kernel can use.
    ms::check(cuMemHostRegister(host, mappedBytes, CU_MEMHOSTREGISTER_DEVICEMAP),
              "cuMemHostRegister");
    const ms::OwnedHostRegistration registration(host);  // cuMemHostUnregister, before munmap
    const ms::DrainOnExit drain(stream.get());           // no copy or kernel runs when the pages go
    CUdeviceptr devicePointer = 0;
    ms::check(cuMemHostGetDevicePointer(&devicePointer, host, 0), "cuMemHostGetDevicePointer");
    // [register]
    // Long-term pinning may migrate pages first (out of ZONE_MOVABLE): look again.
    const mn::PagePlacement pinned = wherePagesAre(host, mappedBytes);
    out << "  placement after cuMemHostRegister: " << pinned.summary() << '\n';
    const std::string pinning = policy.strict ? mn::strictPlacementProblem(pinned, target) : "";
    if (!pinning.empty()) {
      out << "  strict binding broken by pinning: " << pinning << '\n';
      placementOk = false;
    }
    results.push_back(
        measureSource("mbind + cuMemHostRegister", {host, devicePointer, stride}, work));
    bindingRecord = bindingJson(binding, pinned, target);
  }

  // 4. The CUDA-native path.
  const bool hostNumaVmm =
      attributeOr(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0) !=
      0;
  out << "\n[2] cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA) + cuMemMap + cuMemSetAccess\n";
  if (!hostNumaVmm) {
    out << "  skipped: CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0\n";
  } else {
    // The driver needs a host node with memory, or id 0 where it sees no NUMA (cuda.h).
    const mn::HostNumaVmmNode vmm = mn::hostNumaVmmNode(attributeNode, target, nearest.node, nodes);
    HostNumaAllocation allocation(ordinal, vmm.node, hostBytes);
    const ms::DrainOnExit drain(stream.get());
    out << "  node " << vmm.node << (vmm.reason.empty() ? "" : " (" + vmm.reason + ")") << ", "
        << ms::formatBytes(allocation.size()) << ", granularity "
        << ms::formatBytes(allocation.granularity()) << " (minimum "
        << ms::formatBytes(allocation.minimumGranularity()) << ", recommended "
        << ms::formatBytes(allocation.recommendedGranularity()) << ")\n";
    char* const host = reinterpret_cast<char*>(allocation.address());
    results.push_back(
        measureSource("cuMemCreate(HOST_NUMA)", {host, allocation.address(), stride}, work));
    // The driver chose the pages; whether the kernel can report them depends on how the driver
    // maps them into the process, so this line is information, not a check.
    out << "  placement as the kernel reports it: "
        << wherePagesAre(host, allocation.size()).summary() << '\n';
    allocation.release();  // cuMemUnmap + cuMemAddressFree, failures reported
  }

  // 5. The reference: cuMemHostAlloc, placed by the driver.
  {
    out << "\n[3] cuMemHostAlloc (reference)\n";
    ms::OwnedPinnedHostMemory pinned;
    ms::check(cuMemHostAlloc(pinned.out(), hostBytes, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
    const ms::DrainOnExit drain(stream.get());
    CUdeviceptr devicePointer = 0;
    ms::check(cuMemHostGetDevicePointer(&devicePointer, pinned.get(), 0),
              "cuMemHostGetDevicePointer");
    char* const host = static_cast<char*>(pinned.get());
    results.push_back(
        measureSource("cuMemHostAlloc (reference)", {host, devicePointer, stride}, work));
    out << "  placement: " << wherePagesAre(host, hostBytes).summary() << '\n';
  }

  // 6. The comparison; 7. nearest vs remote nodes (numaHostAlloc_measure.cpp).
  printComparison(results, work, out);
  const ms::JsonArray nodeRows = compareNodes(
      {policy, target, nearest.node, overridden, numaAvailable, stride, nodes}, work, warn, out);
  const bool dataOk = reportDataChecks(results, out);
  recordResults(json, bindingRecord, hostNumaVmm, work, results, nodeRows, warnings);
  // 8. Cleanup: the owners release the stream (after its work), the device buffer, the module
  // and the context.
  return dataOk && placementOk ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "numaHostAlloc",
      "Binds host memory to the NUMA node nearest the GPU with mbind before first touch, checks "
      "where the pages landed, registers it with CUDA and compares its bandwidth with "
      "cuMemCreate(HOST_NUMA) and cuMemHostAlloc.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4 (default 1G, less if memory is short); "
                      "each host source holds three",
                      options.sizeBytes);
  commandLine.addFlag("strict",
                      "MPOL_BIND: every page on the node or an error (default: MPOL_PREFERRED)",
                      options.strict);
  commandLine.addFlag("no-bind", "do not bind the host memory (no mbind call)", options.noBind);
  commandLine.addInteger("node", "bind to this NUMA node instead of the one nearest the GPU",
                         options.node, 0, 1023);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runNumaHostAlloc(options, report); });
}
