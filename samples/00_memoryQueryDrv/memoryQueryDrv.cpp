/**
 * @file memoryQueryDrv.cpp
 * @brief What this machine supports for each memory technique in the collection.
 *
 * Run this first on a new machine: every other sample waives (exit 2) when a capability it needs
 * is missing, and this report says in advance which ones will. For each device it asks the
 * driver, without allocating anything:
 *
 * 1. **Identity:** name, compute capability, SMs, memory, PCI bus id (cuDeviceGetName,
 *    cuDeviceGetAttribute, cuDeviceTotalMem, cuDeviceGetPCIBusId).
 * 2. **Virtual memory management** (02_vectorAddMMAP, 05_p2pMemMap):
 *    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, and cuMemGetAllocationGranularity
 *    for pinned device memory. The *minimum* granularity is what cuMemCreate requires its size
 *    to be a multiple of, and cuMemMap its address, size and offset; the *recommended* one is
 *    what the driver suggests for performance. cuMemAddressReserve itself asks only for a
 *    multiple of the host page size and a power-of-two alignment.
 * 3. **Managed memory** (03_managedAdvisePrefetch): whether cuMemAllocManaged works at all, and
 *    whether the GPU and CPU may touch managed pages concurrently (needed for prefetch and
 *    advice to mean anything, and for batch prefetch). Pageable memory access says whether the
 *    GPU can read plain malloc() memory (HMM or ATS systems).
 * 4. **Host NUMA** (04_numaHostAlloc): the node nearest the GPU from the driver
 *    (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID) *and* from sysfs (`/sys/bus/pci/devices/<bdf>/numa_node`),
 *    since they can disagree: on a VM the driver may say 0 where the kernel says -1 (unknown).
 *    Whether cuMemCreate accepts CU_MEM_LOCATION_TYPE_HOST_NUMA, and its granularity. A driver
 *    attribute of -1 means the system has no NUMA; cuda.h then asks for location id 0.
 * 5. **Theoretical memory bandwidth:** memory clock x 2 (double data rate) x bus width, the
 *    ceiling the bandwidth figures of the other samples are compared with.
 * 6. **Peer access** (05_p2pMemMap): the cuDeviceCanAccessPeer matrix with the link's
 *    performance rank and native-atomic support (cuDeviceGetP2PAttribute).
 *
 * The verdict is PASS when every query succeeded and the answers agree with each other: a device
 * that reports VMM support must report a non-zero granularity with the recommended one a
 * multiple of the minimum, for device memory and for the HOST_NUMA location; one that reports
 * concurrent managed access must report managed memory. No context is needed for any of
 * these queries.
 */
#include <iomanip>
#include <iostream>
#include <sstream>

#include "memsamples.hpp"
#include "support/devices.hpp"
#include "support/numa_sysfs.hpp"

namespace ms = memsamples;

namespace {

struct Options {
  ms::CommonOptions common;
  std::string sysfsRoot = "/sys";
};

/// One device's answers, kept as text for the table and as typed values for JSON.
struct DeviceReport {
  std::vector<std::pair<std::string, std::string>> rows;
  ms::JsonObject json;
  bool consistent = true;
};

std::string yesNo(int value) {
  return value ? "yes" : "no";
}

/// Minimum and recommended cuMemCreate granularity for @p location; 0 when not supported.
std::pair<std::size_t, std::size_t> granularity(CUmemLocationType type, int id) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = type;
  prop.location.id = id;
  std::size_t minimum = 0, recommended = 0;
  ms::check(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity");
  ms::check(
      cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
      "cuMemGetAllocationGranularity");
  return {minimum, recommended};
}

DeviceReport queryDevice(CUdevice device, int ordinal, const Options& options) {
  DeviceReport report;
  const auto attribute = [device](CUdevice_attribute which) {
    int value = 0;
    ms::check(cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute");
    return value;
  };
  const auto add = [&report](const std::string& label, const std::string& value) {
    report.rows.emplace_back(label, value);
  };

  // 1. Identity.
  std::size_t totalBytes = 0;
  ms::check(cuDeviceTotalMem(&totalBytes, device), "cuDeviceTotalMem");
  char busId[32] = {};
  ms::check(cuDeviceGetPCIBusId(busId, sizeof busId, device), "cuDeviceGetPCIBusId");
  const int major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  const int sms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  char name[256] = {};
  ms::check(cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName");
  add("Name", name);
  add("Compute capability", std::to_string(major) + "." + std::to_string(minor));
  add("Multiprocessors", std::to_string(sms));
  add("Global memory", ms::formatBytes(totalBytes));
  add("PCI bus id", busId);
  report.json.set("ordinal", ordinal)
      .set("name", name)
      .set("computeCapability", std::to_string(major) + "." + std::to_string(minor))
      .set("multiprocessors", sms)
      .set("totalBytes", static_cast<std::uint64_t>(totalBytes))
      .set("pciBusId", busId);

  // 2. Virtual memory management.
  const int vmm = attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
  add("VMM (cuMemCreate/cuMemMap)", yesNo(vmm));
  report.json.set("vmmSupported", vmm != 0);
  if (vmm) {
    const auto [minimum, recommended] = granularity(CU_MEM_LOCATION_TYPE_DEVICE, ordinal);
    add("  granularity min / recommended",
        ms::formatBytes(minimum) + " / " + ms::formatBytes(recommended));
    report.json.set("granularityMinBytes", static_cast<std::uint64_t>(minimum))
        .set("granularityRecommendedBytes", static_cast<std::uint64_t>(recommended));
    report.consistent &= minimum > 0 && recommended % minimum == 0;
  }

  // 3. Managed and pageable memory.
  const int managed = attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  const int concurrent = attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  const int pageable = attribute(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
  const int hostPageTables =
      attribute(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
  add("Managed memory", yesNo(managed));
  add("  concurrent managed access", yesNo(concurrent));
  add("Pageable memory access", yesNo(pageable));
  add("  via host page tables (ATS)", yesNo(hostPageTables));
  report.consistent &= managed || !concurrent;
  report.json.set("managedMemory", managed != 0)
      .set("concurrentManagedAccess", concurrent != 0)
      .set("pageableMemoryAccess", pageable != 0)
      .set("pageableAccessUsesHostPageTables", hostPageTables != 0);

  // 4. Host NUMA: both sources.
  const int driverNode = attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
  const ms::PciNumaNode sysfsNode = ms::readPciNumaNode(options.sysfsRoot, busId);
  const int hostNumaVmm =
      attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
  add("Host NUMA node (driver attribute)", std::to_string(driverNode));
  add("Host NUMA node (sysfs)",
      std::to_string(sysfsNode.node) +
          (sysfsNode.problem.empty() ? "" : " (" + sysfsNode.problem + ")"));
  if (driverNode != sysfsNode.node)
    add("  note", "the two sources disagree (-1 = unknown)");
  add("Host-NUMA VMM (HOST_NUMA location)", yesNo(hostNumaVmm));
  report.json.set("hostNumaIdAttribute", driverNode)
      .set("hostNumaIdSysfs", sysfsNode.node)
      .set("sysfsNumaNodePath", sysfsNode.path)
      .set("hostNumaVmmSupported", hostNumaVmm != 0);
  if (hostNumaVmm) {
    // -1 is no contradiction: without NUMA the one host location is id 0.
    const int locationId = ms::hostNumaLocationId(driverNode);
    if (locationId != driverNode)
      add("  location id", std::to_string(locationId) + " (no NUMA: cuda.h asks for id 0)");
    report.json.set("hostNumaLocationId", locationId);
    const auto [minimum, recommended] = granularity(CU_MEM_LOCATION_TYPE_HOST_NUMA, locationId);
    add("  granularity min / recommended",
        ms::formatBytes(minimum) + " / " + ms::formatBytes(recommended));
    report.json.set("hostNumaGranularityMinBytes", static_cast<std::uint64_t>(minimum))
        .set("hostNumaGranularityRecommendedBytes", static_cast<std::uint64_t>(recommended));
    report.consistent &= minimum > 0 && recommended % minimum == 0;
  }
  const int pools = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
  add("Memory pools (cuMemAllocAsync)", yesNo(pools));
  report.json.set("memoryPoolsSupported", pools != 0);

  // 5. Bandwidth ceiling.
  const int clockKHz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  const int busBits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  const double peak = ms::peakBandwidthGBps(clockKHz, busBits);
  std::ostringstream peakText;
  peakText << std::fixed << std::setprecision(1) << peak << " GB/s (" << clockKHz / 1000
           << " MHz x 2 x " << busBits << " bit)";
  add("Theoretical memory bandwidth", peakText.str());
  report.json.set("memoryClockKHz", clockKHz)
      .set("busWidthBits", busBits)
      .set("theoreticalPeakGBps", peak);
  return report;
}

ms::Verdict runQuery(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::checkDriverInit(cuInit(0));
  int driverVersion = 0;
  ms::check(cuDriverGetVersion(&driverVersion), "cuDriverGetVersion");
  int count = 0;
  ms::check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0)
    throw ms::WaivedError("no CUDA device found");

  // A CUdevice is a handle, not an ordinal: get each one once and index them by ordinal.
  std::vector<CUdevice> handles(static_cast<std::size_t>(count));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    ms::check(cuDeviceGet(&handles[static_cast<std::size_t>(ordinal)], ordinal), "cuDeviceGet");
  }
  std::vector<int> reported;
  if (options.common.device) {
    reported.push_back(ms::validateDeviceOrdinal(*options.common.device, count));
  } else {
    for (int ordinal = 0; ordinal < count; ++ordinal)
      reported.push_back(ordinal);
  }
  const auto handle = [&handles](int ordinal) {
    return handles[static_cast<std::size_t>(ordinal)];
  };
  out << "CUDA driver " << driverVersion / 1000 << "." << driverVersion % 1000 / 10 << ", " << count
      << (count == 1 ? " device" : " devices") << "\n\n";

  bool consistent = true;
  ms::JsonArray jsonDevices;
  for (const int ordinal : reported) {
    const DeviceReport deviceReport = queryDevice(handle(ordinal), ordinal, options);
    out << "Device " << ordinal << '\n';
    for (const auto& [label, value] : deviceReport.rows) {
      out << "  " << std::left << std::setw(38) << label << value << '\n';
    }
    out << '\n';
    consistent &= deviceReport.consistent;
    jsonDevices.addRaw(deviceReport.json.dump());
  }

  // 6. Peer access matrix over all devices: row = accessing device, column = owner.
  out << "Peer access (row can access column's memory; rank = link performance, A = native "
         "atomics)\n      ";
  for (int owner = 0; owner < count; ++owner)
    out << std::setw(10) << ("dev " + std::to_string(owner));
  out << '\n';
  ms::JsonArray jsonPeers;
  for (int accessor = 0; accessor < count; ++accessor) {
    out << "  " << std::setw(4) << accessor;
    for (int owner = 0; owner < count; ++owner) {
      if (accessor == owner) {
        out << std::setw(10) << "-";
        continue;
      }
      int canAccess = 0, rank = 0, atomics = 0;
      ms::check(cuDeviceCanAccessPeer(&canAccess, handle(accessor), handle(owner)),
                "cuDeviceCanAccessPeer");
      if (canAccess) {
        ms::check(cuDeviceGetP2PAttribute(&rank, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,
                                          handle(accessor), handle(owner)),
                  "cuDeviceGetP2PAttribute");
        ms::check(cuDeviceGetP2PAttribute(&atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                                          handle(accessor), handle(owner)),
                  "cuDeviceGetP2PAttribute");
      }
      out << std::setw(10)
          << (canAccess ? "rank " + std::to_string(rank) + (atomics ? " A" : "")
                        : std::string("no"));
      ms::JsonObject pair;
      pair.set("accessor", accessor).set("owner", owner).set("canAccessPeer", canAccess != 0);
      if (canAccess)
        pair.set("performanceRank", rank).set("nativeAtomics", atomics != 0);
      jsonPeers.addRaw(pair.dump());
    }
    out << '\n';
  }
  if (count == 1)
    out << "  (one device: no peers)\n";

  report.json()
      .set("driverVersion", driverVersion)
      .set("deviceCount", count)
      .set("devices", jsonDevices)
      .set("peerAccess", jsonPeers);
  if (!consistent) {
    out << "Inconsistent answers: VMM without a usable granularity, or concurrent managed "
           "access without managed memory\n";
  }
  return consistent ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "memoryQueryDrv",
      "Reports, per CUDA device, the memory capabilities the other samples rely on: VMM and its "
      "granularity, managed and pageable access, host NUMA node, peer access, peak bandwidth.");
  commandLine.addCommonOptions(options.common, /*timed=*/false);
  commandLine.addString("sysfs-root", "where sysfs is mounted (default /sys)", options.sysfsRoot,
                        "DIR");
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runQuery(options, report); });
}
