/**
 * @file managed_budget.cpp
 * @brief The CUDA-free half of managed_buffer.hpp: the free-memory guard and the budget.
 */
#include "managed_buffer.hpp"

#include <string>
#include <utility>

#include "memsamples.hpp"

namespace memsamples::managed {
namespace {

// Two sizes a message compares, for people: formatBytes() of each, or the exact byte counts when
// both would print the same ("1.00 GiB refused: only 1.00 GiB free" would explain nothing).
std::pair<std::string, std::string> comparedSizes(std::uint64_t first, std::uint64_t second) {
  std::string a = formatBytes(first), b = formatBytes(second);
  if (a == b && first != second)
    return {std::to_string(first) + " bytes", std::to_string(second) + " bytes"};
  return {std::move(a), std::move(b)};
}

}  // namespace

void checkManagedRequest(std::uint64_t bytes, std::uint64_t freeBytes) {
  if (bytes == 0) {
    throw ManagedAllocationRefused(
        "cuMemAllocManaged of 0 bytes refused: a managed allocation needs at least one byte "
        "(the driver would return CUDA_ERROR_INVALID_VALUE)");
  }
  if (bytes > freeBytes) {
    const auto [asked, available] = comparedSizes(bytes, freeBytes);
    throw ManagedAllocationRefused(
        "cuMemAllocManaged of " + asked + " refused: the device has only " + available +
        " free, and over-subscribing managed memory can stall a shared GPU; ask for at most " +
        available);
  }
}

void ManagedMemoryBudget::reserve(std::uint64_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  // Written as a subtraction so that a huge request cannot overflow the sum.
  if (bytes > limit_ - reserved_) {
    const auto [asked, left] = comparedSizes(bytes, limit_ - reserved_);
    throw ManagedAllocationRefused("cuMemAllocManaged of " + asked +
                                   " refused: the managed-memory budget of " + formatBytes(limit_) +
                                   " has " + left + " left (" + formatBytes(reserved_) +
                                   " already allocated)");
  }
  reserved_ += bytes;
}

void ManagedMemoryBudget::release(std::uint64_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > reserved_) {
    const auto [given, charged] = comparedSizes(bytes, reserved_);
    throw std::logic_error("ManagedMemoryBudget::release: " + given + " given back, but only " +
                           charged + " is charged; a caller released memory it never reserved");
  }
  reserved_ -= bytes;
}

std::uint64_t ManagedMemoryBudget::reserved() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

}  // namespace memsamples::managed
