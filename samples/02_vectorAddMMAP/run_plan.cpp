// How a run of 02_vectorAddMMAP is planned (see run_plan.hpp): first the lesson's two calls,
// chooseDevices() and sizeRun(), then the queries and the plain decisions they are made of.
#include "run_plan.hpp"

#include <algorithm>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

namespace memsamples::vmm {
namespace {

constexpr std::uint64_t kVectors = 3;        // A, B and C, and as many cuMemAlloc references
constexpr std::uint64_t kStep = 2ull << 20;  // the default shrinks in these steps, as in Common
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::string plural(std::size_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

JsonArray jsonList(const std::vector<int>& values) {
  JsonArray list;
  for (const int value : values)
    list.add(value);
  return list;
}

}  // namespace

// --------------------------------------------------------------------- the lesson's two calls

RunDevices chooseDevices(const RunOptions& options, Report& report) {
  RunDevices run;
  run.device = selectDevice(options.common.device);
  run.ordinal = deviceOrdinal(run.device);
  const std::string name = deviceName(run.device);
  report.out() << "Device " << run.ordinal << ": " << name << '\n';

  int deviceCount = 0;  // bad input before any waiver: the devices the lists name exist
  check(cuDeviceGetCount(&deviceCount), "cuDeviceGetCount");
  checkDeviceOrdinals(options.backing, options.mapping, deviceCount);
  int vmm = 0;
  check(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                             run.device),
        "cuDeviceGetAttribute");
  if (!vmm) {
    throw WaivedError("device " + std::to_string(run.ordinal) +
                      " does not support virtual memory management "
                      "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
  }

  const DeviceTopology topology = queryDeviceTopology();
  run.roles = resolveDeviceRoles(run.ordinal, options.backing, options.mapping, topology);
  run.stripes = resolveStripeCount(options.stripes, run.roles.backing.size());
  run.granularities = stripedGranularities(run.roles.backing, run.roles.mapping);

  report.out() << "Backing devices: " << formatDeviceList(run.roles.backing)
               << "   mapping devices: " << formatDeviceList(run.roles.mapping)
               << "   stripes: " << run.stripes
               << "   granularity: " << formatBytes(run.granularities.minimum) << " minimum, "
               << formatBytes(run.granularities.recommended) << " recommended\n";
  report.json()
      .set("device", run.ordinal)
      .set("deviceName", name)
      .set("backingDevices", jsonList(run.roles.backing))
      .set("mappingDevices", jsonList(run.roles.mapping))
      .set("minimumGranularity", run.granularities.minimum)
      .set("recommendedGranularity", run.granularities.recommended);
  return run;
}

RunSize sizeRun(const RunOptions& options, const RunDevices& devices, Report& report) {
  // Every backing device holds its stripes; this device also the cuMemAlloc references measured
  // beside them, even when it backs no stripe.
  std::vector<int> holders = devices.roles.backing;
  if (std::find(holders.begin(), holders.end(), devices.ordinal) == holders.end())
    holders.push_back(devices.ordinal);
  // cuMemGetInfo answers for the current context's device: this one's is the lesson's context,
  // and a peer's primary context is made current to ask it.
  std::vector<DeviceFree> freeMemory;
  for (const int holder : holders) {
    std::size_t freeBytes = 0;
    std::size_t totalBytes = 0;
    if (holder == devices.ordinal) {
      check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
    } else {
      CUdevice peer = 0;
      check(cuDeviceGet(&peer, holder), "cuDeviceGet");
      const PrimaryContext peerContext(peer);
      const ScopedContext current(peerContext.get());
      check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
    }
    freeMemory.push_back({holder, freeBytes});
  }
  const RunShape shape{devices.ordinal, devices.stripes, devices.roles.backing,
                       devices.granularities, kCostStripeCounts};
  // Step 4's three pinned host copies must fit too: in MemAvailable, or a container's limit.
  const std::uint64_t hostFit = fitHostMemory(options.sizeBytes, kDefaultBytes, 3, sizeof(float));
  RunSize size = sizeRun(options.sizeBytes, hostFit, shape, freeMemory);

  const StripeLayout& layout = size.layout;
  // The recommended granularity performs better, but a small range would be padded up to it.
  const bool recommended =
      recommendedGranularityFits(devices.granularities, size.bytes, devices.stripes);
  report.out() << "Vectors: " << size.bytes / sizeof(float) << " floats ("
               << formatBytes(size.bytes) << ") each, " << formatBytes(layout.roundedBytes)
               << " mapped in " << plural(layout.stripes.size(), "stripe", "stripes") << " of "
               << formatBytes(layout.stripeBytes)
               << (recommended ? " (recommended granularity)\n"
                               : " (minimum granularity: a stripe is smaller than the "
                                 "recommended one)\n");
  JsonArray stripeDevices;
  for (const Stripe& stripe : layout.stripes)
    stripeDevices.add(stripe.device);
  JsonArray memory;
  for (const DeviceNeed& need : size.needs) {
    JsonObject row;
    row.set("device", need.device)
        .set("neededBytes", need.neededBytes())
        .set("freeBytes", need.freeBytes);
    memory.addRaw(row.dump());
  }
  report.json()
      .set("stripes", static_cast<int>(layout.stripes.size()))
      .set("stripeDevices", stripeDevices)
      .set("granularity", layout.granularity)
      .set("deviceMemory", memory)
      .set("bytesPerVector", layout.requestedBytes)
      .set("reservedBytesPerVector", layout.roundedBytes)
      .set("stripeBytes", layout.stripeBytes)
      .set("elements", layout.requestedBytes / sizeof(float));
  return size;
}

// -------------------------------------------------------------------------------- devices

std::vector<int> discoverBackingDevices(int chosen, const DeviceTopology& topology) {
  topology.checkShape();
  if (chosen < 0 || chosen >= topology.deviceCount()) {
    throw std::invalid_argument("discoverBackingDevices: device " + std::to_string(chosen) +
                                " is not one of the " + std::to_string(topology.deviceCount()) +
                                " devices");
  }
  std::vector<int> backing{chosen};
  const auto& reachable = topology.canAccessPeer[static_cast<std::size_t>(chosen)];
  for (int device = 0; device < topology.deviceCount(); ++device) {
    const auto index = static_cast<std::size_t>(device);
    // The peer's own VMM flag decides whether it can hold cuMemCreate memory.
    if (device != chosen && reachable[index] && topology.vmmSupported[index])
      backing.push_back(device);
  }
  return backing;
}

namespace {

// Checks that a --backing or --mapping list names only existing devices.
void checkOrdinals(const std::vector<int>& devices, const char* option, int deviceCount) {
  for (const int device : devices) {
    if (device < 0 || device >= deviceCount) {
      const std::string valid =
          deviceCount == 1 ? "valid: 0" : "valid: 0.." + std::to_string(deviceCount - 1);
      throw UsageError(
          std::string(option) + " lists device " + std::to_string(device) +
          ", but this machine has " +
          plural(static_cast<std::size_t>(deviceCount), "CUDA device", "CUDA devices") + " (" +
          valid + ")");
    }
  }
}

}  // namespace

void checkDeviceOrdinals(const std::vector<int>& backingOption,
                         const std::vector<int>& mappingOption, int deviceCount) {
  checkOrdinals(backingOption, "--backing", deviceCount);
  checkOrdinals(mappingOption, "--mapping", deviceCount);
}

DeviceRoles resolveDeviceRoles(int chosen, const std::vector<int>& backingOption,
                               const std::vector<int>& mappingOption,
                               const DeviceTopology& topology) {
  topology.checkShape();
  // Each given list: devices that exist and support VMM.
  for (const auto& [devices, option] :
       {std::pair{&backingOption, "--backing"}, std::pair{&mappingOption, "--mapping"}}) {
    checkOrdinals(*devices, option, topology.deviceCount());
    for (const int device : *devices) {
      if (!topology.vmmSupported[static_cast<std::size_t>(device)]) {
        throw UsageError(std::string(option) + " lists device " + std::to_string(device) +
                         ", which does not support virtual memory management "
                         "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
      }
    }
  }

  DeviceRoles roles;
  roles.backing = backingOption.empty() ? discoverBackingDevices(chosen, topology) : backingOption;
  roles.mapping = mappingOption.empty() ? std::vector<int>{chosen} : mappingOption;
  if (std::find(roles.mapping.begin(), roles.mapping.end(), chosen) == roles.mapping.end()) {
    throw UsageError("--mapping " + formatDeviceList(roles.mapping) + " does not include device " +
                     std::to_string(chosen) + ", where the kernel runs; add it (e.g. --mapping " +
                     std::to_string(chosen) + "," + formatDeviceList(roles.mapping) + ")");
  }
  for (const int mapper : roles.mapping) {
    for (const int owner : roles.backing) {
      if (mapper != owner && !topology.canAccessPeer[static_cast<std::size_t>(mapper)]
                                                    [static_cast<std::size_t>(owner)]) {
        throw UsageError("device " + std::to_string(mapper) +
                         " cannot access the memory of device " + std::to_string(owner) +
                         " (cuDeviceCanAccessPeer = 0), so it cannot map "
                         "stripes backed there; remove one of them from --mapping or --backing");
      }
    }
  }
  return roles;
}

int resolveStripeCount(int requested, std::size_t backingDeviceCount) {
  if (requested < 0)
    throw UsageError("--stripes " + std::to_string(requested) + " is negative");
  if (requested == 0)
    return static_cast<int>(backingDeviceCount);
  if (static_cast<std::size_t>(requested) < backingDeviceCount) {
    throw UsageError("--stripes " + std::to_string(requested) + " is fewer than the " +
                     std::to_string(backingDeviceCount) +
                     " backing devices: every backing device needs at least one stripe (use "
                     "--backing to name fewer devices)");
  }
  return requested;
}

std::string formatDeviceList(const std::vector<int>& devices) {
  std::string text;
  for (std::size_t i = 0; i < devices.size(); ++i)
    text += (i > 0 ? "," : "") + std::to_string(devices[i]);
  return text;
}

// ---------------------------------------------------------------------------- granularity

std::uint64_t combinedGranularity(const std::vector<std::uint64_t>& perDevice) {
  if (perDevice.empty())
    throw std::invalid_argument("combinedGranularity: no device");
  if (std::find(perDevice.begin(), perDevice.end(), 0) != perDevice.end())
    throw std::invalid_argument("combinedGranularity: a device reported a granularity of 0");
  return *std::max_element(perDevice.begin(), perDevice.end());
}

namespace {

// cuMemGetAllocationGranularity of pinned memory, as @p option asks, on every backing and mapping
// device, combined.
std::uint64_t largestGranularity(const std::vector<int>& backingDevices,
                                 const std::vector<int>& mappingDevices,
                                 CUmemAllocationGranularity_flags option) {
  std::vector<int> devices = backingDevices;
  devices.insert(devices.end(), mappingDevices.begin(), mappingDevices.end());
  std::vector<std::uint64_t> granularities;
  for (const int device : devices) {
    CUmemAllocationProp properties{};
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = device;
    std::size_t granularity = 0;
    check(cuMemGetAllocationGranularity(&granularity, &properties, option),
          "cuMemGetAllocationGranularity");
    granularities.push_back(granularity);
  }
  return combinedGranularity(granularities);
}

}  // namespace

std::uint64_t stripedGranularity(const std::vector<int>& backingDevices,
                                 const std::vector<int>& mappingDevices) {
  return largestGranularity(backingDevices, mappingDevices, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

Granularities stripedGranularities(const std::vector<int>& backingDevices,
                                   const std::vector<int>& mappingDevices) {
  return {largestGranularity(backingDevices, mappingDevices, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          largestGranularity(backingDevices, mappingDevices, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)};
}

// ----------------------------------------------------------------------------------- size
namespace {

// Products of absurd --size values saturate: "more than there is" is all a comparison needs.
std::uint64_t times(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > kMax / b ? kMax : a * b;
}

std::uint64_t stripesOn(const StripeLayout& layout, int device) {
  return static_cast<std::uint64_t>(
      std::count_if(layout.stripes.begin(), layout.stripes.end(),
                    [device](const Stripe& stripe) { return stripe.device == device; }));
}

// The budget of a default size on one device, as memsamples::chooseBufferBytes() leaves it.
std::uint64_t defaultBudget(std::uint64_t freeBytes) {
  return freeBytes / 10 * 8;
}

RunSize sizedAt(std::uint64_t bytes, const RunShape& shape,
                const std::vector<DeviceFree>& freeMemory) {
  return {bytes, planStripes(bytes, shape.granularities, shape.stripes, shape.backing),
          deviceNeeds(shape, bytes, freeMemory)};
}

// "1.00 GiB", or exact bytes where two rounded figures would read the same.
std::string showBoth(std::uint64_t first, std::uint64_t second, std::uint64_t value) {
  return formatBytes(first) == formatBytes(second) ? std::to_string(value) + " bytes"
                                                   : formatBytes(value);
}

// What @p need is made of, for a message: "its stripes of A, B and C (4 of 8 per vector,
// 1.50 GiB) and, measured beside them, ...".
std::string describeParts(const DeviceNeed& need, const RunSize& run) {
  std::string parts;
  if (need.stripesHere > 0) {
    parts = "its stripes of A, B and C (" + std::to_string(need.stripesHere) + " of " +
            std::to_string(run.layout.stripes.size()) + " per vector, " +
            formatBytes(need.stripeBytes) + ")";
  }
  if (need.besideBytes > 0) {
    parts += parts.empty() ? "" : " and, measured beside them, ";
    parts += need.besideIsReferences
                 ? "the 3 cuMemAlloc references of " + formatBytes(run.bytes) + " each"
                 : formatBytes(need.besideBytes) + " of one mapping-cost range";
  }
  return parts;
}

}  // namespace

std::vector<DeviceNeed> deviceNeeds(const RunShape& shape, std::uint64_t bytes,
                                    const std::vector<DeviceFree>& freeMemory) {
  const auto listed = [&freeMemory](int device) {
    return std::any_of(freeMemory.begin(), freeMemory.end(),
                       [device](const DeviceFree& entry) { return entry.device == device; });
  };
  if (!listed(shape.kernelDevice)) {
    throw std::invalid_argument("deviceNeeds: no free memory given for device " +
                                std::to_string(shape.kernelDevice) + ", where the kernel runs");
  }
  for (const int device : shape.backing) {
    if (!listed(device)) {
      throw std::invalid_argument("deviceNeeds: no free memory given for backing device " +
                                  std::to_string(device));
    }
  }
  const StripeLayout layout = planStripes(bytes, shape.granularities, shape.stripes, shape.backing);
  std::vector<StripeLayout> costRanges;
  for (const int stripes : shape.costStripeCounts)
    costRanges.push_back(planStripes(bytes, shape.granularities, stripes, shape.backing));

  std::vector<DeviceNeed> needs;
  for (const DeviceFree& entry : freeMemory) {
    DeviceNeed need;
    need.device = entry.device;
    need.freeBytes = entry.freeBytes;
    need.stripesHere = static_cast<int>(stripesOn(layout, entry.device));
    need.stripeBytes = times(kVectors, times(stripesOn(layout, entry.device), layout.stripeBytes));
    const bool kernelDevice = entry.device == shape.kernelDevice;
    need.besideBytes = kernelDevice ? times(kVectors, bytes) : 0;
    need.besideIsReferences = kernelDevice;
    for (const StripeLayout& range : costRanges) {
      // A cost range is freed before its cuMemAlloc twin (on the kernel's device) is made.
      std::uint64_t atOnce = times(stripesOn(range, entry.device), range.stripeBytes);
      if (kernelDevice)
        atOnce = std::max(atOnce, range.roundedBytes);
      if (atOnce > need.besideBytes) {
        need.besideBytes = atOnce;
        need.besideIsReferences = false;
      }
    }
    needs.push_back(need);
  }
  return needs;
}

RunSize sizeRun(const std::optional<std::uint64_t>& requested, std::uint64_t defaultBytes,
                const RunShape& shape, const std::vector<DeviceFree>& freeMemory) {
  if (requested) {
    // Common's own check of the element size, with no limit of its own.
    (void)chooseBufferBytes(requested, defaultBytes, kMax, 1, sizeof(float));
    RunSize run;
    try {
      run = sizedAt(*requested, shape, freeMemory);
    } catch (const std::overflow_error& error) {
      throw UsageError("--size " + std::to_string(*requested) + " is too large: " + error.what());
    }
    for (const DeviceNeed& need : run.needs) {
      const std::uint64_t needed = need.neededBytes();
      if (needed <= need.freeBytes)
        continue;
      const std::string device = "device " + std::to_string(need.device);
      const bool backs = need.stripesHere > 0 && need.device != shape.kernelDevice;
      throw UsageError("--size " + formatBytes(*requested) + " needs " +
                       showBoth(needed, need.freeBytes, needed) + " on " + device + ": " +
                       describeParts(need, run) + "; " + device + " has only " +
                       showBoth(needed, need.freeBytes, need.freeBytes) +
                       " free; choose a smaller --size" +
                       (backs ? " or leave " + device + " out of --backing" : ""));
    }
    return run;
  }
  std::uint64_t bytes = defaultBytes;
  for (;;) {
    RunSize run = sizedAt(bytes, shape, freeMemory);
    const auto over = std::find_if(run.needs.begin(), run.needs.end(), [](const DeviceNeed& need) {
      return need.neededBytes() > defaultBudget(need.freeBytes);
    });
    if (over == run.needs.end())
      return run;
    if (bytes <= kStep) {
      throw std::runtime_error(
          "device " + std::to_string(over->device) + " has only " + formatBytes(over->freeBytes) +
          " free, too little for this run even with vectors of " + formatBytes(bytes) + ": " +
          describeParts(*over, run) + " take " + formatBytes(over->neededBytes()) + " there");
    }
    // Shrink in proportion to the overshoot (rounding makes the need not quite linear in the
    // size, so this repeats), by at least one step, and not below one step.
    const long double scale = static_cast<long double>(defaultBudget(over->freeBytes)) /
                              static_cast<long double>(over->neededBytes());
    const auto scaled = static_cast<std::uint64_t>(static_cast<long double>(bytes) * scale);
    bytes = std::max(kStep, std::min(scaled, bytes - 1) / kStep * kStep);
  }
}

}  // namespace memsamples::vmm
