// Three of the five kinds of memory resource (pinned_host_resource.hpp has the pinned host kind,
// which the lesson's core builds, and the base the context-bound kinds share;
// device_pool_resource.hpp has the device pool, every device's initial resource), each a small
// class that writes its own driver calls; makeResources(), which makes step 6's resources; and
// below them what step 1 sets up on every device (as in 01_vectorAddDrv) and the vector add.
// The NUMA kind is built only where libnuma was found at configure time
// (PER_DEVICE_RESOURCE_HAS_NUMA), like 04_numaHostAlloc itself.
#include "resources.hpp"

#include "device_pool_resource.hpp"
#include "pinned_host_resource.hpp"

#include <algorithm>
#include <cstring>
#include <future>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "memsamples.hpp"
#include "run_plan.hpp"
#include "striped_vmm.hpp"
#if PER_DEVICE_RESOURCE_HAS_NUMA
#include "numa_binding.hpp"
#endif

namespace memsamples::resource {
namespace {

// What the VMM kind's memory can be used for (ResourceProperties: host, device, stream-ordered);
// the host kinds' kHostAndDeviceMemory is in pinned_host_resource.hpp, beside TrackedResource, and
// the pool's in device_pool_resource.hpp.
constexpr ResourceProperties kDeviceOnlyMemory{false, true, false};

// ---------------------------------------------------------------------------------------- managed

// Managed memory (cuMemAllocManaged, one address on the host and every device), freed with
// cuMemFree by its owner. Before every allocation the guard (one cuMemGetInfo) refuses more than
// the free memory, and the resource's budget keeps the *sum* of its live allocations within the
// limit (resource_plan.hpp says why both). No page is touched: managed pages are created where
// the memory is first used.
class ManagedResource final : public TrackedResource<OwnedDeviceMemory> {
 public:
  ManagedResource(CUcontext context, std::uint64_t budgetBytes)
      : TrackedResource(context, "managed", kHostAndDeviceMemory), budget_(budgetBytes) {}

 private:
  void* doAllocate(std::size_t bytes, CUstream) override {
    ScopedContext scope(context_);  // cuMemGetInfo answers for this context's device
    checkManagedRequest(bytes, currentFreeMemory());
    budget_.reserve(bytes);
    try {
      OwnedDeviceMemory memory;
      check(cuMemAllocManaged(memory.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
      void* ptr = fromDevicePointer(memory.get());
      allocations_.add(ptr, bytes, std::move(memory));
      return ptr;
    } catch (...) {
      budget_.release(bytes);  // nothing is kept: the budget gets the bytes back
      throw;
    }
  }
  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override {
    ScopedContext scope(context_);
    takeBack(ptr, bytes, stream);  // its owner: cuMemFree
    budget_.release(bytes);
  }

  ManagedMemoryBudget budget_;
};

// -------------------------------------------------------------------------------- NUMA-bound host

#if PER_DEVICE_RESOURCE_HAS_NUMA
// One allocation: the bound range and its registration (members end in reverse order:
// unregister, then unmap).
struct NumaAllocation {
  numa::NumaBoundHostRange range;
  OwnedHostRegistration registration;
};

// 04's NumaBoundHostRange (mmap, mbind before the first touch, madvise), then cuMemHostRegister,
// which pins every page and so places it under the binding. The binding is soft
// (MPOL_PREFERRED | MPOL_F_STATIC_NODES): where it cannot be done, the memory is used unbound
// and the warning goes to the log (which keeps each distinct one once: every allocation repeats
// the same decision). Freed by the base: the stream synchronized, then unregistered and
// unmapped; its kernel address is the base's, as the pinned kind's.
class NumaHostResource final : public TrackedResource<NumaAllocation> {
 public:
  NumaHostResource(CUcontext context, int node, std::function<void(const std::string&)> warn)
      : TrackedResource(context, "numa host", kHostAndDeviceMemory, kMappedHost),
        node_(node),
        warn_(std::move(warn)) {
    name_ =
        onDevice("numa host " + (node >= 0 ? "node " + std::to_string(node) : "unbound"), ordinal_);
  }

 private:
  void* doAllocate(std::size_t bytes, CUstream) override {
    numa::NumaBoundHostRange range(bytes, node_, numa::BindPolicy{true, false}, warn_);
    ScopedContext scope(context_);  // registered without PORTABLE: pinned for this context only
    check(cuMemHostRegister(range.data(), range.mappedBytes(), CU_MEMHOSTREGISTER_DEVICEMAP),
          "cuMemHostRegister");
    OwnedHostRegistration registration(range.data());
    void* ptr = range.data();
    allocations_.add(ptr, bytes, NumaAllocation{std::move(range), std::move(registration)});
    return ptr;
  }

  int node_;
  std::function<void(const std::string&)> warn_;
};

// The node is 04's findNearestHostNode() of CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID and sysfs, among
// libnuma's nodes with 04's rule: GPU memory that is a NUMA node of its own (coherent
// Grace-class systems) has memory, but binding host buffers there would put them in HBM.
std::unique_ptr<MemoryResource> makeNumaResource(
    CUcontext context, CUdevice device, const std::function<void(const std::string&)>& warn,
    std::string& detail) {
  NodeQueries nodes = numa::libnumaNodes();
  int deviceCount = 0;
  check(cuDeviceGetCount(&deviceCount), "cuDeviceGetCount");
  for (int ordinal = 0; ordinal < deviceCount; ++ordinal) {
    CUdevice each = 0;
    check(cuDeviceGet(&each, ordinal), "cuDeviceGet");
    const int numaId = deviceAttribute(each, CU_DEVICE_ATTRIBUTE_NUMA_ID);
    if (deviceAttribute(each, CU_DEVICE_ATTRIBUTE_NUMA_CONFIG) == CU_DEVICE_NUMA_CONFIG_NUMA_NODE &&
        numaId >= 0)
      nodes.deviceMemoryNodes[numaId] = ordinal;
  }
  char busId[64] = {};
  check(cuDeviceGetPCIBusId(busId, sizeof busId, device), "cuDeviceGetPCIBusId");
  const numa::HostNumaNode nearest = numa::findNearestHostNode(
      deviceAttribute(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID), busId, nodes);
  detail = nearest.known() ? "node " + std::to_string(nearest.node) + " (from " +
                                 numa::nodeSourceName(nearest.source) + ")"
                           : "no known node (memory stays unbound)";
  for (const std::string& note : nearest.notes)
    detail += "; " + note;
  detail += ", soft binding";
  return std::make_unique<NumaHostResource>(context, nearest.node, warn);
}
#endif

// -------------------------------------------------------------------------------------------- VMM

// Each allocation is one of 02's StripedVmmRange: stripes on the device and on every peer it can
// access that supports VMM, mapped read-write for the device only. Sizes round up to stripes x
// granularity (2 MiB x stripes on an H200; the recommended granularity once a stripe fills one
// unit of it, as in 02): VMM is for large, long-lived buffers. Each allocation asks both
// granularities again (cuMemGetAllocationGranularity per backing and mapping device) instead of
// reusing granularity_, which the latency table's row label says.
class StripedVmmResource final : public TrackedResource<vmm::StripedVmmRange> {
 public:
  StripedVmmResource(CUcontext context, int stripes)
      : TrackedResource(context, "vmm", kDeviceOnlyMemory),
        backing_(vmm::discoverBackingDevices(ordinal_, vmm::queryDeviceTopology())),
        stripes_(std::max(stripes, static_cast<int>(backing_.size()))),
        granularity_(vmm::stripedGranularity(backing_, {ordinal_})) {
    name_ = onDevice("vmm x" + std::to_string(stripes_) + " stripes", ordinal_);
  }
  // What step 6 prints about it.
  std::string detail() const {
    return "backing devices " + vmm::formatDeviceList(backing_) + ", granularity " +
           formatBytes(granularity_);
  }

 private:
  void* doAllocate(std::size_t bytes, CUstream) override {
    const std::vector<int> mapping = {ordinal_};
    ScopedContext scope(context_);
    vmm::StripedVmmRange range(bytes, stripes_, backing_, mapping);
    void* ptr = fromDevicePointer(range.get());
    allocations_.add(ptr, bytes, std::move(range));
    return ptr;
  }
  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override {
    ScopedContext scope(context_);
    vmm::StripedVmmRange range = takeBack(ptr, bytes, stream);
    // Freed here, not by the destructor, so that cuMemUnmap and cuMemAddressFree errors are
    // reported; the owner gives the range up only after they succeeded (if they fail, its
    // destructor tries again), as 02's cleanup does.
    vmm::unmapStripedRange(range.get(), range.size());
    range.release();
  }

  std::vector<int> backing_;
  int stripes_;
  std::uint64_t granularity_;
};

}  // namespace

// [process-registry]
// The registry behind getCurrentDeviceResource() and the other free functions: made the first
// time one of them is called (after cuInit) by PerDeviceResourceRegistry::fromDriver(), the
// driver hookup right after the class in per_device_registry.hpp, and kept until the process ends.
PerDeviceResourceRegistry& processResourceRegistry() {
  static PerDeviceResourceRegistry registry = PerDeviceResourceRegistry::fromDriver();
  return registry;
}

// Every device's initial resource in that registry: its default pool, with RMM's rule checked
// (used only while a context of the device is current).
std::unique_ptr<MemoryResource> defaultPoolResource(int ordinal) {
  CUdevice device = 0;
  check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
  return std::make_unique<DevicePoolResource>(device,
                                              DevicePoolResource::Policy::RequireCurrentDevice);
}
// [process-registry]

std::string unavailableReason(ResourceKind kind, CUdevice device) {
  const auto attribute = [device](CUdevice_attribute which) {
    return deviceAttribute(device, which);  // a failed query throws: it never waives a kind
  };
  return kindUnavailableReason(kind, attribute, PER_DEVICE_RESOURCE_HAS_NUMA != 0);
}

namespace {

// A resource of @p kind for the device of @p context, or why there is none (unavailableReason()).
// The device kind is not made: it is @p devicePool, the registry's initial resource there.
KindResource makeKindResource(ResourceKind kind, CUcontext context, MemoryResource& devicePool,
                              int vmmStripes, WarningLog& warnings) {
  KindResource made;
  made.kind = kind;
  CUdevice device = 0;
  check(cuCtxGetDevice_v2(&device, context), "cuCtxGetDevice_v2");
  made.whyNot = unavailableReason(kind, device);
  if (!made.whyNot.empty())
    return made;
  if (kind == ResourceKind::Device) {
    // The registry's factory makes every initial resource a DevicePoolResource.
    const auto* pool = static_cast<const DevicePoolResource*>(&devicePool);
    cuuint64_t threshold = 0;
    check(cuMemPoolGetAttribute(pool->pool(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
          "cuMemPoolGetAttribute");
    made.resource = &devicePool;
    made.pool = pool->pool();
    // Timed without the current-device policy: one cuCtxGetDevice per call that the driver
    // does not need and the other kinds do not pay; same pool, same memory.
    made.owned = std::make_unique<DevicePoolResource>(pool->device(),
                                                      DevicePoolResource::Policy::None);
    made.timed = made.owned.get();
    made.detail = "default pool, release threshold " + formatBytes(threshold) +
                  " (the registry's initial resource)";
    return made;
  }
  if (kind == ResourceKind::Managed) {
    ScopedContext scope(context);  // cuMemGetInfo answers for the current context's device
    const std::size_t freeBytes = currentFreeMemory();
    made.owned = std::make_unique<ManagedResource>(context, freeBytes);
    made.detail = "budget " + formatBytes(freeBytes) + " (the free memory now)";
  } else if (kind == ResourceKind::Pinned) {
    made.owned = std::make_unique<PinnedHostResource>(context);
    made.detail = "cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP)";
  } else if (kind == ResourceKind::Vmm) {
    auto vmm = std::make_unique<StripedVmmResource>(context, vmmStripes);
    made.detail = vmm->detail();
    made.owned = std::move(vmm);
  } else {
#if PER_DEVICE_RESOURCE_HAS_NUMA
    made.owned = makeNumaResource(context, device, warnings.sink(), made.detail);
#else
    (void)warnings;  // never reached: unavailableReason() refused the NUMA kind
#endif
  }
  made.resource = made.owned.get();
  return made;
}

// The context rule, checked: allocates @p bytes of @p resource, asks its kernel address and
// frees it on a new thread that has no current context at all (cuCtxGetCurrent answers null), as
// a context-bound kind must allow. True when that thread really had no current context.
bool usableWithoutCurrentContext(MemoryResource& resource, std::size_t bytes) {
  const auto onItsOwnThread = [&] {
    CUcontext current = nullptr;
    check(cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    // The null stream: deallocate synchronizes the legacy stream of the resource's context.
    ResourceAllocation allocation(resource, bytes, nullptr);
    if (allocation.kernelAddress() == 0)
      throw std::runtime_error(resource.name() + ": kernel address 0");
    allocation.release();
    return current == nullptr;
  };
  // std::launch::async: a new thread; get() waits for it and rethrows what it threw.
  return std::async(std::launch::async, onItsOwnThread).get();
}

}  // namespace

Resources makeResources(const Devices& devices, int vmmStripes) {
  PerDeviceResourceRegistry& registry = processResourceRegistry();
  const DeviceSetup& setup = devices.chosenSetup();
  Resources made;
  made.warnings = std::make_unique<WarningLog>();
  std::vector<ResourceKind> available;
  for (const ResourceKind kind : devices.kinds.kinds) {
    KindResource entry = makeKindResource(
        kind, setup.context.get(), *registry.initial(devices.chosen), vmmStripes, *made.warnings);
    if (entry.resource == nullptr && devices.kinds.listed)
      throw WaivedError(std::string("resource '") + kindName(kind) +
                        "' is not available on device " + std::to_string(devices.chosen) + ": " +
                        entry.whyNot);
    if (entry.resource != nullptr)
      available.push_back(kind);
    // The pool's policy needs a current context of its device: it is not tried without one.
    if (entry.resource != nullptr && kind != ResourceKind::Device)
      entry.contextFree = usableWithoutCurrentContext(*entry.resource, 64 << 10);
    made.kinds.push_back(std::move(entry));
  }
  if (devices.setups.size() < 2 || available.empty())
    return made;

  // Step 6's resource per device: the i-th device used gets the kind assignKindsToDevices() gives
  // it, made in its own context; where that kind is missing, the device keeps its pool and whyNot
  // says why.
  const std::vector<ResourceKind> assignment =
      assignKindsToDevices(available, static_cast<int>(devices.setups.size()));
  for (std::size_t i = 0; i < devices.setups.size(); ++i) {
    const DeviceSetup& each = *devices.setups[i];
    MemoryResource& pool = *registry.initial(each.ordinal);
    KindResource entry =
        makeKindResource(assignment[i], each.context.get(), pool, vmmStripes, *made.warnings);
    if (entry.resource == nullptr) {
      const std::string missing =
          std::string(kindName(assignment[i])) + " is waived (" + entry.whyNot + ")";
      entry = makeKindResource(ResourceKind::Device, each.context.get(), pool, vmmStripes,
                               *made.warnings);
      if (entry.resource == nullptr)
        throw WaivedError("device " + std::to_string(each.ordinal) + " has " + entry.whyNot);
      entry.whyNot = missing;
    }
    made.perDevice.push_back(std::move(entry));
  }

  // [refuse-other-device]
  // Another device's pool, used while this device's context is current, refuses before any
  // driver call fails: cuCtxGetDevice answers, and the pool compares that device with its own.
  const int other = devices.nextUsedDevice();
  ScopedContext scope(setup.context.get());
  try {
    ResourceAllocation wrong(*registry.initial(other), 64 << 10, setup.stream.get());
  } catch (const std::logic_error& error) {
    made.refusal = error.what();
  }
  // [refuse-other-device]
  return made;
}

// ------------------------------------------------- every device, as in 01, and the vector add

namespace {

// cuCtxCreate, and the new context popped again at once (it is pushed where it is used). Returns
// the driver's answer, so that the caller can tell a busy device from a failure.
CUresult createContext(OwnedContext& context, CUdevice device) {
  const CUresult result = cuCtxCreate(context.out(), nullptr, 0, device);
  if (result != CUDA_SUCCESS)
    return result;
  CUcontext created = nullptr;
  check(cuCtxPopCurrent(&created), "cuCtxPopCurrent");
  return CUDA_SUCCESS;
}

// The answers of cuCtxCreate that say the device is busy rather than broken: another process
// holds it (EXCLUSIVE_PROCESS), or its memory is used up. Only an unnamed GPU beside the chosen
// one is left out for them; every other failure fails the run.
bool isBusyDevice(CUresult result) {
  return result == CUDA_ERROR_DEVICE_UNAVAILABLE || result == CUDA_ERROR_OUT_OF_MEMORY;
}

// cuMemGetInfo in @p setup's context.
std::uint64_t freeMemoryOf(const DeviceSetup& setup) {
  ScopedContext scope(setup.context.get());
  return currentFreeMemory();
}

}  // namespace

DeviceSetup::DeviceSetup(CUdevice handle, OwnedContext created)
    : device(handle), ordinal(deviceOrdinal(handle)), context(std::move(created)) {
  ScopedContext scope(context.get());
  const std::vector<char> fatbin = readBinaryFile(locateFatbin("vectorAdd_kernel.fatbin"));
  check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  check(cuModuleGetFunction(&kernel, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");
  grid = residentGridSize(kernel, device, kBlockSize);
  check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

DeviceSetup::~DeviceSetup() {
  // On the good path the lesson has released everything, the context last: nothing to push.
  if (context.get() == nullptr)
    return;
  try {
    ScopedContext scope(context.get());
    stream.reset();  // waits for queued work first (OwnedStream), so staging is no longer in use
    staging.reset();
    module.reset();
  } catch (...) {
    // The push failed: the members release themselves, and cuCtxDestroy frees what is left.
  }
}

Devices setUpDevices(const std::optional<long long>& device, const std::vector<int>& named,
                     const std::optional<std::uint64_t>& requestedBytes,
                     const std::string& resources, Report& report) {
  constexpr std::uint64_t kDefaultVectorBytes = 64ull << 20;
  Devices devices;
  devices.kinds = parseResourceKinds(resources);  // a usage error comes before any driver call
  checkDriverInit(cuInit(0));  // a driver of an older CUDA major version waives the run
  const CUdevice handle = selectDevice(device);
  devices.chosen = deviceOrdinal(handle);
  devices.chosenName = deviceName(handle);
  check(cuDeviceGetCount(&devices.count), "cuDeviceGetCount");
  checkNamedDevices(named, devices.count);  // --devices 7 on a 2-GPU machine: a usage error
  report.out() << "Device " << devices.chosen << ": " << devices.chosenName << " (" << devices.count
               << (devices.count == 1 ? " device" : " devices") << " in this machine)\n";
  if (const std::string why = unavailableReason(ResourceKind::Device, handle); !why.empty())
    throw WaivedError("device " + std::to_string(devices.chosen) + " has " + why +
                      ": its initial resource cannot allocate");
  if (const std::string why = unavailableReason(ResourceKind::Pinned, handle); !why.empty())
    throw WaivedError("device " + std::to_string(devices.chosen) + " " + why +
                      ": the pinned host resource of the lesson's core cannot allocate");

  // The chosen device; then every other GPU that may take part (the named ones, or else all),
  // with what decides whether it does: its compute mode, its answer to cuCtxCreate, its memory.
  std::vector<std::unique_ptr<DeviceSetup>> made;
  OwnedContext chosenContext;
  check(createContext(chosenContext, handle), "cuCtxCreate");
  made.push_back(std::make_unique<DeviceSetup>(handle, std::move(chosenContext)));
  const DeviceFreeMemory chosenFree{devices.chosen, freeMemoryOf(*made.back())};

  std::vector<OtherDevice> others;
  for (int d = 0; d < devices.count; ++d) {
    const bool isNamed = std::find(named.begin(), named.end(), d) != named.end();
    if (d == devices.chosen || (!named.empty() && !isNamed))
      continue;
    CUdevice each = 0;
    check(cuDeviceGet(&each, d), "cuDeviceGet");
    OtherDevice other;
    other.ordinal = d;
    other.computeMode = deviceAttribute(each, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
    other.named = isNamed;
    if (contextForbidden(other).empty()) {  // a PROHIBITED device is not even asked
      OwnedContext context;
      const CUresult result = createContext(context, each);
      if (result == CUDA_SUCCESS) {
        made.push_back(std::make_unique<DeviceSetup>(each, std::move(context)));
        other.freeBytes = freeMemoryOf(*made.back());
      } else if (isBusyDevice(result) && !isNamed) {
        other.contextRefused = "cuCtxCreate: " + describeResult(result);
      } else {
        check(result, "cuCtxCreate");  // a named device, or a real failure: it is reported
      }
    }
    others.push_back(other);
  }

  // Which GPUs take part and how large the vectors are; the others are released again now.
  const DeviceChoice choice =
      chooseDevices(chosenFree, others, requestedBytes, kDefaultVectorBytes, sizeof(float));
  std::sort(made.begin(), made.end(), [](const auto& a, const auto& b) {
    return a->ordinal < b->ordinal;  // the devices used, in ordinal order
  });
  for (std::unique_ptr<DeviceSetup>& setup : made) {
    if (std::find(choice.used.begin(), choice.used.end(), setup->ordinal) == choice.used.end()) {
      releaseDevice(*setup);
      continue;
    }
    devices.used.push_back(setup->ordinal);
    devices.setups.push_back(std::move(setup));
  }
  devices.leftOut = choice.leftOut;
  devices.smallest = choice.sizedFor;
  devices.bytes = fitHostMemory(  // each device's staging is 3 pinned vectors
      requestedBytes, choice.bytes, 3 * static_cast<int>(devices.setups.size()), sizeof(float));
  for (const auto& each : devices.setups) {
    ScopedContext scope(each->context.get());
    check(cuMemHostAlloc(each->staging.out(), 3 * devices.bytes, 0), "cuMemHostAlloc");
    each->vectorBytes = devices.bytes;
  }
  return devices;
}

void releaseDevice(DeviceSetup& setup) {
  {
    ScopedContext scope(setup.context.get());
    check(cuStreamSynchronize(setup.stream.get()), "cuStreamSynchronize");
    check(cuStreamDestroy(setup.stream.get()), "cuStreamDestroy");
    setup.stream.release();
    if (setup.staging.get() != nullptr) {  // a GPU left out in step 1 has none
      check(cuMemFreeHost(setup.staging.get()), "cuMemFreeHost");
      setup.staging.release();
    }
    check(cuModuleUnload(setup.module.get()), "cuModuleUnload");
    setup.module.release();
  }
  check(cuCtxDestroy(setup.context.get()), "cuCtxDestroy");
  setup.context.release();
}

void fillBuffer(const ResourceAllocation& buffer, unsigned char value, CUstream stream) {
  if (buffer.resource()->properties().hostAccessible)
    std::memset(buffer.get(), value, buffer.size());
  else
    check(cuMemsetD8Async(buffer.kernelAddress(), value, buffer.size(), stream),
          "cuMemsetD8Async");
}

// [kernel-addresses]
VectorAddCheck launchVectorAddAndCheck(const DeviceSetup& setup,
                                       const std::array<MemoryResource*, 3>& resources,
                                       const std::array<void*, 3>& vectors, std::uint32_t seed) {
  const std::uint64_t bytes = setup.vectorBytes;
  const std::size_t count = bytes / sizeof(float);
  const CUstream stream = setup.stream.get();
  const bool onHost = resources[0]->properties().hostAccessible;
  float* a = onHost ? static_cast<float*>(vectors[0]) : setup.stagingVector(0);
  float* b = onHost ? static_cast<float*>(vectors[1]) : setup.stagingVector(1);
  float* c = onHost ? static_cast<float*>(vectors[2]) : setup.stagingVector(2);
  fillVectorAddInputs(a, b, count, seed);
  CUdeviceptr x = resources[0]->kernelAddress(vectors[0]);
  CUdeviceptr y = resources[1]->kernelAddress(vectors[1]);
  CUdeviceptr z = resources[2]->kernelAddress(vectors[2]);
  if (onHost) {  // C starts as NaN: a kernel that wrote nothing cannot pass
    std::fill(c, c + count, std::numeric_limits<float>::quiet_NaN());
  } else {
    check(cuMemcpyHtoDAsync(x, a, bytes, stream), "cuMemcpyHtoDAsync");
    check(cuMemcpyHtoDAsync(y, b, bytes, stream), "cuMemcpyHtoDAsync");
    check(cuMemsetD32Async(z, 0x7FC00000u, count, stream), "cuMemsetD32Async");
  }
  unsigned long long n = count;  // the kernel's parameter types, exactly
  void* args[] = {&x, &y, &z, &n};
  check(cuLaunchKernel(setup.kernel, setup.grid, 1, 1, DeviceSetup::kBlockSize, 1, 1, 0, stream,
                       args, nullptr),
        "cuLaunchKernel");
  if (!onHost)
    check(cuMemcpyDtoHAsync(c, z, bytes, stream), "cuMemcpyDtoHAsync");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  return checkVectorAdd(a, b, c, count);
}
// [kernel-addresses]

VectorAddCheck launchVectorAddAndCheck(const DeviceSetup& setup, const Vectors& vectors,
                                       std::uint32_t seed) {
  std::array<MemoryResource*, 3> resources{};
  std::array<void*, 3> pointers{};
  for (std::size_t v = 0; v < vectors.size(); ++v) {
    if (vectors[v].resource() == nullptr)
      throw std::logic_error("launchVectorAddAndCheck: vector " + std::to_string(v) +
                             " is empty (default-constructed, moved from or released)");
    resources[v] = vectors[v].resource();
    pointers[v] = vectors[v].get();
  }
  return launchVectorAddAndCheck(setup, resources, pointers, seed);
}

void releaseVectors(Vectors& vectors, CUstream stream) {
  for (ResourceAllocation& vector : vectors)
    vector.release();  // the kinds that free at once synchronize the stream first
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");  // the pool's frees, too
}

}  // namespace memsamples::resource
