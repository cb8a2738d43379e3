/**
 * @file stage_timer.cpp
 * @brief The round timer; see stage_timer.hpp.
 */
#include "support/stage_timer.hpp"

#include <chrono>
#include <cstddef>

#include "memsamples.hpp"
#include "support/timing.hpp"

namespace memsamples {

std::vector<StageTimes> timeRounds(CUstream stream, int warmup, int iterations,
                                   const std::vector<std::function<void()>>& stages) {
  using Clock = std::chrono::steady_clock;
  const std::size_t n = stages.size();
  const std::size_t untimed = 2 * n * static_cast<std::size_t>(warmup);  // the warm-up's events
  std::vector<OwnedEvent> marks(untimed + 2 * n * static_cast<std::size_t>(iterations));
  for (OwnedEvent& mark : marks)
    check(cuEventCreate(mark.out(), CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<std::vector<double>> hostMs(n);
  for (std::size_t m = 0; m < marks.size(); m += 2) {
    const std::size_t s = m / 2 % n;  // events m and m + 1 enclose stage s of round m / (2 n)
    check(cuEventRecord(marks[m].get(), stream), "cuEventRecord");
    const Clock::time_point begin = Clock::now();
    stages[s]();
    const std::chrono::duration<double, std::milli> busy = Clock::now() - begin;
    hostMs[s].push_back(busy.count());
    check(cuEventRecord(marks[m + 1].get(), stream), "cuEventRecord");
  }
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  std::vector<StageTimes> medians(n);
  for (std::size_t s = 0; s < n; ++s) {
    std::vector<double> gpuMs;
    for (std::size_t m = untimed + 2 * s; m < marks.size(); m += 2 * n) {
      float elapsed = 0;
      check(cuEventElapsedTime(&elapsed, marks[m].get(), marks[m + 1].get()),
            "cuEventElapsedTime");
      gpuMs.push_back(elapsed);
    }
    hostMs[s].erase(hostMs[s].begin(), hostMs[s].begin() + warmup);
    medians[s] = {summarizeTimings(gpuMs).medianMs, summarizeTimings(hostMs[s]).medianMs};
  }
  return medians;
}

}  // namespace memsamples
