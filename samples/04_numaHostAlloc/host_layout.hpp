/**
 * @file host_layout.hpp
 * @brief Sizing of the numaHostAlloc sample's host buffers: how much host memory is available and
 *        how the three vectors A, B and C are laid out in one host range.
 *
 * No CUDA call and no NUMA call; part of `numaHostAlloc_logic` and unit tested. The size of each
 * vector is chosen by memsamples::chooseBufferBytes() with "the host" and the MemAvailable read
 * here, under the same rules as device buffers.
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

/// What this machine can allocate now: memAvailableBytes() of /proc/meminfo, or, where that
/// cannot be read, the free pages sysconf(_SC_AVPHYS_PAGES) counts.
std::uint64_t hostAvailableBytes();

}  // namespace memsamples::numa
