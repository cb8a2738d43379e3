// What a run of 02_vectorAddMMAP holds on each device, and the size that fits (see
// device_memory.hpp). No driver calls here.
#include "device_memory.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "memsamples.hpp"

namespace memsamples::vmm {
namespace {

constexpr std::uint64_t kVectors = 3;        // A, B and C, and as many cuMemAlloc references
constexpr std::uint64_t kStep = 2ull << 20;  // the default shrinks in these steps, as in Common
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

// Products of absurd --size values saturate: "more than there is" is all a comparison needs.
std::uint64_t times(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > kMax / b ? kMax : a * b;
}

int stripesOn(const StripeLayout& layout, int device) {
  return static_cast<int>(std::count_if(layout.stripes.begin(), layout.stripes.end(),
                                        [device](const Stripe& s) { return s.device == device; }));
}

bool listed(const std::vector<DeviceFree>& freeMemory, int device) {
  return std::any_of(freeMemory.begin(), freeMemory.end(),
                     [device](const DeviceFree& entry) { return entry.device == device; });
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
  if (!listed(freeMemory, shape.kernelDevice)) {
    throw std::invalid_argument("deviceNeeds: no free memory given for device " +
                                std::to_string(shape.kernelDevice) + ", where the kernel runs");
  }
  for (const int device : shape.backing) {
    if (!listed(freeMemory, device)) {
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
    need.stripesHere = stripesOn(layout, entry.device);
    need.stripeBytes =
        times(kVectors, times(static_cast<std::uint64_t>(need.stripesHere), layout.stripeBytes));
    const bool kernelDevice = entry.device == shape.kernelDevice;
    need.besideBytes = kernelDevice ? times(kVectors, bytes) : 0;
    need.besideIsReferences = kernelDevice;
    for (const StripeLayout& range : costRanges) {
      // A cost range is freed before its cuMemAlloc twin (on the kernel's device) is made.
      std::uint64_t atOnce =
          times(static_cast<std::uint64_t>(stripesOn(range, entry.device)), range.stripeBytes);
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
