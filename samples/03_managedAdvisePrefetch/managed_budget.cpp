// The CUDA-free half of managed_buffer.hpp: the free-memory guard and the budget.
#include "managed_buffer.hpp"

#include <string>

#include "memsamples.hpp"

namespace memsamples::managed {

void checkManagedRequest(std::uint64_t bytes, std::uint64_t freeBytes) {
  if (bytes == 0) {
    throw ManagedAllocationRefused(
        "cuMemAllocManaged of 0 bytes refused: a managed allocation needs at least one byte "
        "(the driver would return CUDA_ERROR_INVALID_VALUE)");
  }
  if (bytes > freeBytes) {
    throw ManagedAllocationRefused(
        "cuMemAllocManaged of " + formatBytes(bytes) + " refused: the device has only " +
        formatBytes(freeBytes) +
        " free, and over-subscribing managed memory can stall a shared GPU; ask for at most " +
        formatBytes(freeBytes));
  }
}

void ManagedMemoryBudget::reserve(std::uint64_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  // Written as a subtraction so that a huge request cannot overflow the sum.
  if (bytes > limit_ - reserved_) {
    throw ManagedAllocationRefused("cuMemAllocManaged of " + formatBytes(bytes) +
                                   " refused: the managed-memory budget of " + formatBytes(limit_) +
                                   " has " + formatBytes(limit_ - reserved_) + " left (" +
                                   formatBytes(reserved_) + " already allocated)");
  }
  reserved_ += bytes;
}

void ManagedMemoryBudget::release(std::uint64_t bytes) noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  reserved_ = bytes > reserved_ ? 0 : reserved_ - bytes;
}

std::uint64_t ManagedMemoryBudget::reserved() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

}  // namespace memsamples::managed
