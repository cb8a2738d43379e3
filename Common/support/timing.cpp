// The CUDA-free half of timing: the statistics and the launch-blocking probe of
// support/timing.hpp, and gigabytesPerSecond() and blocksToCover() of memsamples.hpp. Unit tested
// in ctest/unit/common (measure_test, timing_test).
#include "support/timing.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace memsamples {

const char* processEnvironment(const char* name) {
  return std::getenv(name);
}

bool launchesBlockTheHost(const EnvironmentLookup& lookup) {
  const char* blocking = lookup("CUDA_LAUNCH_BLOCKING");
  return blocking != nullptr && std::string(blocking) == "1";
}

TimingStats summarizeTimings(std::vector<double> timesMs) {
  if (timesMs.empty())
    throw std::invalid_argument("summarizeTimings: no timings");
  std::sort(timesMs.begin(), timesMs.end());
  const std::size_t n = timesMs.size();
  TimingStats stats;
  stats.medianMs = n % 2 == 1 ? timesMs[n / 2] : (timesMs[n / 2 - 1] + timesMs[n / 2]) / 2.0;
  stats.minMs = timesMs.front();
  stats.maxMs = timesMs.back();
  stats.samples = static_cast<int>(n);
  return stats;
}

unsigned int blocksToCover(std::uint64_t items, std::uint64_t itemsPerBlock) {
  if (itemsPerBlock == 0)
    throw std::invalid_argument("blocksToCover: a block must take at least one item");
  constexpr std::uint64_t kMaxGridX = (1ull << 31) - 1;
  const std::uint64_t blocks = items / itemsPerBlock + (items % itemsPerBlock != 0 ? 1 : 0);
  return static_cast<unsigned int>(std::clamp<std::uint64_t>(blocks, 1, kMaxGridX));
}

double gigabytesPerSecond(double bytes, double milliseconds) {
  if (milliseconds <= 0)
    return std::numeric_limits<double>::quiet_NaN();
  return bytes / (milliseconds * 1e-3) / 1e9;
}

}  // namespace memsamples
