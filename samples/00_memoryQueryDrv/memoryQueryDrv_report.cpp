// 00_memoryQueryDrv's report: the answers as text and JSON (see memoryQueryDrv_report.hpp).
#include "memoryQueryDrv_report.hpp"

#include <algorithm>
#include <iomanip>
#include <iterator>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>

namespace ms = memsamples;

namespace {

std::string yesNo(int value) {
  return value ? "yes" : "no";
}

std::string formatGranularity(const Granularity& granularity) {
  return ms::formatBytes(granularity.minimum) + " / " + ms::formatBytes(granularity.recommended);
}

/// What the compute mode means for the other samples; "" for DEFAULT, which restricts nothing.
std::string computeModeConsequence(int mode) {
  switch (mode) {
    case CU_COMPUTEMODE_DEFAULT:
      return "";
    case CU_COMPUTEMODE_PROHIBITED:
      return "no context can be created: every other sample waives here";
    case CU_COMPUTEMODE_EXCLUSIVE_PROCESS:
      return "one process at a time: 07_memMapIPC (several processes) waives here";
    default:
      return "unknown to this build: the driver decides";
  }
}

/// The names of kAtomicOperations, in the same order: text, then JSON.
constexpr const char* kOperationNames[] = {
    "integer add", "integer min", "integer max", "increment", "decrement", "and",      "or",
    "xor",         "exchange",    "CAS",         "float add", "float min", "float max"};
constexpr const char* kOperationKeys[] = {
    "integerAdd", "integerMin", "integerMax", "increment", "decrement", "and",     "or",
    "xor",        "exchange",   "cas",        "floatAdd",  "floatMin",  "floatMax"};
static_assert(std::size(kOperationNames) == kAtomicOperations.size() &&
              std::size(kOperationKeys) == kAtomicOperations.size());

/// One CUatomicOperationCapability mask in words: "signed unsigned 32-bit 64-bit".
std::string capabilityText(unsigned int mask) {
  const std::pair<unsigned int, const char*> bits[] = {
      {CU_ATOMIC_CAPABILITY_SIGNED, "signed"},
      {CU_ATOMIC_CAPABILITY_UNSIGNED, "unsigned"},
      {CU_ATOMIC_CAPABILITY_REDUCTION, "reduction"},
      {CU_ATOMIC_CAPABILITY_SCALAR_32, "32-bit"},
      {CU_ATOMIC_CAPABILITY_SCALAR_64, "64-bit"},
      {CU_ATOMIC_CAPABILITY_SCALAR_128, "128-bit"},
      {CU_ATOMIC_CAPABILITY_VECTOR_32x4, "32x4-vector"}};
  std::string text;
  for (const auto& [bit, name] : bits) {
    if ((mask & bit) != 0)
      text += (text.empty() ? "" : " ") + std::string(name);
  }
  return text;
}

/// What an atomic-capability query answered, in words: the native operations grouped by their
/// capabilities ("integer add, CAS: 32-bit 64-bit; float add: 32-bit"), "none native" when the
/// link does none, the refusal after "? ", or why it was not asked (@p entryPoint missing).
std::string atomicsText(const AtomicAnswers& atomics, const char* entryPoint, int driverVersion) {
  if (!atomics.answer) {
    return std::string("not asked: the NVIDIA driver (CUDA ") +
           ms::formatCudaVersion(driverVersion) + ") has no " + entryPoint;
  }
  if (*atomics.answer != CUDA_SUCCESS)
    return std::string("? ") + entryPoint + ": " + ms::describeResult(*atomics.answer);

  std::vector<bool> done(kAtomicOperations.size(), false);
  std::string text;
  for (std::size_t k = 0; k < kAtomicOperations.size(); ++k) {
    const unsigned int mask = atomics.capabilities[k];
    if (mask == 0 || done[k])
      continue;
    std::string names;
    for (std::size_t same = k; same < kAtomicOperations.size(); ++same) {
      if (atomics.capabilities[same] != mask)
        continue;
      names += (names.empty() ? "" : ", ") + std::string(kOperationNames[same]);
      done[same] = true;
    }
    text += (text.empty() ? "" : "; ") + names + ": " + capabilityText(mask);
  }
  return text.empty()
             ? "none native (of " + std::to_string(kAtomicOperations.size()) + " operations asked)"
             : text;
}

/// The answers as JSON: one capability mask per operation, or why there are none.
ms::JsonObject atomicsJson(const AtomicAnswers& atomics) {
  ms::JsonObject object;
  object.set("asked", atomics.answer.has_value());
  if (atomics.answer && *atomics.answer != CUDA_SUCCESS)
    object.set("queryFailed", ms::describeResult(*atomics.answer));
  if (atomics.answer && *atomics.answer == CUDA_SUCCESS) {
    for (std::size_t k = 0; k < kAtomicOperations.size(); ++k)
      object.set(kOperationKeys[k], static_cast<std::uint64_t>(atomics.capabilities[k]));
  }
  return object;
}

}  // namespace

void reportDriver(int driverVersion, int deviceCount, std::ostream& out) {
  out << "CUDA driver " << driverVersion / 1000 << "." << driverVersion % 1000 / 10 << ", "
      << deviceCount << (deviceCount == 1 ? " device" : " devices") << "\n\n";
}

void reportDevice(const DeviceAnswers& d, int driverVersion, std::ostream& out,
                  ms::JsonArray& json) {
  std::vector<std::pair<std::string, std::string>> rows;
  ms::JsonObject object;
  const auto add = [&rows](const std::string& label, const std::string& value) {
    rows.emplace_back(label, value);
  };
  const std::string computeCapability =
      std::to_string(d.computeMajor) + "." + std::to_string(d.computeMinor);

  add("Name", d.name);
  add("Compute capability", computeCapability);
  add("Multiprocessors", std::to_string(d.multiprocessors));
  add("Global memory", ms::formatBytes(d.totalBytes));
  add("PCI bus id", d.pciBusId);
  add("Compute mode", ms::computeModeName(d.computeMode));
  if (const std::string consequence = computeModeConsequence(d.computeMode); !consequence.empty())
    add("  contexts", consequence);
  object.set("ordinal", d.ordinal)
      .set("name", d.name)
      .set("computeCapability", computeCapability)
      .set("multiprocessors", d.multiprocessors)
      .set("totalBytes", static_cast<std::uint64_t>(d.totalBytes))
      .set("pciBusId", d.pciBusId)
      .set("computeMode", d.computeMode);

  add("VMM (cuMemCreate/cuMemMap)", yesNo(d.vmm));
  object.set("vmmSupported", d.vmm != 0);
  if (d.vmm) {
    add("  granularity min / recommended", formatGranularity(d.granularity));
    object.set("granularityMinBytes", static_cast<std::uint64_t>(d.granularity.minimum))
        .set("granularityRecommendedBytes", static_cast<std::uint64_t>(d.granularity.recommended));
  }

  add("Managed memory", yesNo(d.managed));
  add("  concurrent managed access", yesNo(d.concurrentManaged));
  add("Pageable memory access", yesNo(d.pageable));
  add("  via host page tables (ATS)", yesNo(d.pageableUsesHostPageTables));
  object.set("managedMemory", d.managed != 0)
      .set("concurrentManagedAccess", d.concurrentManaged != 0)
      .set("pageableMemoryAccess", d.pageable != 0)
      .set("pageableAccessUsesHostPageTables", d.pageableUsesHostPageTables != 0);

  const ms::PciNumaNode& sysfs = d.hostNumaSysfs;
  add("Host NUMA node (driver attribute)", std::to_string(d.hostNumaIdAttribute));
  add("Host NUMA node (sysfs)",
      std::to_string(sysfs.node) + (sysfs.problem.empty() ? "" : " (" + sysfs.problem + ")"));
  if (d.hostNumaIdAttribute != sysfs.node)
    add("  note", "the two sources disagree (-1 = unknown)");
  add("Host-NUMA VMM (HOST_NUMA location)", yesNo(d.hostNumaVmm));
  object.set("hostNumaIdAttribute", d.hostNumaIdAttribute)
      .set("hostNumaIdSysfs", sysfs.node)
      .set("sysfsNumaNodePath", sysfs.path)
      .set("hostNumaVmmSupported", d.hostNumaVmm != 0);
  if (d.hostNumaVmm) {
    if (d.hostNumaLocationId != d.hostNumaIdAttribute)
      add("  location id",
          std::to_string(d.hostNumaLocationId) + " (no NUMA: cuda.h asks for id 0)");
    object.set("hostNumaLocationId", d.hostNumaLocationId);
    add("  granularity min / recommended", formatGranularity(d.hostNumaGranularity));
    object
        .set("hostNumaGranularityMinBytes",
             static_cast<std::uint64_t>(d.hostNumaGranularity.minimum))
        .set("hostNumaGranularityRecommendedBytes",
             static_cast<std::uint64_t>(d.hostNumaGranularity.recommended));
  }
  add("Memory pools (cuMemAllocAsync)", yesNo(d.memoryPools));
  object.set("memoryPoolsSupported", d.memoryPools != 0);

  std::ostringstream peakText;
  peakText << std::fixed << std::setprecision(1) << d.peakGBps << " GB/s ("
           << d.memoryClockKHz / 1000 << " MHz x 2 x " << d.busWidthBits << " bit)";
  add("Theoretical memory bandwidth", peakText.str());
  object.set("memoryClockKHz", d.memoryClockKHz)
      .set("busWidthBits", d.busWidthBits)
      .set("theoreticalPeakGBps", d.peakGBps);

  add("Native atomics on host memory",
      atomicsText(d.hostAtomics, "cuDeviceGetHostAtomicCapabilities", driverVersion));
  object.set("hostAtomics", atomicsJson(d.hostAtomics));

  out << "Device " << d.ordinal << '\n';
  for (const auto& [label, value] : rows) {
    out << "  " << std::left << std::setw(38) << label << value << '\n';
  }
  out << '\n';
  json.addRaw(object.dump());
}

void reportPeers(const std::vector<PeerAnswer>& peers, int deviceCount, int driverVersion,
                 std::ostream& out, ms::JsonArray& json, ms::JsonArray& atomicsJsonArray) {
  // Common's peer-access matrix, which 05_p2pMemMap prints too: rows are owners, columns
  // accessors, each refused attribute named below it and in the JSON.
  const auto n = static_cast<std::size_t>(deviceCount);
  ms::DeviceTopology reach;
  reach.vmmSupported.assign(n, false);  // not printed: only the matrix's size
  reach.canAccessPeer.assign(n, std::vector<bool>(n, true));
  ms::LinkMatrix links(n, std::vector<ms::LinkAttributes>(n));
  for (const PeerAnswer& p : peers) {
    const auto accessor = static_cast<std::size_t>(p.accessor);
    const auto owner = static_cast<std::size_t>(p.owner);
    reach.canAccessPeer.at(accessor).at(owner) = p.canAccess != 0;
    ms::LinkAttributes& link = links.at(owner).at(accessor);
    link.performanceRank = p.rank;
    link.nativeAtomics = p.atomics != 0;
    link.accessSupported = p.canAccess != 0;  // not asked here: the matrix flags no "!s"
    link.asked = p.canAccess != 0;            // the lesson asks only where access is allowed
    // Every refusal is kept, each with the attribute it refused.
    for (const auto& [name, answer] : {std::pair{"PERFORMANCE_RANK", p.rankAnswer},
                                       std::pair{"NATIVE_ATOMIC_SUPPORTED", p.atomicsAnswer}}) {
      if (answer == CUDA_SUCCESS)
        continue;
      link.failure += (link.failure.empty() ? "" : "; ") + std::string("cuDeviceGetP2PAttribute(") +
                      name + "): " + ms::describeResult(answer);
    }
  }
  out << ms::describePeerLinks(reach, links, json);
  if (deviceCount == 1) {
    out << "  (one device: no pairs, so no peer access and no peer atomics to ask about)\n";
    return;
  }

  // The atomics of each link that can be used, one line per pair; one line in all where the
  // driver lacks the entry point, or no pair can access the other.
  const char* const entryPoint = "cuDeviceGetP2PAtomicCapabilities";
  out << "Peer atomics (" << entryPoint << "(accessor, owner): native over the link):\n";
  std::size_t asked = 0;
  for (const PeerAnswer& p : peers) {
    if (!p.canAccess)
      continue;
    ms::JsonObject object = atomicsJson(p.atomicOperations);
    object.set("accessor", p.accessor).set("owner", p.owner);
    atomicsJsonArray.addRaw(object.dump());
    if (!p.atomicOperations.answer)
      continue;
    ++asked;
    out << "  accessor " << p.accessor << " -> owner " << p.owner << "  "
        << atomicsText(p.atomicOperations, entryPoint, driverVersion) << '\n';
  }
  if (asked == 0 && std::any_of(peers.begin(), peers.end(),
                                [](const PeerAnswer& p) { return p.canAccess != 0; })) {
    out << "  " << atomicsText(AtomicAnswers{}, entryPoint, driverVersion) << '\n';
  } else if (asked == 0) {
    out << "  (no device can access another's memory: no link to ask about)\n";
  }
}

// [agree]
bool answersAgree(const DeviceAnswers& d) {
  const auto usable = [](const Granularity& g) {
    return g.minimum > 0 && g.recommended > 0 && g.recommended % g.minimum == 0;
  };

  return (!d.vmm || usable(d.granularity)) &&
         (!d.hostNumaVmm || usable(d.hostNumaGranularity)) &&
         (d.managed || !d.concurrentManaged);
}
// [agree]
