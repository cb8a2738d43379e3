/**
 * @file host_layout.hpp
 * @brief Sizing of the numaHostAlloc sample's host buffers: how much host memory is available and
 *        how the three vectors A, B and C are laid out in one host range.
 *
 * Pure functions (no CUDA call, no NUMA call), part of `numaHostAlloc_logic` and unit tested.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace memsamples::numa {

/// Alignment of each vector inside a host range: a page, so that the kernel's 16-byte (float4)
/// accesses are always aligned and each vector starts on its own page.
inline constexpr std::uint64_t kVectorAlignment = 4096;

/// Distance between A, B and C in a host range: @p vectorBytes rounded up to kVectorAlignment.
std::uint64_t vectorStride(std::uint64_t vectorBytes);

/**
 * "MemAvailable" of a meminfo text (the format of /proc/meminfo), in bytes: what the kernel
 * estimates can be allocated without swapping. nullopt when the line is missing or malformed.
 */
std::optional<std::uint64_t> memAvailableBytes(const std::string& meminfoText);

/**
 * The bytes per vector when @p vectors host vectors must fit in @p availableBytes of host memory.
 *
 * With a @p requested size: it must be a multiple of 4 (one float) and all vectors must fit,
 * else UsageError naming the host memory. Without: @p defaultBytes, reduced to 80 % of what is
 * available when needed and rounded down to a multiple of 2 MiB.
 * @throws memsamples::UsageError, or std::runtime_error when not even 2 MiB per vector fits.
 */
std::uint64_t chooseHostVectorBytes(const std::optional<std::uint64_t>& requested,
                                    std::uint64_t defaultBytes, std::uint64_t availableBytes,
                                    int vectors);

}  // namespace memsamples::numa
