/**
 * @file host_layout.cpp
 * @brief Page sizes and the layout of a numaHostAlloc host range (see host_layout.hpp).
 */
#include "host_layout.hpp"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

namespace memsamples::numa {

PageSizes readPageSizes(std::size_t basePageBytes, const std::string& sysfsRoot) {
  PageSizes pages;
  pages.base = basePageBytes;
  std::ifstream file(sysfsRoot + "/kernel/mm/transparent_hugepage/hpage_pmd_size");
  std::uint64_t huge = 0;
  std::string extra;
  if (file >> huge && !(file >> extra) && huge > basePageBytes && huge % basePageBytes == 0 &&
      huge <= SIZE_MAX)
    pages.huge = static_cast<std::size_t>(huge);
  return pages;
}

PageSizes systemPageSizes() {
  // Read once: 06 lays out a range per allocation inside its timed latency loops.
  static const PageSizes pages = readPageSizes(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
  return pages;
}

std::uint64_t vectorStride(std::uint64_t vectorBytes, std::uint64_t pageBytes) {
  return (vectorBytes + pageBytes - 1) / pageBytes * pageBytes;
}

RangeLayout hostRangeLayout(std::size_t bytes, const PageSizes& pages) {
  RangeLayout layout;
  layout.alignment = pages.huge > 0 && bytes >= pages.huge ? pages.huge : pages.base;
  if (bytes == 0 || bytes > SIZE_MAX - 2 * layout.alignment) {
    throw std::invalid_argument("host range of " + std::to_string(bytes) +
                                " bytes cannot be mapped");
  }
  layout.mappedBytes = (bytes + layout.alignment - 1) / layout.alignment * layout.alignment;
  layout.reservedBytes =
      layout.mappedBytes + (layout.alignment > pages.base ? layout.alignment : 0);
  return layout;
}

}  // namespace memsamples::numa
