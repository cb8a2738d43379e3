// The NUMA-bound host resource: 04's NumaBoundHostRange + cuMemHostRegister, one per allocation.
#include "numa_resource.hpp"

#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "cuda_resources.hpp"  // ResourceContext, synchronizeThenTake, freeRemainingInContext
#include "memsamples.hpp"
#include "numa_binding.hpp"
#include "owned_allocations.hpp"

namespace memsamples::resource {

namespace {

/// One allocation: the bound range, its registration, which must end first (members are
/// destroyed in reverse order: unregister, then unmap), and the device address the registration
/// gave it (read once, in the resource's context).
struct NumaAllocation {
  numa::NumaBoundHostRange range;
  OwnedHostRegistration registration;
  CUdeviceptr kernelAddress = 0;
};

class NumaHostResource final : public MemoryResource {
 public:
  NumaHostResource(const ResourceContext& context, int node,
                   std::function<void(const std::string&)> warn)
      : context_(context),
        node_(node),
        warn_(std::move(warn)),
        allocations_("numa host (device " + std::to_string(context.ordinal) + ")") {}
  ~NumaHostResource() override { freeRemainingInContext(context_.context, allocations_); }

 private:
  void* doAllocate(std::size_t bytes, CUstream) override {
    // Soft binding: MPOL_PREFERRED | MPOL_F_STATIC_NODES, unbound with a warning if impossible.
    const numa::BindPolicy policy{true, false};
    numa::NumaBoundHostRange range(bytes, node_, policy,
                                   [this](const std::string& text) { warnOnce(text); });
    // Registration pins every page: the pages are allocated now, under the binding. It is not
    // PORTABLE: the range is pinned and mapped for this resource's context only.
    ScopedContext scope(context_.context);
    check(cuMemHostRegister(range.data(), range.mappedBytes(), CU_MEMHOSTREGISTER_DEVICEMAP),
          "cuMemHostRegister");
    OwnedHostRegistration registration(range.data());
    CUdeviceptr kernelAddress = 0;
    check(cuMemHostGetDevicePointer(&kernelAddress, range.data(), 0), "cuMemHostGetDevicePointer");
    void* ptr = range.data();
    allocations_.add(ptr, bytes,
                     NumaAllocation{std::move(range), std::move(registration), kernelAddress});
    return ptr;
  }

  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override {
    ScopedContext scope(context_.context);
    synchronizeThenTake(allocations_, ptr, bytes, stream);  // unregistered, then unmapped
  }

  ResourceProperties doProperties() const noexcept override { return {true, true, false}; }

  // Read at allocation; no driver call, so no context is needed here.
  CUdeviceptr doKernelAddress(void* ptr) const override {
    return allocations_.inspect(ptr, "kernelAddress", [](const NumaAllocation& allocation) {
      return allocation.kernelAddress;
    });
  }

  std::optional<int> doOwnerDevice() const noexcept override { return context_.ordinal; }

  std::string doName() const override {
    const std::string where = node_ >= 0 ? "node " + std::to_string(node_) : "unbound";
    return "numa host " + where + " (device " + std::to_string(context_.ordinal) + ")";
  }

  // Every allocation repeats the same decision, so each distinct warning is passed on once.
  void warnOnce(const std::string& text) {
    std::lock_guard<std::mutex> lock(warnMutex_);
    if (seen_.insert(text).second && warn_)
      warn_(text);
  }

  ResourceContext context_;
  int node_;
  std::function<void(const std::string&)> warn_;
  std::mutex warnMutex_;
  std::set<std::string> seen_;
  OwnedAllocations<NumaAllocation> allocations_;
};

}  // namespace

NumaResourceResult makeNumaHostResource(CUcontext context,
                                        std::function<void(const std::string&)> warn) {
  const ResourceContext owner = describeContext(context);
  char busId[64] = {};
  check(cuDeviceGetPCIBusId(busId, sizeof busId, owner.device), "cuDeviceGetPCIBusId");
  const int attributeNode = deviceAttribute(owner.device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
  const numa::HostNumaNode nearest =
      numa::findNearestHostNode(attributeNode, busId, numa::libnumaNodeMemory());

  NumaResourceResult result;
  result.description = nearest.known() ? "node " + std::to_string(nearest.node) + " (from " +
                                             numa::nodeSourceName(nearest.source) + ")"
                                       : "no known node (memory stays unbound)";
  for (const std::string& note : nearest.notes)
    result.description += "; " + note;
  result.resource = std::make_unique<NumaHostResource>(owner, nearest.node, std::move(warn));
  return result;
}

}  // namespace memsamples::resource
