/**
 * @file host_memory.hpp
 * @brief How much host memory this process may still take: MemAvailable and the memory cgroup's
 *        headroom. memsamples::fitHostMemory() in memsamples.hpp asks it for a lesson; this header
 *        is for code that reads or fakes the figures itself.
 *
 * Pinned and managed buffers take host memory that the device's free memory says nothing about,
 * and inside a container the machine's MemAvailable says nothing about the container's limit:
 * pinning past that limit gets the process killed rather than refused. Nothing here touches the
 * CUDA driver; every reader takes a root folder so that unit tests can fake /proc and /sys.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memsamples {

/// Host memory this process can still take, and the limit that decided it.
struct HostMemory {
  std::uint64_t availableBytes = 0;  ///< The tighter of the limits that were read, in bytes.
  /// Names that limit for messages: "the host (MemAvailable)", "the host (free pages)", or "the
  /// host (the memory limit of cgroup <path>)" when a container's or service's limit is tighter.
  std::string limitedBy;
};

/// The "MemAvailable" line of a meminfo text (the format of /proc/meminfo) in bytes.
/// @return the value, or none when the line is absent, malformed or does not fit in 64 bits.
std::optional<std::uint64_t> memAvailableBytes(std::string_view meminfoText);

/**
 * What this process may still allocate on the host: the tighter of the kernel's MemAvailable and
 * the memory cgroup's headroom.
 *
 * The headroom is `memory.max - memory.current` (cgroup v2) or `memory.limit_in_bytes -
 * memory.usage_in_bytes` (v1), plus the inactive page cache that memory.stat reports
 * (`inactive_file`, v1 `total_inactive_file`): the usage counts page cache, which a busy
 * container fills up to its limit and the kernel drops before it kills anyone. The smallest over
 * the process's cgroup and every ancestor the mount shows counts, because a parent's limit binds
 * its children too. A limit file that cannot be read is no limit; without /proc/meminfo the free
 * pages (sysconf) stand in for MemAvailable.
 * @param root "" for this machine, or a fake tree holding proc/meminfo, proc/self/cgroup and
 *        sys/fs/cgroup/... (unit tests).
 * @return the figure and the limit that decided it. Nothing is thrown but std::bad_alloc: a file
 *         that is missing or malformed is passed over.
 */
HostMemory hostMemoryAvailable(const std::string& root = "");

/**
 * memsamples::fitHostMemory() against a given @p host instead of this machine's: @p hostBuffers
 * buffers of @p bytes each (the size already fitted to the device) must also fit in
 * @p host.availableBytes, with the rules of chooseBufferBytes().
 * @return the @p requested size when one was given and it fits; otherwise @p bytes, reduced to
 *         what host memory allows when that is the tighter limit.
 * @throws UsageError when the requested size does not fit, naming @p host.limitedBy;
 *         std::runtime_error when not even one element of @p elementBytes fits.
 */
std::uint64_t fitHostMemory(const std::optional<std::uint64_t>& requested, std::uint64_t bytes,
                            int hostBuffers, std::uint64_t elementBytes, const HostMemory& host);

}  // namespace memsamples
