/**
 * @file stage_timer.hpp
 * @brief The round timer of the measurements that need more than timeOnStream(): several stages
 *        per round, each between two CUDA events, with the host time each stage kept the CPU busy.
 */
#pragma once

#include <cuda.h>

#include <functional>
#include <vector>

namespace memsamples {

/// The medians of one stage: GPU time between events around it, and how long queuing it kept the
/// CPU busy (for a synchronous call such as cuMemcpyDtoH, the call itself).
struct StageTimes {
  double gpuMs = 0;   ///< Median GPU time, ms.
  double hostMs = 0;  ///< Median host time, ms.
};

/// Runs @p stages in order, @p warmup + @p iterations rounds, all queued on @p stream before it
/// is waited for, and returns the medians of each stage over the last @p iterations rounds. A
/// stage that only moves data into place (a migration before a timed stage) has its own events,
/// so it is never part of the time of the stage after it; its own times are simply not read.
std::vector<StageTimes> timeRounds(CUstream stream, int warmup, int iterations,
                                   const std::vector<std::function<void()>>& stages);

}  // namespace memsamples
