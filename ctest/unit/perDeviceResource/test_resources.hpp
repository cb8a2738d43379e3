// CPU-only memory resources for the registry tests: no driver, no GPU.
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "memory_resource.hpp"

namespace memsamples::resource::testing {

/// Host memory from malloc, with counters; thread-safe. Optionally tied to a device id and able
/// to fail its deallocate (to test error paths).
class MallocResource final : public MemoryResource {
 public:
  explicit MallocResource(std::string name, std::optional<int> owner = std::nullopt,
                          ResourceProperties properties = {true, false, false})
      : name_(std::move(name)), owner_(owner), properties_(properties) {}
  ~MallocResource() override { ++destroyed(); }

  /// How many MallocResource objects were destroyed (all tests together).
  static std::atomic<int>& destroyed() {
    static std::atomic<int> count{0};
    return count;
  }

  int allocations() const { return allocations_.load(); }
  int deallocations() const { return deallocations_.load(); }
  int outstanding() const { return allocations_.load() - deallocations_.load(); }
  CUstream lastStream() const { return lastStream_.load(); }
  std::size_t lastBytes() const { return lastBytes_.load(); }
  void failDeallocate(bool fail) { failDeallocate_ = fail; }

 private:
  void* doAllocate(std::size_t bytes, CUstream stream) override {
    void* ptr = std::malloc(bytes);
    if (ptr == nullptr)
      throw std::bad_alloc();
    ++allocations_;
    lastStream_ = stream;
    lastBytes_ = bytes;
    return ptr;
  }
  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override {
    if (failDeallocate_.load())
      throw std::runtime_error(name_ + ": deallocate failed on purpose");
    std::free(ptr);
    ++deallocations_;
    lastStream_ = stream;
    lastBytes_ = bytes;
  }
  // Two malloc resources can free each other's memory; the tests give some of them distinct
  // properties to tell them apart, so only resources with the same properties compare equal.
  bool doIsEqual(const MemoryResource& other) const noexcept override {
    const auto* malloc = dynamic_cast<const MallocResource*>(&other);
    return malloc != nullptr && malloc->properties_.hostAccessible == properties_.hostAccessible &&
           malloc->properties_.deviceAccessible == properties_.deviceAccessible &&
           malloc->properties_.streamOrdered == properties_.streamOrdered;
  }
  ResourceProperties doProperties() const noexcept override { return properties_; }
  std::optional<int> doOwnerDevice() const noexcept override { return owner_; }
  std::string doName() const override { return name_; }

  std::string name_;
  std::optional<int> owner_;
  ResourceProperties properties_;
  std::atomic<int> allocations_{0};
  std::atomic<int> deallocations_{0};
  std::atomic<CUstream> lastStream_{nullptr};
  std::atomic<std::size_t> lastBytes_{0};
  std::atomic<bool> failDeallocate_{false};
};

/// A fake stream handle (never dereferenced).
inline CUstream fakeStream(std::uintptr_t value) {
  return reinterpret_cast<CUstream>(value);
}

}  // namespace memsamples::resource::testing
