// Sizing of the numaHostAlloc sample's host buffers (see host_layout.hpp).
#include "host_layout.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "memsamples.hpp"

namespace memsamples::numa {

std::uint64_t vectorStride(std::uint64_t vectorBytes) {
  return (vectorBytes + kVectorAlignment - 1) / kVectorAlignment * kVectorAlignment;
}

std::optional<std::uint64_t> memAvailableBytes(const std::string& meminfoText) {
  std::istringstream lines(meminfoText);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("MemAvailable:", 0) != 0)
      continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kib = 0;
    std::string unit, extra;
    if (!(fields >> kib >> unit) || unit != "kB" || (fields >> extra))
      return std::nullopt;
    if (kib > UINT64_MAX / 1024)
      return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

std::uint64_t chooseHostVectorBytes(const std::optional<std::uint64_t>& requested,
                                    std::uint64_t defaultBytes, std::uint64_t availableBytes,
                                    int vectors) {
  if (vectors < 1)
    throw std::invalid_argument("chooseHostVectorBytes: vectors must be >= 1");
  const auto count = static_cast<std::uint64_t>(vectors);
  if (requested) {
    if (*requested % sizeof(float) != 0) {
      throw UsageError("--size " + std::to_string(*requested) +
                       " is not a multiple of 4 bytes (one float)");
    }
    if (*requested > availableBytes / count) {
      throw UsageError("--size " + formatBytes(*requested) + " needs " + std::to_string(vectors) +
                       " host vectors but the host has only " + formatBytes(availableBytes) +
                       " available; choose at most " + formatBytes(availableBytes / count));
    }
    return *requested;
  }
  constexpr std::uint64_t kStep = 2ull << 20;
  const std::uint64_t budget = availableBytes / 10 * 8 / count / kStep * kStep;
  const std::uint64_t bytes = std::min(defaultBytes, budget);
  if (bytes == 0) {
    throw std::runtime_error("the host has only " + formatBytes(availableBytes) +
                             " available, too little for " + std::to_string(vectors) +
                             " vectors of 2 MiB");
  }
  return bytes;
}

}  // namespace memsamples::numa
