/**
 * @file owned_allocations.hpp
 * @brief OwnedAllocations: the thread-safe table in which a resource keeps the RAII owner of each
 *        allocation it handed out (an OwnedDeviceMemory, a StripedVmmRange, a bound host range...).
 *
 * The driver-backed resources of samples 02, 03 and 04 are RAII classes: each allocation is an
 * object that frees its memory when destroyed. A memory resource hands out raw pointers instead,
 * so it keeps those objects here, keyed by pointer, until deallocate() takes them back. That
 * also gives every such resource the same checks: a pointer it did not allocate, or a size that
 * is not the allocated one, is refused with a message instead of freeing the wrong thing. What is
 * still in the table when the resource is destroyed is freed then, so nothing leaks.
 *
 * Header-only and CUDA-free; unit tested with a fake owner.
 */
#pragma once

#include <cstddef>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>  // std::declval, std::move

namespace memsamples::resource {

/**
 * A table from pointer to (size, owner), safe to use from many threads.
 * @tparam Owner a movable type whose destructor frees the allocation.
 */
template <typename Owner>
class OwnedAllocations {
 public:
  /// @param resourceName names the resource in error messages.
  explicit OwnedAllocations(std::string resourceName) : resourceName_(std::move(resourceName)) {}

  /**
   * Stores @p owner of the allocation at @p ptr of @p bytes.
   * @throws std::logic_error when @p ptr is already in the table (the allocator handed out one
   *         address twice); @p owner is then destroyed, i.e. its memory freed.
   */
  void add(void* ptr, std::size_t bytes, Owner owner) {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool inserted = entries_.try_emplace(ptr, Entry{bytes, std::move(owner)}).second;
    if (!inserted)
      throw std::logic_error(resourceName_ + ": address " + text(ptr) + " was handed out twice");
  }

  /**
   * Removes and returns the owner of @p ptr; destroying it frees the memory.
   * @throws std::invalid_argument (and leaves the table unchanged) when @p ptr is not in the
   *         table or @p bytes is not the allocated size.
   */
  Owner take(void* ptr, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(ptr);
    if (found == entries_.end())
      throw unknown("deallocate", ptr);
    if (found->second.bytes != bytes) {
      throw std::invalid_argument(resourceName_ + ": deallocate of " + text(ptr) + " with " +
                                  std::to_string(bytes) + " bytes, but it was allocated with " +
                                  std::to_string(found->second.bytes) + " bytes");
    }
    Owner owner = std::move(found->second.owner);
    entries_.erase(found);
    return owner;
  }

  /**
   * Calls @p read with the owner of @p ptr, under the table's lock, and returns its answer: for
   * what a resource recorded at allocation time (e.g. a device address). @p read must be short
   * and must not use this table.
   * @throws std::invalid_argument naming @p operation when @p ptr is not in the table.
   */
  template <typename Read>
  auto inspect(void* ptr, const char* operation, Read&& read) const
      -> decltype(read(std::declval<const Owner&>())) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(ptr);
    if (found == entries_.end())
      throw unknown(operation, ptr);
    return read(static_cast<const Owner&>(found->second.owner));
  }

  /// Frees every allocation still in the table now (the owners are destroyed after the lock is
  /// released); for a resource destructor that must free in a particular context.
  void clear() noexcept {
    std::unordered_map<void*, Entry> entries;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      entries.swap(entries_);
    }
  }

  /// How many allocations are outstanding.
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

  /// The name used in messages.
  const std::string& resourceName() const noexcept { return resourceName_; }

 private:
  struct Entry {
    std::size_t bytes;
    Owner owner;
  };
  static std::string text(void* ptr) {
    std::ostringstream out;
    out << ptr;
    return out.str();
  }
  std::invalid_argument unknown(const char* operation, void* ptr) const {
    return std::invalid_argument(resourceName_ + ": " + operation + " of " + text(ptr) +
                                 ", which this resource did not allocate (or freed already)");
  }

  std::string resourceName_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Entry> entries_;
};

}  // namespace memsamples::resource
