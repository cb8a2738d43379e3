// Resource kinds, the per-device assignment, the latency sizes and the latency table.
#include "resource_plan.hpp"

#include <algorithm>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace memsamples::resource {

std::vector<ResourceKind> allResourceKinds() {
  return {ResourceKind::Device, ResourceKind::Managed, ResourceKind::Pinned, ResourceKind::Numa,
          ResourceKind::Vmm};
}

const char* kindName(ResourceKind kind) noexcept {
  switch (kind) {
    case ResourceKind::Device:
      return "device";
    case ResourceKind::Managed:
      return "managed";
    case ResourceKind::Pinned:
      return "pinned";
    case ResourceKind::Numa:
      return "numa";
    case ResourceKind::Vmm:
      return "vmm";
  }
  return "unknown";
}

std::vector<ResourceKind> parseResourceKinds(std::string_view text, std::string_view option) {
  const std::string prefix = std::string(option) + ": ";
  if (text.empty())
    throw UsageError(prefix + "the list of resources is empty");
  std::vector<ResourceKind> kinds;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view name = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (name.empty())
      throw UsageError(prefix + "empty entry in '" + std::string(text) + "'");
    std::optional<ResourceKind> found;
    std::string valid;
    for (const ResourceKind kind : allResourceKinds()) {
      valid += (valid.empty() ? "" : ", ") + std::string(kindName(kind));
      if (name == kindName(kind))
        found = kind;
    }
    if (!found) {
      throw UsageError(prefix + "unknown resource '" + std::string(name) + "' (expected one of " +
                       valid + ")");
    }
    if (std::find(kinds.begin(), kinds.end(), *found) != kinds.end())
      throw UsageError(prefix + "'" + std::string(name) + "' is listed twice");
    kinds.push_back(*found);
    if (comma == std::string_view::npos)
      break;
    start = comma + 1;
  }
  return kinds;
}

std::vector<ResourceKind> assignKindsToDevices(const std::vector<ResourceKind>& kinds,
                                               int deviceCount) {
  if (kinds.empty())
    throw std::invalid_argument("assignKindsToDevices: no resource kinds to assign");
  if (deviceCount < 1) {
    throw std::invalid_argument("assignKindsToDevices: the device count must be at least 1 (got " +
                                std::to_string(deviceCount) + ")");
  }
  std::vector<ResourceKind> assignment;
  for (int device = 0; device < deviceCount; ++device)
    assignment.push_back(kinds[(static_cast<std::size_t>(device) + 1) % kinds.size()]);
  return assignment;
}

std::vector<std::uint64_t> latencySizes(std::uint64_t largeBytes) {
  if (largeBytes == 0)
    throw std::invalid_argument("latencySizes: the large size must be at least 1 byte");
  std::vector<std::uint64_t> sizes(std::begin(kSmallLatencySizes), std::end(kSmallLatencySizes));
  sizes.push_back(largeBytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

int latencyRepetitions(std::uint64_t bytes, int iterations) {
  constexpr int kSmallFactor = 10;
  if (iterations < 1 || iterations > std::numeric_limits<int>::max() / kSmallFactor) {
    throw std::invalid_argument("latencyRepetitions: iterations must be in [1, " +
                                std::to_string(std::numeric_limits<int>::max() / kSmallFactor) +
                                "] (got " + std::to_string(iterations) + ")");
  }
  constexpr std::uint64_t kSmallLimit = std::uint64_t{1} << 20;
  return bytes <= kSmallLimit ? iterations * kSmallFactor : iterations;
}

std::optional<double> allocateRatio(const std::vector<LatencyRow>& rows, const LatencyRow& row,
                                    const std::string& referenceResource) {
  for (const LatencyRow& reference : rows) {
    if (reference.resource == referenceResource && reference.bytes == row.bytes) {
      if (reference.allocate.medianMs <= 0)
        return std::nullopt;
      return row.allocate.medianMs / reference.allocate.medianMs;
    }
  }
  return std::nullopt;
}

std::string formatLatencyTable(const std::vector<LatencyRow>& rows,
                               const std::string& referenceResource) {
  std::size_t nameWidth = 8;
  for (const LatencyRow& row : rows)
    nameWidth = std::max(nameWidth, row.resource.size());
  const int width = static_cast<int>(nameWidth);
  std::ostringstream out;
  out << std::left << std::setw(width) << "resource" << std::right << std::setw(11) << "size"
      << std::setw(14) << "allocate us" << std::setw(11) << "free us" << std::setw(6) << "reps"
      << "   allocate / " << referenceResource << '\n';
  for (const LatencyRow& row : rows) {
    out << std::left << std::setw(width) << row.resource << std::right << std::setw(11)
        << formatBytes(row.bytes) << std::fixed << std::setprecision(1) << std::setw(14)
        << row.allocate.medianMs * 1000.0 << std::setw(11) << row.deallocate.medianMs * 1000.0
        << std::setw(6) << row.allocate.samples << "   ";
    const std::optional<double> ratio = allocateRatio(rows, row, referenceResource);
    if (ratio)
      out << std::setprecision(2) << *ratio << 'x';
    else
      out << "n/a";
    out << '\n';
  }
  return out.str();
}

}  // namespace memsamples::resource
