/**
 * @file host_layout.cpp
 * @brief Sizing of the numaHostAlloc sample's host buffers (see host_layout.hpp).
 */
#include "host_layout.hpp"

namespace memsamples::numa {

std::uint64_t vectorStride(std::uint64_t vectorBytes) {
  return (vectorBytes + kVectorAlignment - 1) / kVectorAlignment * kVectorAlignment;
}

}  // namespace memsamples::numa
