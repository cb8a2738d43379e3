// Resource kinds, the per-device assignment, the latency sizes, batches and table, and the device
// with the least free memory.
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
  for (const std::string_view name : splitCommaList(text)) {
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

LatencyBatches planLatencyBatches(std::uint64_t bytes, int repetitions,
                                  std::uint64_t maxBatchBytes) {
  if (bytes == 0)
    throw std::invalid_argument("planLatencyBatches: the allocation size must be at least 1 byte");
  if (repetitions < 1) {
    throw std::invalid_argument("planLatencyBatches: at least 1 repetition is required (got " +
                                std::to_string(repetitions) + ")");
  }
  const std::uint64_t fitting = std::max<std::uint64_t>(1, maxBatchBytes / bytes);
  const std::uint64_t limit = std::min<std::uint64_t>(kMaxLatencyBatch, fitting);
  const std::uint64_t wanted = std::max(1, repetitions / kTargetLatencyBatches);
  LatencyBatches plan;
  plan.batchSize = static_cast<int>(std::min<std::uint64_t>(wanted, limit));
  plan.batches = std::max(1, repetitions / plan.batchSize);
  return plan;
}

std::optional<double> allocateRatio(const std::vector<LatencyRow>& rows, const LatencyRow& row,
                                    const std::string& referenceResource) {
  for (const LatencyRow& reference : rows) {
    if (reference.resource == referenceResource && reference.bytes == row.bytes) {
      if (reference.allocateSync.medianMs <= 0)
        return std::nullopt;
      return row.allocateSync.medianMs / reference.allocateSync.medianMs;
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
  const auto microseconds = [](const TimingStats& stats) { return stats.medianMs * 1000.0; };
  std::ostringstream out;
  out << std::left << std::setw(width) << "resource" << std::right << std::setw(11) << "size"
      << std::setw(13) << "N x batches" << std::setw(11) << "alloc us" << std::setw(10)
      << "+sync us" << std::setw(10) << "free us" << std::setw(10) << "+sync us"
      << "   alloc+sync / " << referenceResource << '\n';
  for (const LatencyRow& row : rows) {
    const std::string batches =
        std::to_string(row.batchSize) + " x " + std::to_string(row.allocate.samples);
    out << std::left << std::setw(width) << row.resource << std::right << std::setw(11)
        << formatBytes(row.bytes) << std::setw(13) << batches << std::fixed << std::setprecision(1)
        << std::setw(11) << microseconds(row.allocate) << std::setw(10)
        << microseconds(row.allocateSync) << std::setw(10) << microseconds(row.deallocate)
        << std::setw(10) << microseconds(row.deallocateSync) << "   ";
    const std::optional<double> ratio = allocateRatio(rows, row, referenceResource);
    if (ratio)
      out << std::setprecision(2) << *ratio << 'x';
    else
      out << "n/a";
    out << '\n';
  }
  return out.str();
}

DeviceFreeMemory smallestFreeMemory(const std::vector<DeviceFreeMemory>& devices) {
  if (devices.empty())
    throw std::invalid_argument("smallestFreeMemory: no devices");
  return *std::min_element(devices.begin(), devices.end(),
                           [](const DeviceFreeMemory& a, const DeviceFreeMemory& b) {
                             return a.freeBytes < b.freeBytes;
                           });
}

}  // namespace memsamples::resource
