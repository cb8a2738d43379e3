/**
 * @file managed_budget.cpp
 * @brief ManagedBuffer's free-memory guard and ManagedMemoryBudget (see managed_buffer.hpp); no
 *        cu* call, so the unit tests run them on any machine.
 */
#include <string>
#include <utility>

#include "managed_buffer.hpp"
#include "memsamples.hpp"  // formatBytes

namespace memsamples::managed {
namespace {

/// Two sizes a message compares: formatBytes() of each, or the exact byte counts when both would
/// print the same ("1.00 GiB refused: only 1.00 GiB free" would explain nothing).
std::pair<std::string, std::string> comparedSizes(std::uint64_t first, std::uint64_t second) {
  std::string a = formatBytes(first);
  std::string b = formatBytes(second);
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
  if (bytes > limit_ - reserved_) {  // a subtraction, so that a huge request cannot overflow
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
