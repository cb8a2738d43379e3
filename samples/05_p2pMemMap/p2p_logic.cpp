// The CUDA-free half of 05_p2pMemMap: options, pairs, waivers, patterns, counting and matrices
// (see p2p_logic.hpp).
#include "p2p_logic.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include "support/cli.hpp"
#include "support/devices.hpp"
#include "support/text_format.hpp"

namespace memsamples::p2p {
namespace {

// "ownerEndpoint: the plan has no endpoint on device 0 (owner of 0:1)".
std::string noEndpoint(const std::string& role, int device, const DevicePair& pair) {
  return role + "Endpoint: the plan has no endpoint on device " + std::to_string(device) + " (" +
         role + " of " + formatPair(pair) + ")";
}

}  // namespace

// -------------------------------------------------------------------------------------- options

Request checkOptions(std::string_view pairs, bool loopback, const std::optional<long long>& device,
                     const std::optional<std::uint64_t>& size) {
  Request request;
  request.pairs = pairs.empty() ? std::vector<DevicePair>{} : parsePairList(pairs);
  if (loopback && !request.pairs.empty()) {
    throw UsageError(
        "--pairs cannot be combined with --loopback: a loopback run tests the one pair N:N of "
        "the chosen device (pick it with --device N)");
  }
  const std::string sizeText = size ? "--size " + std::to_string(*size) : "";
  if (size && *size > kMaxBufferBytes) {
    throw UsageError(sizeText + " (" + formatBytes(*size) +
                     ") is more than this sample takes: at most 1T per buffer");
  }
  if (size && *size % sizeof(float) != 0)
    throw UsageError(sizeText + " is not a multiple of 4 bytes (one element)");
  request.loopback = loopback;
  request.device = device;
  request.size = size;
  return request;
}

// ---------------------------------------------------------------------------------- device pairs

std::string formatPair(const DevicePair& pair) {
  return std::to_string(pair.owner) + ":" + std::to_string(pair.accessor);
}

std::string formatPairList(const std::vector<DevicePair>& pairs) {
  return pairs.empty() ? "(none)" : joined(pairs, formatPair);
}

std::string formatBothWays(const DevicePair& pair) {
  const int low = std::min(pair.owner, pair.accessor);
  return std::to_string(low) + "<->" + std::to_string(std::max(pair.owner, pair.accessor));
}

std::vector<DevicePair> parsePairList(std::string_view text) {
  if (text.empty())
    throw UsageError("--pairs needs a non-empty value such as 0:1,1:0");
  const auto ordinal = [](std::string_view digits) {
    return static_cast<int>(parseInteger(digits, "--pairs", 0, 1023));
  };
  std::vector<DevicePair> pairs;
  for (const std::string_view item : splitCommaList(text)) {
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos || item.find(':', colon + 1) != std::string_view::npos) {
      throw UsageError("invalid pair '" + std::string(item) +
                       "' for --pairs: expected OWNER:ACCESSOR such as 0:1");
    }
    // Braces evaluate left to right: the owner's mistake is named first.
    const DevicePair pair{ordinal(item.substr(0, colon)), ordinal(item.substr(colon + 1))};
    if (pair.owner == pair.accessor) {
      throw UsageError("--pairs: " + formatPair(pair) +
                       " names one device twice; a pair needs two different devices");
    }
    if (std::find(pairs.begin(), pairs.end(), pair) != pairs.end())
      throw UsageError("--pairs lists " + formatPair(pair) + " twice");
    pairs.push_back(pair);
  }
  return pairs;
}

void checkRequestedDevices(int deviceCount, const std::vector<DevicePair>& requested,
                           const std::optional<long long>& device) {
  if (deviceCount < 1)
    return;
  if (device)
    (void)validateDeviceOrdinal(*device, deviceCount);
  for (const DevicePair& pair : requested) {
    for (const int ordinal : {pair.owner, pair.accessor}) {
      if (ordinal < 0 || ordinal >= deviceCount) {
        throw UsageError("--pairs names device " + std::to_string(ordinal) + " (in " +
                         formatPair(pair) + "), but this machine has " +
                         std::to_string(deviceCount) +
                         (deviceCount == 1 ? " CUDA device" : " CUDA devices"));
      }
    }
  }
}

// ------------------------------------------------------------------------ which GPUs take part

std::string contextForbidden(const DeviceState& device) {
  return computeModeProblem(device.ordinal, device.computeMode, DeviceUse::OneProcess);
}

DeviceChoice chooseDevices(const std::vector<DeviceState>& devices,
                           const std::optional<std::uint64_t>& size, std::uint64_t defaultBytes) {
  DeviceChoice choice;

  // A device the options name must take part: one that cannot hold a context waives the run.
  std::optional<DeviceState> smallestNamed;  // the named device with the least free memory
  for (const DeviceState& device : devices) {
    if (device.namedBy.empty())
      continue;
    const ExtraGpu gpu = extraGpuOf(device, contextForbidden(device));
    if (const std::optional<std::string> why = whyNoContext(gpu))
      throw WaivedError(*why + "; " + device.namedBy + " names it");
    choice.used.push_back(device.ordinal);
    if (!smallestNamed || device.freeBytes < smallestNamed->freeBytes)
      smallestNamed = device;
  }

  // The named devices size the buffers; with none named, the default (or --size) is what the run
  // needs of every device.
  choice.bytes = size.value_or(defaultBytes);
  if (smallestNamed) {
    const std::string where = "device " + std::to_string(smallestNamed->ordinal);
    choice.bytes = chooseBufferBytes(size, defaultBytes, smallestNamed->freeBytes, kPathBuffers,
                                     sizeof(float), where);
  }

  // A device nobody named takes part only where it holds a context and the buffers fit in the
  // share chooseBufferBytes() leaves a device (80 % of its free memory): it must not shrink the
  // run.
  const BuffersPerGpu need{kPathBuffers, choice.bytes, "buffers"};
  const std::string_view hint = "name it in --pairs to use it";
  for (const DeviceState& device : devices) {
    if (!device.namedBy.empty())
      continue;
    const ExtraGpu gpu = extraGpuOf(device, contextForbidden(device));
    if (const std::optional<std::string> why = whyLeftOut(gpu, need, hint))
      choice.leftOut.push_back({device.ordinal, *why});
    else
      choice.used.push_back(device.ordinal);
  }

  std::sort(choice.used.begin(), choice.used.end());
  std::sort(choice.leftOut.begin(), choice.leftOut.end(),
            [](const LeftOutDevice& a, const LeftOutDevice& b) { return a.ordinal < b.ordinal; });
  return choice;
}

// ---------------------------------------------------------------------------------- the pairs

PairPlan planPairs(const DeviceTopology& topology, const std::vector<DevicePair>& requested,
                   const std::optional<long long>& device,
                   const std::vector<LeftOutDevice>& leftOut) {
  topology.checkShape();
  const int count = topology.deviceCount();
  const std::string needs = "needs 2 or more GPUs with peer access; ";
  // 1. to 3. A typo is refused on every machine that has a device to compare it with; only
  // then is a machine with one GPU waived.
  if (count < 1)
    throw WaivedError(needs + "this machine has 0");
  checkRequestedDevices(count, requested, device);
  if (count < 2)
    throw WaivedError(needs + "this machine has 1");
  // Every later waiver also says which devices were left out, and why.
  std::string leftOutText;
  for (const LeftOutDevice& left : leftOut)
    leftOutText += "; left out: " + left.reason;
  const auto isLeftOut = [&](int ordinal) {
    return std::any_of(leftOut.begin(), leftOut.end(),
                       [ordinal](const LeftOutDevice& left) { return left.ordinal == ordinal; });
  };
  const auto usable = count - static_cast<int>(leftOut.size());
  if (usable < 2)
    throw WaivedError(needs + "this machine has " + std::to_string(count) + ", " +
                      std::to_string(usable) + " of them usable" + leftOutText);
  // 4. The candidates: --pairs, or every ordered pair of devices not left out, owner-major; with
  // --device, those involving it (only --pairs can leave none then).
  std::vector<DevicePair> candidates = requested;
  for (int owner = 0; requested.empty() && owner < count; ++owner) {
    for (int accessor = 0; accessor < count; ++accessor) {
      if (owner != accessor && !isLeftOut(owner) && !isLeftOut(accessor))
        candidates.push_back({owner, accessor});
    }
  }
  const auto elsewhere = [&](const DevicePair& pair) {
    return device && pair.owner != *device && pair.accessor != *device;
  };
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(), elsewhere),
                   candidates.end());
  if (candidates.empty()) {
    throw UsageError("--pairs lists no pair that involves --device " + std::to_string(*device) +
                     "; nothing to test");
  }
  // 5. Split by what the hardware allows: pair A:B needs canAccessPeer[B][A].
  PairPlan plan;
  for (const DevicePair& pair : candidates) {
    const std::vector<bool>& accessorRow = topology.canAccessPeer[std::size_t(pair.accessor)];
    (accessorRow[std::size_t(pair.owner)] ? plan.tested : plan.lacking).push_back(pair);
  }
  if (plan.tested.empty()) {
    const std::string scope =
        !requested.empty() || device
            ? std::string("none of the requested pairs has it")
            : "no pair of this machine's " + std::to_string(count) + " GPUs has it";
    throw WaivedError(needs + scope + " (cuDeviceCanAccessPeer is 0 for owner:accessor " +
                      formatPairList(plan.lacking) + ")" + leftOutText);
  }
  std::set<int> devices;
  for (const DevicePair& pair : plan.tested) {
    devices.insert({pair.owner, pair.accessor});
    const DevicePair reverse{pair.accessor, pair.owner};
    const auto& tested = plan.tested;
    if (pair.owner < pair.accessor && std::count(tested.begin(), tested.end(), reverse) > 0)
      plan.bidirectional.push_back(pair);
  }
  plan.devices.assign(devices.begin(), devices.end());
  plan.endpoints = plan.devices;
  return plan;
}

PairPlan planLoopback(const DeviceTopology& topology, int device) {
  topology.checkShape();
  const int count = topology.deviceCount();
  if (count < 1)
    throw WaivedError("--loopback needs 1 GPU; this machine has 0");
  const int chosen = validateDeviceOrdinal(device, count);
  PairPlan plan;
  plan.tested = plan.bidirectional = {{chosen, chosen}};
  plan.devices = {chosen};
  plan.endpoints = {chosen, chosen};  // the owner's endpoint, then the accessor's
  plan.loopback = true;
  return plan;
}

std::size_t ownerEndpoint(const PairPlan& plan, const DevicePair& pair) {
  const auto& all = plan.endpoints;
  const auto found = std::find(all.begin(), all.end(), pair.owner);
  if (found == all.end())
    throw std::invalid_argument(noEndpoint("owner", pair.owner, pair));
  return static_cast<std::size_t>(found - all.begin());
}

std::size_t accessorEndpoint(const PairPlan& plan, const DevicePair& pair) {
  const auto& all = plan.endpoints;
  const auto found = std::find(all.rbegin(), all.rend(), pair.accessor);
  if (found == all.rend())
    throw std::invalid_argument(noEndpoint("accessor", pair.accessor, pair));
  return static_cast<std::size_t>(all.rend() - found) - 1;
}

bool needsPeerAccess(const DevicePair& pair) noexcept {
  return pair.owner != pair.accessor;
}

std::vector<int> vmmMappingDevices(const DevicePair& pair) {
  return needsPeerAccess(pair) ? std::vector<int>{pair.owner, pair.accessor}
                               : std::vector<int>{pair.owner};
}

int buffersPerDevice(const PairPlan& plan) {
  int most = 0;  // endpoints on one device
  for (const int device : plan.endpoints)
    most = std::max(most, int(std::count(plan.endpoints.begin(), plan.endpoints.end(), device)));
  return std::max(kPathBuffers, 2 * most);
}

std::optional<std::string> vmmPathUnavailable(const DeviceTopology& topology,
                                              const DevicePair& pair) {
  std::set<int> lacking;  // each device once, ascending
  for (const int device : {pair.owner, pair.accessor}) {
    if (!topology.vmmSupported.at(static_cast<std::size_t>(device)))
      lacking.insert(device);
  }
  if (lacking.empty())
    return std::nullopt;
  const std::string which = lacking.size() == 1
                                ? "device " + std::to_string(*lacking.begin()) + " does"
                                : "devices " + std::to_string(*lacking.begin()) + "," +
                                      std::to_string(*lacking.rbegin()) + " do";
  return which + " not support virtual memory management " +
         "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)";
}

// ------------------------------------------------------------------------------- VMM access

std::string accessFlagsName(unsigned long long flags) {
  return flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? "read-write"
         : flags == CU_MEM_ACCESS_FLAGS_PROT_READ    ? "read"
         : flags == CU_MEM_ACCESS_FLAGS_PROT_NONE    ? "none"
                                                     : "flags " + std::to_string(flags);
}

std::vector<std::string> accessProblems(const std::vector<int>& mappingDevices,
                                        const std::vector<DeviceAccessView>& views) {
  std::vector<std::string> problems;
  for (const int device : mappingDevices) {
    const std::string who = "mapping device " + std::to_string(device);
    const auto view = std::find_if(views.begin(), views.end(), [device](const DeviceAccessView& v) {
      return v.device == device;
    });
    if (view == views.end()) {
      problems.push_back(who + " was not asked (cuMemGetAccess) for its access");
    } else if (!view->flags) {
      problems.push_back(who + ": cuMemGetAccess failed (" +
                         (view->failure.empty() ? "no answer" : view->failure) + ")");
    } else if (*view->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      problems.push_back(who + " has " + accessFlagsName(*view->flags) +
                         " access (cuMemGetAccess), not the read-write access cuMemSetAccess "
                         "granted");
    }
  }
  return problems;
}

// ------------------------------------------------------------------------------------- patterns

std::uint32_t sourceSeed(int endpoint) noexcept {
  return 0x5EED0000u + static_cast<std::uint32_t>(endpoint);
}

// ------------------------------------------------------------------------------------- counting

double sampleGBps(std::uint64_t bytesPerCopy, int copies, double sampleMs) {
  if (copies < 1) {
    throw std::invalid_argument("sampleGBps: a sample needs at least 1 copy, not " +
                                std::to_string(copies));
  }
  return gigabytesPerSecond(static_cast<double>(bytesPerCopy) * copies, sampleMs);
}

BothWaysFigures countBothWays(std::uint64_t bytesPerCopy, int copies, double firstMs,
                              double secondMs, double bothDoneMs) {
  BothWaysFigures figures;
  figures.firstGBps = sampleGBps(bytesPerCopy, copies, firstMs);
  figures.secondGBps = sampleGBps(bytesPerCopy, copies, secondMs);
  figures.sumGBps = figures.firstGBps + figures.secondGBps;
  figures.bothDoneGBps = sampleGBps(2 * bytesPerCopy, copies, bothDoneMs);
  return figures;
}

std::string describeCopySamples(std::uint64_t bytesPerCopy, int copies, int samples) {
  return "one sample = " + std::to_string(copies) + (copies == 1 ? " copy of " : " copies of ") +
         formatBytes(bytesPerCopy) + " queued back to back between two events, median of " +
         std::to_string(samples) + (samples == 1 ? " sample" : " samples");
}

// ------------------------------------------------------------------------------------- matrices

std::string formatMatrix(const DeviceMatrix& matrix, std::string_view rowLabel,
                         std::string_view columnLabel, int precision,
                         const std::vector<PeerRefusal>& refused) {
  std::vector<std::vector<std::string>> cells = matrixCells(matrix, precision);
  for (const PeerRefusal& refusal : refused)
    cells.at(std::size_t(refusal.pair.owner)).at(std::size_t(refusal.pair.accessor)) = "refused";
  return formatGrid(rowLabel, columnLabel, cells);
}

}  // namespace memsamples::p2p
