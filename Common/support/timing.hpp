/**
 * @file timing.hpp
 * @brief What memsamples::timeOnStream() is built from, for measure files that time work of
 *        their own: the statistics of repeated timings and whether launches block the host.
 *
 * Nothing here touches the CUDA driver; the environment is read through a lookup function that a
 * unit test can replace with a table.
 */
#pragma once

#include <functional>
#include <vector>

#include "memsamples.hpp"

namespace memsamples {

/// The median, fastest and slowest of @p timesMs, and their count (see TimingStats).
/// @throws std::invalid_argument when @p timesMs is empty.
TimingStats summarizeTimings(std::vector<double> timesMs);

/// Looks up an environment variable by name: processEnvironment() in a sample, a table in a
/// test. It returns the value, or nullptr when the variable is not set.
using EnvironmentLookup = std::function<const char*(const char*)>;

/// This process's environment: std::getenv(@p name), nullptr when @p name is not set.
const char* processEnvironment(const char* name);

/// Whether every kernel launch waits until the kernel has run (CUDA_LAUNCH_BLOCKING=1, read
/// through @p lookup). Then a stream held back by the host holds the host too (timeOnStream()
/// times without its gate), and kernels that must run at the same time on several GPUs never do
/// (08_multicastReduce waives). Throws what @p lookup throws.
bool launchesBlockTheHost(const EnvironmentLookup& lookup = processEnvironment);

}  // namespace memsamples
