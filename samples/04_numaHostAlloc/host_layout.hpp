/**
 * @file host_layout.hpp
 * @brief The page sizes of this kernel, and how the numaHostAlloc sample lays out the three
 *        vectors A, B and C in one host range.
 *
 * No CUDA call and no NUMA call; part of `numaHostAlloc_logic` and unit tested. The size of each
 * vector is chosen by memsamples::chooseBufferBytes() from memsamples::hostMemoryAvailable() (the
 * tighter of MemAvailable and the memory cgroup's limit), under the same rules as device buffers.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace memsamples::numa {

/// The two page sizes a host range is laid out with. Neither is a constant: arm64 kernels run
/// with 4 KiB, 16 KiB or 64 KiB base pages, and the PMD-level transparent huge page follows
/// (2 MiB, 32 MiB, 512 MiB).
struct PageSizes {
  std::size_t base = 4096;  ///< sysconf(_SC_PAGESIZE).
  std::size_t huge = 0;     ///< hpage_pmd_size; 0 where the kernel has no transparent huge pages.
};

/**
 * @p basePageBytes with the transparent huge page size from
 * `<sysfsRoot>/kernel/mm/transparent_hugepage/hpage_pmd_size`. A missing or malformed file, or a
 * size that is not a multiple of the base page, leaves `huge` at 0 (ranges are then laid out in
 * base pages only).
 */
PageSizes readPageSizes(std::size_t basePageBytes, const std::string& sysfsRoot = "/sys");

/// readPageSizes() of this machine: sysconf(_SC_PAGESIZE) and /sys.
PageSizes systemPageSizes();

/// Distance between A, B and C in a host range: @p vectorBytes rounded up to a page of
/// @p pageBytes, so that each vector starts on its own page (and the kernel's 16-byte float4
/// accesses stay aligned).
std::uint64_t vectorStride(std::uint64_t vectorBytes, std::uint64_t pageBytes);

/// How an anonymous mapping for a host range is made.
struct RangeLayout {
  std::size_t alignment = 0;      ///< Where the range starts: a huge page, or a base page.
  std::size_t mappedBytes = 0;    ///< The range: the request rounded up to `alignment`.
  std::size_t reservedBytes = 0;  ///< What to mmap: one `alignment` more when it exceeds a page.
};

/**
 * A range of @p bytes from one huge page up starts on a huge-page boundary and is a whole number
 * of huge pages, so that transparent huge pages can back all of it; a smaller one is laid out in
 * base pages, because rounding it up to a huge page (512 MiB with 64 KiB pages) would touch and
 * pin memory nobody asked for. The extra addresses of `reservedBytes` are never touched.
 * @throws std::invalid_argument for 0 bytes, or a size that cannot be rounded up.
 */
RangeLayout hostRangeLayout(std::size_t bytes, const PageSizes& pages);

}  // namespace memsamples::numa
