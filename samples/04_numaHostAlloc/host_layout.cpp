/**
 * @file host_layout.cpp
 * @brief Sizing of the numaHostAlloc sample's host buffers (see host_layout.hpp).
 */
#include "host_layout.hpp"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

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

std::uint64_t hostAvailableBytes() {
  std::ifstream file("/proc/meminfo");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (const auto available = memAvailableBytes(text))
    return *available;
  return static_cast<std::uint64_t>(sysconf(_SC_AVPHYS_PAGES)) *
         static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace memsamples::numa
