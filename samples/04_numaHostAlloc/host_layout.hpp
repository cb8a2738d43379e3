/**
 * @file host_layout.hpp
 * @brief How the numaHostAlloc sample lays out the three vectors A, B and C in one host range.
 *
 * No CUDA call and no NUMA call; part of `numaHostAlloc_logic` and unit tested. The size of each
 * vector is chosen by memsamples::chooseBufferBytes() from memsamples::hostMemoryAvailable() (the
 * tighter of MemAvailable and the memory cgroup's limit), under the same rules as device buffers.
 */
#pragma once

#include <cstdint>

namespace memsamples::numa {

/// Alignment of each vector inside a host range: a page, so that the kernel's 16-byte (float4)
/// accesses are always aligned and each vector starts on its own page.
inline constexpr std::uint64_t kVectorAlignment = 4096;

/// Distance between A, B and C in a host range: @p vectorBytes rounded up to kVectorAlignment.
std::uint64_t vectorStride(std::uint64_t vectorBytes);

}  // namespace memsamples::numa
