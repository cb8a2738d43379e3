// The NUMA-bound host resource: 04's NumaBoundHostRange + cuMemHostRegister, one per allocation.
#include "numa_resource.hpp"

#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "memsamples.hpp"
#include "numa_binding.hpp"
#include "owned_allocations.hpp"

namespace memsamples::resource {

namespace {

/// One allocation: the bound range, and its registration, which must end first (members are
/// destroyed in reverse order: unregister, then unmap).
struct NumaAllocation {
  numa::NumaBoundHostRange range;
  HostRegistration registration;
};

class NumaHostResource final : public MemoryResource {
 public:
  NumaHostResource(int ordinal, int node, std::function<void(const std::string&)> warn)
      : ordinal_(ordinal),
        node_(node),
        warn_(std::move(warn)),
        allocations_("numa host (device " + std::to_string(ordinal) + ")") {}

 private:
  void* doAllocate(std::size_t bytes, CUstream) override {
    // Soft binding: MPOL_PREFERRED | MPOL_F_STATIC_NODES, unbound with a warning if impossible.
    const numa::BindPolicy policy{true, false};
    numa::NumaBoundHostRange range(bytes, node_, policy,
                                   [this](const std::string& text) { warnOnce(text); });
    // Registration pins every page: the pages are allocated now, under the binding.
    HostRegistration registration(range.data(), range.mappedBytes());
    void* ptr = range.data();
    allocations_.add(ptr, bytes, NumaAllocation{std::move(range), std::move(registration)});
    return ptr;
  }

  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override {
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    allocations_.take(ptr, bytes);  // unregistered, then unmapped
  }

  ResourceProperties doProperties() const noexcept override { return {true, true, false}; }

  CUdeviceptr doKernelAddress(void* ptr) const override {
    CUdeviceptr address = 0;
    check(cuMemHostGetDevicePointer(&address, ptr, 0), "cuMemHostGetDevicePointer");
    return address;
  }

  std::optional<int> doOwnerDevice() const noexcept override { return ordinal_; }

  std::string doName() const override {
    const std::string where = node_ >= 0 ? "node " + std::to_string(node_) : "unbound";
    return "numa host " + where + " (device " + std::to_string(ordinal_) + ")";
  }

  // Every allocation repeats the same decision, so each distinct warning is passed on once.
  void warnOnce(const std::string& text) {
    std::lock_guard<std::mutex> lock(warnMutex_);
    if (seen_.insert(text).second && warn_)
      warn_(text);
  }

  int ordinal_;
  int node_;
  std::function<void(const std::string&)> warn_;
  std::mutex warnMutex_;
  std::set<std::string> seen_;
  OwnedAllocations<NumaAllocation> allocations_;
};

}  // namespace

NumaResourceResult makeNumaHostResource(CUdevice device,
                                        std::function<void(const std::string&)> warn) {
  char busId[64] = {};
  check(cuDeviceGetPCIBusId(busId, sizeof busId, device), "cuDeviceGetPCIBusId");
  const int attributeNode = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
  const numa::HostNumaNode nearest =
      numa::findNearestHostNode(attributeNode, busId, numa::libnumaNodeMemory());

  NumaResourceResult result;
  result.description = nearest.known() ? "node " + std::to_string(nearest.node) + " (from " +
                                             numa::nodeSourceName(nearest.source) + ")"
                                       : "no known node (memory stays unbound)";
  for (const std::string& note : nearest.notes)
    result.description += "; " + note;
  result.resource =
      std::make_unique<NumaHostResource>(deviceOrdinal(device), nearest.node, std::move(warn));
  return result;
}

}  // namespace memsamples::resource
