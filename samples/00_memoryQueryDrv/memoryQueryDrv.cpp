/**
 * @file memoryQueryDrv.cpp
 * @brief What this machine supports for each memory technique in the collection.
 *
 * Run this first on a new machine: every other sample waives (exit 2) when a capability
 * it needs is missing, and this report says in advance which ones will. runQuery() asks
 * the driver, without creating a context or allocating anything, so there is nothing to
 * release:
 *
 * 1. Load the driver, and find the devices: **cuInit**, **cuDriverGetVersion**,
 *    **cuDeviceGetCount**, and **cuDeviceGet** once per ordinal.
 * 2. Identity: name, compute capability, SMs, memory, PCI bus id (**cuDeviceGetName**,
 *    **cuDeviceGetAttribute**, **cuDeviceTotalMem**, **cuDeviceGetPCIBusId**), and the
 *    compute mode: who may create contexts on the device (PROHIBITED: nobody, so every
 *    other sample waives there; EXCLUSIVE_PROCESS: one process at a time, so
 *    07_memMapIPC, whose workers are processes of their own, waives there).
 * 3. Virtual memory management (02_vectorAddMMAP, 05_p2pMemMap):
 *    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, and
 *    **cuMemGetAllocationGranularity** for pinned device memory. The *minimum*
 *    granularity is what cuMemCreate requires its size to be a multiple of, and
 *    cuMemMap its address, size and offset; the *recommended* one is what the driver
 *    suggests for performance. cuMemAddressReserve itself asks only for a multiple of
 *    the host page size and a power-of-two alignment.
 * 4. Managed and pageable memory (03_managedAdvisePrefetch): whether cuMemAllocManaged
 *    works at all, and whether the GPU and CPU may touch managed pages concurrently
 *    (needed for prefetch and advice to mean anything, and for batch prefetch).
 *    Pageable memory access says whether the GPU can read plain malloc() memory (HMM or
 *    ATS systems).
 * 5. Host NUMA (04_numaHostAlloc): the node nearest the GPU from the driver
 *    (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID) *and* from sysfs
 *    (`/sys/bus/pci/devices/<bdf>/numa_node`), since they can disagree: on a VM the
 *    driver may say 0 where the kernel says -1 (unknown). Whether cuMemCreate accepts
 *    CU_MEM_LOCATION_TYPE_HOST_NUMA, and its granularity. A driver attribute of -1
 *    means the system has no NUMA; cuda.h then asks for location id 0. And whether the
 *    device has memory pools (cuMemAllocAsync).
 * 6. Theoretical memory bandwidth: memory clock x 2 (double data rate) x bus width, the
 *    ceiling the bandwidth figures of the other samples are compared with.
 * 7. Atomics on host memory: which atomic operations the device does natively over its
 *    link to the host, and at which widths (**cuDeviceGetHostAtomicCapabilities**). A
 *    refusal is kept and shown, not failed.
 * 8. Every pair of devices (05_p2pMemMap, 08_multicastReduce): the
 *    **cuDeviceCanAccessPeer** matrix with the link's performance rank and native-atomic
 *    support (**cuDeviceGetP2PAttribute**), and which atomic operations the link does
 *    natively (**cuDeviceGetP2PAtomicCapabilities**, the peer twin of step 7). A driver
 *    may refuse those (some virtual GPUs do): the report then shows "?" for them. One
 *    GPU has no pairs, so nothing is asked there.
 * 9. The verdict: PASS when every query succeeded (a refused link or atomics answer
 *    aside) and the answers agree with each other (answersAgree(), in
 *    memoryQueryDrv_report.cpp).
 *
 * Steps 1 to 7 are the core region, what each device supports; step 8 is the second one
 * (core-b), what each pair of devices supports. The two helpers attribute() and
 * granularity() wrap cuDeviceGetAttribute and cuMemGetAllocationGranularity. The answers
 * are printed by memoryQueryDrv_report.cpp, after every question was asked.
 */
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "memoryQueryDrv_report.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;

namespace {

// The lesson's own helpers, defined below it.
std::vector<int> ordinalsToReport(const std::optional<long long>& requested, int deviceCount);

/// cuDeviceGetAttribute as a value: most of the lesson's answers are device attributes.
int attribute(CUdevice device, CUdevice_attribute which) {
  int value = 0;
  ms::check(cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute");
  return value;
}

/// The minimum and recommended cuMemGetAllocationGranularity, asked with the
/// CUmemAllocationProp that cuMemCreate would be given: pinned memory at a location (a
/// device, or a host NUMA node).
// [granularity]
Granularity granularity(CUmemLocationType type, int id) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = type;
  prop.location.id = id;

  Granularity g;
  ms::check(cuMemGetAllocationGranularity(&g.minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity");
  ms::check(
      cuMemGetAllocationGranularity(&g.recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
      "cuMemGetAllocationGranularity");
  return g;
}
// [granularity]

/// The lesson: every query, in the order it is made, then the report and the verdict.
ms::Verdict runQuery(const ms::CommonOptions& common, const std::string& sysfsRoot,
                     ms::Report& report) {
  std::ostream& out = report.out();

  //! [core]
  // 1. Load the driver, and find the devices. A CUdevice is a handle, not an ordinal:
  // get each one once, and index them by ordinal.
  ms::checkDriverInit(cuInit(0));
  int driverVersion = 0;
  ms::check(cuDriverGetVersion(&driverVersion), "cuDriverGetVersion");
  int count = 0;
  ms::check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  std::vector<CUdevice> devices(static_cast<std::size_t>(count));
  for (int ordinal = 0; ordinal < count; ++ordinal)
    ms::check(cuDeviceGet(&devices[ordinal], ordinal), "cuDeviceGet");

  std::vector<DeviceAnswers> answers;  // every device, or only --device N
  for (const int ordinal : ordinalsToReport(common.device, count)) {
    const CUdevice device = devices[ordinal];
    DeviceAnswers& d = answers.emplace_back();
    d.ordinal = ordinal;

    // 2. Identity: what the device is, and its PCI bus id, which names it in sysfs. The
    // compute mode says who may create contexts on it: a query needs no context.
    ms::check(cuDeviceGetName(d.name, sizeof d.name, device), "cuDeviceGetName");
    d.computeMajor = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d.computeMinor = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    d.multiprocessors = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    ms::check(cuDeviceTotalMem(&d.totalBytes, device), "cuDeviceTotalMem");
    ms::check(cuDeviceGetPCIBusId(d.pciBusId, sizeof d.pciBusId, device), "cuDeviceGetPCIBusId");
    d.computeMode = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);

    // 3. Virtual memory management: cuMemCreate and cuMemMap, and their granularity.
    d.vmm = attribute(device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
    if (d.vmm)
      d.granularity = granularity(CU_MEM_LOCATION_TYPE_DEVICE, ordinal);

    // 4. Managed and pageable memory.
    d.managed = attribute(device, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
    d.concurrentManaged = attribute(device, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
    d.pageable = attribute(device, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
    d.pageableUsesHostPageTables =
        attribute(device, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);

    // 5. Host NUMA: the node nearest the device from the driver and from the kernel,
    // which may disagree, and whether cuMemCreate may place memory on a host node.
    d.hostNumaIdAttribute = attribute(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
    d.hostNumaSysfs = ms::readPciNumaNode(sysfsRoot, d.pciBusId);
    d.hostNumaVmm =
        attribute(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
    if (d.hostNumaVmm) {
      d.hostNumaLocationId = ms::hostNumaLocationId(d.hostNumaIdAttribute);  // -1 (no NUMA): 0
      d.hostNumaGranularity = granularity(CU_MEM_LOCATION_TYPE_HOST_NUMA, d.hostNumaLocationId);
    }
    d.memoryPools = attribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);

    // 6. The bandwidth ceiling: memory clock x 2 (double data rate) x bus width / 8.
    d.memoryClockKHz = attribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    d.busWidthBits = attribute(device, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    d.peakGBps = ms::peakBandwidthGBps(d.memoryClockKHz, d.busWidthBits);

    // 7. Atomics on host memory: which operations the link to the host does natively. Kept,
    // not checked, like step 8's; asked where the driver has it (a weak import, else null).
    if (cuDeviceGetHostAtomicCapabilities != nullptr)
      d.hostAtomics.answer = cuDeviceGetHostAtomicCapabilities(
          d.hostAtomics.capabilities.data(), kAtomicOperations.data(), kAtomicCount, device);
  }
  //! [core]

  //! [core-b]
  // 8. Every ordered pair of devices, also with --device N: may the accessor map the owner's
  // memory, how good is their link, which atomics does it do? One GPU has no pairs.
  std::vector<PeerAnswer> peers;
  for (int accessor = 0; accessor < count; ++accessor) {
    for (int owner = 0; owner < count; ++owner) {
      if (accessor == owner)
        continue;
      PeerAnswer& p = peers.emplace_back();
      p.accessor = accessor;
      p.owner = owner;
      const CUdevice from = devices[accessor];
      const CUdevice to = devices[owner];

      ms::check(cuDeviceCanAccessPeer(&p.canAccess, from, to), "cuDeviceCanAccessPeer");
      if (!p.canAccess)
        continue;

      // The link's answers only describe it, and a driver may refuse them: they are
      // kept, not checked, so that a refusal shows as "?" and the report goes on.
      p.rankAnswer =
          cuDeviceGetP2PAttribute(&p.rank, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, from, to);
      p.atomicsAnswer = cuDeviceGetP2PAttribute(
          &p.atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, from, to);
      if (cuDeviceGetP2PAtomicCapabilities != nullptr)
        p.atomicOperations.answer =
            cuDeviceGetP2PAtomicCapabilities(p.atomicOperations.capabilities.data(),
                                             kAtomicOperations.data(), kAtomicCount, from, to);
    }
  }
  //! [core-b]

  // 9. The report, then the verdict: PASS when every query succeeded (a refused link or
  // atomics answer aside) and each device's answers agree.
  ms::JsonArray jsonDevices;
  ms::JsonArray jsonPeers;
  ms::JsonArray jsonPeerAtomics;
  reportDriver(driverVersion, count, out);
  bool agree = true;
  for (const DeviceAnswers& d : answers) {
    reportDevice(d, driverVersion, out, jsonDevices);
    agree = answersAgree(d) && agree;
  }
  reportPeers(peers, count, driverVersion, out, jsonPeers, jsonPeerAtomics);
  report.json()
      .set("driverVersion", driverVersion)
      .set("deviceCount", count)
      .set("devices", jsonDevices)
      .set("peerAccess", jsonPeers)
      .set("peerAtomics", jsonPeerAtomics);
  // answersAgree() also checks the HOST_NUMA granularities, which the first clause covers.
  if (!agree) {
    out << "Inconsistent answers: VMM without a usable granularity, or concurrent "
           "managed access without managed memory\n";
  }
  return agree ? ms::Verdict::Pass : ms::Verdict::Fail;
}

/// The ordinals to report: `--device N` alone (validated), or every device. No device at
/// all waives the sample.
std::vector<int> ordinalsToReport(const std::optional<long long>& requested, int deviceCount) {
  if (deviceCount == 0)
    throw ms::WaivedError("no CUDA device found");
  if (requested)
    return {ms::validateDeviceOrdinal(*requested, deviceCount)};

  std::vector<int> ordinals;
  for (int ordinal = 0; ordinal < deviceCount; ++ordinal)
    ordinals.push_back(ordinal);
  return ordinals;
}

}  // namespace

/// Parses the options and hands the lesson to runSample(), which owns output and exit
/// codes.
int main(int argc, char** argv) {
  ms::CommonOptions common;
  std::string sysfsRoot = "/sys";
  ms::CommandLine commandLine(
      "memoryQueryDrv",
      "Reports, per CUDA device, the memory capabilities the other samples rely on: VMM "
      "and its granularity, managed and pageable access, host NUMA node, peer access, "
      "peak bandwidth.");
  commandLine.addCommonOptions(common, /*timed=*/false);
  commandLine.addString("sysfs-root", "where sysfs is mounted (default /sys)", sysfsRoot,
                        "DIR");

  return ms::runSample(commandLine, common, argc, argv, [&](ms::Report& report) {
    return runQuery(common, sysfsRoot, report);
  });
}
