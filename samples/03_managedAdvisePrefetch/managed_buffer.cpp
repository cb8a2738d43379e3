// ManagedBuffer: cuMemAllocManaged behind the free-memory guard and an optional budget.
#include "managed_buffer.hpp"

#include <utility>

#include "memsamples.hpp"

namespace memsamples::managed {

ManagedBuffer::ManagedBuffer(std::size_t bytes, ManagedMemoryBudget* budget, unsigned int flags) {
  std::size_t freeBytes = 0, totalBytes = 0;
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

ManagedBuffer::~ManagedBuffer() {
  if (ptr_ != 0) {
    cuMemFree(ptr_);
    if (budget_ != nullptr)
      budget_->release(bytes_);
  }
}

ManagedBuffer::ManagedBuffer(ManagedBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)),
      budget_(std::exchange(other.budget_, nullptr)) {}

ManagedBuffer& ManagedBuffer::operator=(ManagedBuffer&& other) noexcept {
  std::swap(ptr_, other.ptr_);
  std::swap(bytes_, other.bytes_);
  std::swap(budget_, other.budget_);
  return *this;
}

}  // namespace memsamples::managed
