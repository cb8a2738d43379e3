// A fake VmmDriver for the unit tests: it keeps reservations, allocations and mappings like the
// real driver does, enforces the rules the CUDA documentation states for each call (and returns
// CUDA_ERROR_INVALID_VALUE when one is broken), and can be told to fail the n-th call of a step
// the way a real driver would (as opposed to FaultInjection, which never reaches the driver).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "striped_vmm_logic.hpp"

namespace fake {

using memsamples::vmm::VmmStep;

class FakeVmmDriver : public memsamples::vmm::VmmDriver {
 public:
  explicit FakeVmmDriver(std::uint64_t granularity = 2ull << 20) : granularity_(granularity) {}

  // The @p nth call (0-based) of @p step returns @p result without doing anything.
  void failCall(VmmStep step, int nth, CUresult result = CUDA_ERROR_OUT_OF_MEMORY) {
    failures_[step][nth] = result;
  }

  CUresult reserve(CUdeviceptr* base, std::uint64_t bytes, std::uint64_t alignment,
                   CUdeviceptr hint) override {
    if (const auto failure = scheduled(VmmStep::Reserve))
      return *failure;
    if (bytes == 0 || bytes % kPage != 0 || (alignment & (alignment - 1)) != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    const std::uint64_t align = alignment == 0 ? kPage : alignment;
    CUdeviceptr start = hint;
    if (start == 0 || start % align != 0 || overlapsReservation(start, bytes)) {
      start = (next_ + align - 1) / align * align;
      while (overlapsReservation(start, bytes))
        start += align;
    }
    next_ = std::max(next_, start + bytes);
    reservations_[start] = bytes;
    *base = start;
    return CUDA_SUCCESS;
  }

  CUresult create(CUmemGenericAllocationHandle* handle, std::uint64_t bytes, int device) override {
    if (const auto failure = scheduled(VmmStep::Create))
      return *failure;
    if (bytes == 0 || bytes % granularity_ != 0)
      return CUDA_ERROR_INVALID_VALUE;
    // Handles start at 0 on purpose: the code under test must not treat 0 as "no handle".
    const CUmemGenericAllocationHandle id = nextHandle_++;
    allocations_[id] = Allocation{device, bytes, false, 0};
    *handle = id;
    return CUDA_SUCCESS;
  }

  CUresult map(CUdeviceptr address, std::uint64_t bytes,
               CUmemGenericAllocationHandle handle) override {
    if (const auto failure = scheduled(VmmStep::Map))
      return *failure;
    const auto allocation = allocations_.find(handle);
    if (allocation == allocations_.end() || allocation->second.released) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (address % granularity_ != 0 || bytes != allocation->second.bytes ||
        !insideReservation(address, bytes) || overlapsMapping(address, bytes)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    mappings_[address] = Mapping{bytes, handle, {}};
    ++allocation->second.mappings;
    return CUDA_SUCCESS;
  }

  CUresult release(CUmemGenericAllocationHandle handle) override {
    if (const auto failure = scheduled(VmmStep::Release))
      return *failure;
    const auto allocation = allocations_.find(handle);
    if (allocation == allocations_.end() || allocation->second.released) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    allocation->second.released = true;
    if (allocation->second.mappings == 0)
      allocations_.erase(allocation);
    return CUDA_SUCCESS;
  }

  CUresult setAccess(CUdeviceptr base, std::uint64_t bytes,
                     const std::vector<int>& devices) override {
    if (const auto failure = scheduled(VmmStep::SetAccess))
      return *failure;
    // "The range must be a fully mapped address range containing all allocations".
    const auto covered = wholeMappings(base, bytes);
    if (devices.empty() || covered.empty())
      return CUDA_ERROR_INVALID_VALUE;
    for (const CUdeviceptr address : covered)
      mappings_[address].access = devices;
    return CUDA_SUCCESS;
  }

  CUresult unmap(CUdeviceptr address, std::uint64_t bytes) override {
    if (const auto failure = scheduled(VmmStep::Unmap))
      return *failure;
    // "The range must be the entire contiguous address range that was mapped to": only whole
    // mappings, without holes.
    const auto covered = wholeMappings(address, bytes);
    if (covered.empty())
      return CUDA_ERROR_INVALID_VALUE;
    for (const CUdeviceptr start : covered) {
      const CUmemGenericAllocationHandle handle = mappings_[start].handle;
      mappings_.erase(start);
      Allocation& allocation = allocations_[handle];
      if (--allocation.mappings == 0 && allocation.released)
        allocations_.erase(handle);
    }
    return CUDA_SUCCESS;
  }

  CUresult addressFree(CUdeviceptr base, std::uint64_t bytes) override {
    if (const auto failure = scheduled(VmmStep::AddressFree))
      return *failure;
    const auto reservation = reservations_.find(base);
    if (reservation == reservations_.end() || reservation->second != bytes ||
        overlapsMapping(base, bytes)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    reservations_.erase(reservation);
    return CUDA_SUCCESS;
  }

  std::string describe(CUresult result) override {
    return "FAKE_ERROR_" + std::to_string(static_cast<int>(result));
  }

  // ------------------------------------------------------------------------- what tests inspect
  int calls(VmmStep step) const {
    const auto found = calls_.find(step);
    return found == calls_.end() ? 0 : found->second;
  }
  std::size_t reservations() const { return reservations_.size(); }
  std::size_t mappings() const { return mappings_.size(); }
  std::size_t liveAllocations() const { return allocations_.size(); }
  std::size_t unreleasedHandles() const {
    std::size_t count = 0;
    for (const auto& entry : allocations_)
      count += entry.second.released ? 0 : 1;
    return count;
  }
  std::uint64_t bytesOn(int device) const {
    std::uint64_t bytes = 0;
    for (const auto& entry : allocations_) {
      if (entry.second.device == device)
        bytes += entry.second.bytes;
    }
    return bytes;
  }
  // Device of the allocation mapped at @p address, or -1.
  int deviceMappedAt(CUdeviceptr address) const {
    const auto found = mappings_.find(address);
    if (found == mappings_.end())
      return -1;
    return allocations_.at(found->second.handle).device;
  }
  std::vector<int> accessAt(CUdeviceptr address) const {
    const auto found = mappings_.find(address);
    return found == mappings_.end() ? std::vector<int>{} : found->second.access;
  }
  bool empty() const { return reservations_.empty() && mappings_.empty() && allocations_.empty(); }
  const std::vector<VmmStep>& log() const { return log_; }

  static constexpr std::uint64_t kPage = 4096;

 private:
  struct Allocation {
    int device;
    std::uint64_t bytes;
    bool released;
    int mappings;
  };
  struct Mapping {
    std::uint64_t bytes;
    CUmemGenericAllocationHandle handle;
    std::vector<int> access;
  };

  std::optional<CUresult> scheduled(VmmStep step) {
    log_.push_back(step);
    const int nth = calls_[step]++;
    const auto forStep = failures_.find(step);
    if (forStep == failures_.end())
      return std::nullopt;
    const auto failure = forStep->second.find(nth);
    if (failure == forStep->second.end())
      return std::nullopt;
    return failure->second;
  }

  bool overlapsReservation(CUdeviceptr start, std::uint64_t bytes) const {
    for (const auto& [base, size] : reservations_) {
      if (start < base + size && base < start + bytes)
        return true;
    }
    return false;
  }
  bool insideReservation(CUdeviceptr start, std::uint64_t bytes) const {
    for (const auto& [base, size] : reservations_) {
      if (start >= base && start + bytes <= base + size)
        return true;
    }
    return false;
  }
  bool overlapsMapping(CUdeviceptr start, std::uint64_t bytes) const {
    for (const auto& [address, mapping] : mappings_) {
      if (start < address + mapping.bytes && address < start + bytes)
        return true;
    }
    return false;
  }
  // The starts of the mappings that exactly tile [start, start + bytes); empty if they do not.
  std::vector<CUdeviceptr> wholeMappings(CUdeviceptr start, std::uint64_t bytes) const {
    std::vector<CUdeviceptr> covered;
    CUdeviceptr position = start;
    while (position < start + bytes) {
      const auto found = mappings_.find(position);
      if (found == mappings_.end())
        return {};
      covered.push_back(position);
      position += found->second.bytes;
    }
    if (position != start + bytes)
      return {};
    return covered;
  }

  std::uint64_t granularity_;
  CUdeviceptr next_ = 0x7f0000000000ull;
  CUmemGenericAllocationHandle nextHandle_ = 0;
  std::map<CUdeviceptr, std::uint64_t> reservations_;
  std::map<CUmemGenericAllocationHandle, Allocation> allocations_;
  std::map<CUdeviceptr, Mapping> mappings_;
  std::map<VmmStep, std::map<int, CUresult>> failures_;
  std::map<VmmStep, int> calls_;
  std::vector<VmmStep> log_;
};

}  // namespace fake
