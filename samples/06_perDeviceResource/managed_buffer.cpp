/**
 * @file managed_buffer.cpp
 * @brief ManagedBuffer: cuMemAllocManaged behind the free-memory guard and an optional budget.
 */
#include "managed_buffer.hpp"

#include <utility>

#include "memsamples.hpp"

namespace memsamples::managed {

ManagedBuffer::ManagedBuffer(std::size_t bytes, ManagedMemoryBudget* budget, unsigned int flags) {
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  checkManagedRequest(bytes, freeBytes);
  if (budget != nullptr)
    budget->reserve(bytes);
  const CUresult result = cuMemAllocManaged(&ptr_, bytes, flags);
  if (result != CUDA_SUCCESS) {
    if (budget != nullptr)
      budget->release(bytes);
    check(result, "cuMemAllocManaged");
  }
  bytes_ = bytes;
  budget_ = budget;
}

ManagedBuffer::ManagedBuffer(ManagedBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)),
      budget_(std::exchange(other.budget_, nullptr)) {}

ManagedBuffer& ManagedBuffer::operator=(ManagedBuffer&& other) noexcept {
  if (this != &other) {
    freeMemory();  // this buffer's memory goes back now, not when @p other happens to die
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    budget_ = std::exchange(other.budget_, nullptr);
  }
  return *this;
}

void ManagedBuffer::freeMemory() noexcept {
  if (ptr_ == 0)
    return;
  (void)cuMemFree(std::exchange(ptr_, 0));  // ignored, as in DriverHandle: this runs in unwinding
  // The budget was charged exactly bytes_; a release it refuses is another caller's logic error,
  // which then ends the program (std::terminate, with the budget's message) rather than hiding.
  if (ManagedMemoryBudget* budget = std::exchange(budget_, nullptr))
    budget->release(bytes_);
  bytes_ = 0;
}

}  // namespace memsamples::managed
