// The CUDA-free half of 05_p2pMemMap: pairs, waivers, patterns, counting and matrices (see
// p2p_logic.hpp).
#include "p2p_logic.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "support/cli.hpp"

namespace memsamples::p2p {
namespace {

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

bool canAccess(const DeviceTopology& topology, const DevicePair& pair) {
  return topology
      .canAccessPeer[static_cast<std::size_t>(pair.accessor)][static_cast<std::size_t>(pair.owner)];
}

std::string devicesText(int count) {
  return std::to_string(count) + (count == 1 ? " CUDA device" : " CUDA devices");
}

// splitmix64: a good 64-bit mix, cheap enough to compute per word on the host.
std::uint64_t mix(std::uint64_t value) noexcept {
  value += 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

std::string hexWord(std::uint32_t word) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(word));
  return text;
}

}  // namespace

// ---------------------------------------------------------------------------------- device pairs

std::string formatPair(const DevicePair& pair) {
  return std::to_string(pair.owner) + ":" + std::to_string(pair.accessor);
}

std::string formatPairList(const std::vector<DevicePair>& pairs) {
  if (pairs.empty())
    return "(none)";
  std::string text;
  for (std::size_t i = 0; i < pairs.size(); ++i)
    text += (i > 0 ? ", " : "") + formatPair(pairs[i]);
  return text;
}

std::string formatBothWays(const DevicePair& pair) {
  const int low = std::min(pair.owner, pair.accessor);
  const int high = std::max(pair.owner, pair.accessor);
  return std::to_string(low) + "<->" + std::to_string(high);
}

std::vector<DevicePair> parsePairList(std::string_view text) {
  if (text.empty())
    throw UsageError("--pairs needs a non-empty value such as 0:1,1:0");
  std::vector<DevicePair> pairs;
  for (const std::string_view item : splitCommaList(text)) {
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos || item.find(':', colon + 1) != std::string_view::npos) {
      throw UsageError("invalid pair " + quoted(item) +
                       " for --pairs: expected OWNER:ACCESSOR such as 0:1");
    }
    DevicePair pair;
    pair.owner = static_cast<int>(parseInteger(item.substr(0, colon), "--pairs", 0, 1023));
    pair.accessor = static_cast<int>(parseInteger(item.substr(colon + 1), "--pairs", 0, 1023));
    if (pair.owner == pair.accessor) {
      throw UsageError("--pairs: " + formatPair(pair) +
                       " names one device twice; a pair needs two different devices");
    }
    if (std::find(pairs.begin(), pairs.end(), pair) != pairs.end()) {
      throw UsageError("--pairs lists " + formatPair(pair) + " twice");
    }
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
                         formatPair(pair) + "), but this machine has " + devicesText(deviceCount));
      }
    }
  }
}

PairPlan planPairs(const DeviceTopology& topology, const std::vector<DevicePair>& requested,
                   const std::optional<long long>& device) {
  topology.checkShape();
  const int count = topology.deviceCount();
  const auto tooFew = [count] {
    return WaivedError("needs 2 or more GPUs with peer access; this machine has " +
                       std::to_string(count));
  };
  // 1. and 2. A typo is refused on every machine that has a device to compare it with; 3. only
  // then is a machine with one GPU waived.
  if (count < 1)
    throw tooFew();
  checkRequestedDevices(count, requested, device);
  if (count < 2)
    throw tooFew();
  std::optional<int> only;
  if (device)
    only = static_cast<int>(*device);
  // 4. The candidates.
  std::vector<DevicePair> candidates;
  if (requested.empty()) {
    for (int owner = 0; owner < count; ++owner) {
      for (int accessor = 0; accessor < count; ++accessor) {
        if (owner != accessor)
          candidates.push_back({owner, accessor});
      }
    }
  } else {
    candidates = requested;
  }
  if (only) {
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&](const DevicePair& pair) {
                                      return pair.owner != *only && pair.accessor != *only;
                                    }),
                     candidates.end());
    if (candidates.empty()) {
      throw UsageError("--pairs lists no pair that involves --device " + std::to_string(*only) +
                       "; nothing to test");
    }
  }
  // 5. Split by what the hardware allows.
  PairPlan plan;
  for (const DevicePair& pair : candidates)
    (canAccess(topology, pair) ? plan.tested : plan.lacking).push_back(pair);
  if (plan.tested.empty()) {
    const std::string scope =
        !requested.empty() || only
            ? std::string("none of the requested pairs has it")
            : "no pair of this machine's " + std::to_string(count) + " GPUs has it";
    throw WaivedError("needs 2 or more GPUs with peer access; " + scope +
                      " (cuDeviceCanAccessPeer is 0 for owner:accessor " +
                      formatPairList(plan.lacking) + ")");
  }
  std::set<int> devices;
  for (const DevicePair& pair : plan.tested) {
    devices.insert(pair.owner);
    devices.insert(pair.accessor);
    const DevicePair reverse{pair.accessor, pair.owner};
    if (pair.owner < pair.accessor &&
        std::find(plan.tested.begin(), plan.tested.end(), reverse) != plan.tested.end()) {
      plan.bidirectional.push_back(pair);
    }
  }
  plan.devices.assign(devices.begin(), devices.end());
  plan.endpoints = plan.devices;
  return plan;
}

void checkLoopbackOptions(bool loopback, const std::vector<DevicePair>& requested) {
  if (loopback && !requested.empty()) {
    throw UsageError(
        "--pairs cannot be combined with --loopback: a loopback run tests the one pair N:N of "
        "the chosen device (pick it with --device N)");
  }
}

PairPlan planLoopback(const DeviceTopology& topology, int device) {
  topology.checkShape();
  const int count = topology.deviceCount();
  if (count < 1)
    throw WaivedError("--loopback needs 1 GPU; this machine has 0");
  const int chosen = validateDeviceOrdinal(device, count);
  PairPlan plan;
  plan.tested = {{chosen, chosen}};
  plan.devices = {chosen};
  plan.bidirectional = {{chosen, chosen}};
  plan.endpoints = {chosen, chosen};  // the owner's endpoint, then the accessor's
  plan.loopback = true;
  return plan;
}

std::size_t ownerEndpoint(const PairPlan& plan, const DevicePair& pair) {
  const auto found = std::find(plan.endpoints.begin(), plan.endpoints.end(), pair.owner);
  if (found == plan.endpoints.end()) {
    throw std::invalid_argument("ownerEndpoint: the plan has no endpoint on device " +
                                std::to_string(pair.owner) + " (owner of " + formatPair(pair) +
                                ")");
  }
  return static_cast<std::size_t>(found - plan.endpoints.begin());
}

std::size_t accessorEndpoint(const PairPlan& plan, const DevicePair& pair) {
  const auto found = std::find(plan.endpoints.rbegin(), plan.endpoints.rend(), pair.accessor);
  if (found == plan.endpoints.rend()) {
    throw std::invalid_argument("accessorEndpoint: the plan has no endpoint on device " +
                                std::to_string(pair.accessor) + " (accessor of " +
                                formatPair(pair) + ")");
  }
  return static_cast<std::size_t>(plan.endpoints.rend() - found) - 1;
}

bool needsPeerAccess(const DevicePair& pair) noexcept {
  return pair.owner != pair.accessor;
}

std::vector<int> vmmMappingDevices(const DevicePair& pair) {
  if (pair.owner == pair.accessor)
    return {pair.owner};
  return {pair.owner, pair.accessor};
}

int buffersPerDevice(const PairPlan& plan) {
  int mostEndpoints = 0;
  for (const int device : plan.endpoints) {
    mostEndpoints = std::max(
        mostEndpoints,
        static_cast<int>(std::count(plan.endpoints.begin(), plan.endpoints.end(), device)));
  }
  return std::max(3, 2 * mostEndpoints);
}

std::optional<std::string> vmmPathUnavailable(const DeviceTopology& topology,
                                              const DevicePair& pair) {
  std::vector<int> without;
  for (const int ordinal : {pair.owner, pair.accessor}) {
    if (!topology.vmmSupported.at(static_cast<std::size_t>(ordinal)))
      without.push_back(ordinal);
  }
  if (without.empty())
    return std::nullopt;
  std::sort(without.begin(), without.end());
  std::string list;
  for (const int ordinal : without)
    list += (list.empty() ? "" : ",") + std::to_string(ordinal);
  return (without.size() == 1 ? "device " + list + " does" : "devices " + list + " do") +
         std::string(
             " not support virtual memory management "
             "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
}

// ------------------------------------------------------------------------------- VMM access

std::string accessFlagsName(unsigned long long flags) {
  switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
      return "read-write";
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
      return "read";
    case CU_MEM_ACCESS_FLAGS_PROT_NONE:
      return "none";
    default:
      return "flags " + std::to_string(flags);
  }
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

std::uint32_t patternWord(std::uint32_t seed, std::uint64_t index) noexcept {
  const std::uint64_t bits = mix((static_cast<std::uint64_t>(seed) << 40) ^ index);
  // Keep the sign and the 23 mantissa bits, force the exponent of 1.0: a finite float in
  // +-[1, 2). Its exponent field is never all ones, so it is never a NaN nor the sentinel.
  return (static_cast<std::uint32_t>(bits) & 0x807FFFFFu) | 0x3F800000u;
}

void fillPattern(std::uint32_t* words, std::size_t count, std::uint32_t seed) noexcept {
  for (std::size_t i = 0; i < count; ++i)
    words[i] = patternWord(seed, i);
}

std::uint32_t sourceSeed(int endpoint) noexcept {
  return 0x5EED0000u + static_cast<std::uint32_t>(endpoint);
}

PatternCheck checkPattern(const std::uint32_t* words, std::size_t count,
                          std::uint32_t seed) noexcept {
  PatternCheck check;
  check.words = count;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t expected = patternWord(seed, i);
    if (words[i] != expected) {
      if (check.mismatches == 0) {
        check.firstBad = i;
        check.expected = expected;
        check.actual = words[i];
      }
      ++check.mismatches;
    }
  }
  return check;
}

std::string describePatternCheck(const PatternCheck& check) {
  if (check.passed())
    return "all " + std::to_string(check.words) + " words match";
  return std::to_string(check.mismatches) + " of " + std::to_string(check.words) +
         " words differ, the first at word " + std::to_string(check.firstBad) + ": expected " +
         hexWord(check.expected) + ", got " + hexWord(check.actual) +
         (check.actual == kSentinelWord ? " (the sentinel: nothing was written there)" : "");
}

// ------------------------------------------------------------------------------------- counting

double sampleGBps(std::uint64_t bytesPerCopy, int copies, double sampleMs) {
  if (copies < 1)
    throw std::invalid_argument("sampleGBps: a sample needs at least 1 copy, not " +
                                std::to_string(copies));
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

DeviceMatrix::DeviceMatrix(int devices) : devices_(devices) {
  if (devices < 0)
    throw std::invalid_argument("DeviceMatrix: negative size " + std::to_string(devices));
  cells_.resize(static_cast<std::size_t>(devices) * static_cast<std::size_t>(devices));
}

std::size_t DeviceMatrix::index(int row, int column) const {
  if (row < 0 || column < 0 || row >= devices_ || column >= devices_) {
    throw std::out_of_range("DeviceMatrix: cell (" + std::to_string(row) + ", " +
                            std::to_string(column) + ") is outside a " + std::to_string(devices_) +
                            " x " + std::to_string(devices_) + " matrix");
  }
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(devices_) +
         static_cast<std::size_t>(column);
}

void DeviceMatrix::set(int row, int column, double value) {
  cells_[index(row, column)] = value;
}

std::optional<double> DeviceMatrix::at(int row, int column) const {
  return cells_[index(row, column)];
}

bool DeviceMatrix::empty() const noexcept {
  return std::none_of(cells_.begin(), cells_.end(),
                      [](const std::optional<double>& cell) { return cell.has_value(); });
}

DeviceMatrix ratioMatrix(const DeviceMatrix& numerator, const DeviceMatrix& denominator) {
  if (numerator.size() != denominator.size()) {
    throw std::invalid_argument("ratioMatrix: a " + std::to_string(numerator.size()) +
                                "-device matrix over a " + std::to_string(denominator.size()) +
                                "-device one");
  }
  DeviceMatrix ratio(numerator.size());
  for (int row = 0; row < numerator.size(); ++row) {
    for (int column = 0; column < numerator.size(); ++column) {
      const std::optional<double> top = numerator.at(row, column);
      const std::optional<double> bottom = denominator.at(row, column);
      if (top && bottom && *bottom != 0.0)
        ratio.set(row, column, *top / *bottom);
    }
  }
  return ratio;
}

std::string formatGrid(std::string_view rowLabel, std::string_view columnLabel,
                       const std::vector<std::vector<std::string>>& cells) {
  const std::size_t count = cells.size();
  std::size_t width = 1;
  for (std::size_t row = 0; row < count; ++row) {
    if (cells[row].size() != count) {
      throw std::invalid_argument("formatGrid: row " + std::to_string(row) + " has " +
                                  std::to_string(cells[row].size()) + " cells, expected " +
                                  std::to_string(count));
    }
    for (const std::string& cell : cells[row])
      width = std::max(width, cell.size());
  }
  // Column headers are "<columnLabel> <n>"; the first column holds "<rowLabel> <n>".
  std::size_t headerWidth = 0;
  std::size_t firstWidth = 0;
  for (std::size_t i = 0; i < count; ++i) {
    headerWidth = std::max(headerWidth, columnLabel.size() + 1 + std::to_string(i).size());
    firstWidth = std::max(firstWidth, rowLabel.size() + 1 + std::to_string(i).size());
  }
  width = std::max(width, headerWidth);
  const auto pad = [](const std::string& text, std::size_t to) {
    return std::string(to > text.size() ? to - text.size() : 0, ' ') + text;
  };
  std::string out = "  " + std::string(firstWidth, ' ');
  for (std::size_t column = 0; column < count; ++column)
    out += "  " + pad(std::string(columnLabel) + " " + std::to_string(column), width);
  out += '\n';
  for (std::size_t row = 0; row < count; ++row) {
    const std::string label = std::string(rowLabel) + " " + std::to_string(row);
    out += "  " + label + std::string(firstWidth - label.size(), ' ');
    for (const std::string& cell : cells[row])
      out += "  " + pad(cell, width);
    out += '\n';
  }
  return out;
}

std::string formatMatrix(const DeviceMatrix& matrix, std::string_view rowLabel,
                         std::string_view columnLabel, int precision) {
  const auto count = static_cast<std::size_t>(matrix.size());
  std::vector<std::vector<std::string>> cells(count, std::vector<std::string>(count));
  for (std::size_t row = 0; row < count; ++row) {
    for (std::size_t column = 0; column < count; ++column) {
      const std::optional<double> value =
          matrix.at(static_cast<int>(row), static_cast<int>(column));
      if (!value) {
        cells[row][column] = "-";
        continue;
      }
      char text[64];
      std::snprintf(text, sizeof text, "%.*f", precision, *value);
      cells[row][column] = text;
    }
  }
  return formatGrid(rowLabel, columnLabel, cells);
}

JsonArray matrixJson(const DeviceMatrix& matrix) {
  JsonArray rows;
  for (int row = 0; row < matrix.size(); ++row) {
    JsonArray cells;
    for (int column = 0; column < matrix.size(); ++column) {
      const std::optional<double> value = matrix.at(row, column);
      if (value)
        cells.add(*value);
      else
        cells.addRaw("null");
    }
    rows.addRaw(cells.dump());
  }
  return rows;
}

std::string formatAccessMatrix(const DeviceTopology& topology, const LinkMatrix& links) {
  topology.checkShape();
  const auto count = static_cast<std::size_t>(topology.deviceCount());
  if (links.size() != count ||
      std::any_of(links.begin(), links.end(), [count](const std::vector<LinkAttributes>& row) {
        return row.size() != count;
      })) {
    throw std::invalid_argument("formatAccessMatrix: the link matrix is not " +
                                std::to_string(count) + " x " + std::to_string(count));
  }
  std::vector<std::vector<std::string>> cells(count, std::vector<std::string>(count));
  for (std::size_t owner = 0; owner < count; ++owner) {
    for (std::size_t accessor = 0; accessor < count; ++accessor) {
      if (owner == accessor) {
        cells[owner][accessor] = "-";
        continue;
      }
      const LinkAttributes& link = links[owner][accessor];
      if (!link.failure.empty()) {
        cells[owner][accessor] = "?";
        continue;
      }
      const bool access = topology.canAccessPeer[accessor][owner];
      std::string cell =
          access ? "rank " + std::to_string(link.performanceRank) + (link.nativeAtomics ? " A" : "")
                 : "no";
      if (access != link.accessSupported)
        cell += " !s";
      cells[owner][accessor] = cell;
    }
  }
  return formatGrid("owner", "accessor", cells);
}

}  // namespace memsamples::p2p
