// The driver half of 05_p2pMemMap: endpoints, peer access, buffers, events, concurrent timing,
// and what the driver reports about links and VMM access rights.
#include "peer_context.hpp"

#include <stdexcept>
#include <utility>
#include <vector>

namespace memsamples::p2p {
namespace {

CUdevice deviceFor(int ordinal) {
  CUdevice device = 0;
  check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
  return device;
}

// For destructors: make @p context current without throwing; false when that failed.
bool pushQuietly(CUcontext context) noexcept {
  return cuCtxPushCurrent(context) == CUDA_SUCCESS;
}
void popQuietly() noexcept {
  CUcontext popped = nullptr;
  (void)cuCtxPopCurrent(&popped);
}

// Loads the fatbin at @p path into @p module (in the current context); returns its kernel @p name.
CUfunction loadKernel(OwnedModule& module, const std::string& path, const char* name) {
  const std::vector<char> fatbin = readBinaryFile(path);
  check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction kernel = nullptr;
  check(cuModuleGetFunction(&kernel, module.get(), name), "cuModuleGetFunction");
  return kernel;
}

}  // namespace

// -------------------------------------------------------------------------------------- buffers

ContextBuffer::ContextBuffer(CUcontext context, std::size_t bytes)
    : context_(context), bytes_(bytes) {
  const ScopedContext current(context_);
  check(cuMemAlloc(&pointer_, bytes_), "cuMemAlloc");
}

ContextBuffer::~ContextBuffer() {
  if (pointer_ == 0 || !pushQuietly(context_))
    return;
  (void)cuMemFree(pointer_);
  popQuietly();
}

ContextBuffer::ContextBuffer(ContextBuffer&& other) noexcept
    : context_(other.context_),
      pointer_(std::exchange(other.pointer_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

ContextEvent::ContextEvent(CUcontext context, unsigned int flags) : context_(context) {
  const ScopedContext current(context_);
  check(cuEventCreate(&event_, flags), "cuEventCreate");
}

ContextEvent::~ContextEvent() {
  if (event_ == nullptr || !pushQuietly(context_))
    return;
  (void)cuEventDestroy(event_);
  popQuietly();
}

ContextEvent::ContextEvent(ContextEvent&& other) noexcept
    : context_(other.context_), event_(std::exchange(other.event_, nullptr)) {}

// ---------------------------------------------------------------------------------- PeerDevice

PeerDevice::PeerDevice(int ordinal, const std::string& vectorAddFatbin,
                       const std::string& copyFatbin)
    : ordinal_(ordinal), device_(deviceFor(ordinal)), context_(device_) {
  const ScopedContext current(context_.get());
  try {
    vectorAdd_ = loadKernel(vectorAddModule_, vectorAddFatbin, kVectorAddKernel);
    copy_ = loadKernel(copyModule_, copyFatbin, kCopyKernel);
    vectorAddGrid_ = residentGridSize(vectorAdd_, device_, kVectorAddBlockSize);
    copyGrid_ = residentGridSize(copy_, device_, kCopyBlockSize);
    check(cuStreamCreate(stream_.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  } catch (...) {
    // A throwing constructor runs no destructor: unload what was loaded, still in this context.
    releaseInContext();
    throw;
  }
}

PeerDevice::~PeerDevice() {
  // The stream and the modules belong to this context: release them with it current. If it
  // cannot be pushed (the driver is shutting down, say), they are still destroyed, by their
  // own destructors after this body, with whatever context is current; their release calls
  // may then fail, and those answers are ignored as everywhere in destructors.
  const bool pushed = pushQuietly(context_.get());
  releaseInContext();
  if (pushed)
    popQuietly();
  // context_ (a member) is released after this body: this object's retain of the context.
}

void PeerDevice::releaseInContext() noexcept {
  stream_.reset();
  copyModule_.reset();
  vectorAddModule_.reset();
}

std::size_t PeerDevice::freeBytes() const {
  const ScopedContext current(context_.get());
  std::size_t freeBytes = 0, totalBytes = 0;
  check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  return freeBytes;
}

void PeerDevice::synchronize() const {
  const ScopedContext current(context_.get());
  check(cuStreamSynchronize(stream_.get()), "cuStreamSynchronize");
}

CUresult PeerDevice::synchronizeQuietly() const noexcept {
  if (stream_.get() == nullptr)
    return CUDA_SUCCESS;
  const CUresult pushed = cuCtxPushCurrent(context_.get());
  if (pushed != CUDA_SUCCESS)
    return pushed;
  const CUresult waited = cuStreamSynchronize(stream_.get());
  popQuietly();
  return waited;
}

// ----------------------------------------------------------------------------------- Endpoints

Endpoints::Endpoints(const PairPlan& plan, const std::string& vectorAddFatbin,
                     const std::string& copyFatbin)
    : plan_(plan) {
  if (plan.endpoints.empty())
    throw std::invalid_argument("Endpoints: the plan has no endpoints");
  for (const int ordinal : plan.endpoints)
    devices_.push_back(std::make_unique<PeerDevice>(ordinal, vectorAddFatbin, copyFatbin));
}

std::vector<const PeerDevice*> Endpoints::all() const {
  std::vector<const PeerDevice*> result;
  for (const std::unique_ptr<PeerDevice>& device : devices_)
    result.push_back(device.get());
  return result;
}

SynchronizeOnExit::~SynchronizeOnExit() {
  // Every stream is waited for even when one wait fails: a context in an error state runs
  // nothing more, but the others may still be running.
  for (const PeerDevice* device : devices_)
    (void)device->synchronizeQuietly();
}

// ---------------------------------------------------------------------------------- peer access

PeerAccess::PeerAccess(const PeerDevice& accessor, const PeerDevice& owner)
    : accessor_(accessor), owner_(owner) {
  const ScopedContext onAccessor(accessor_.context());
  // The *current* context gains access to the given context's allocations, not the reverse.
  check(cuCtxEnablePeerAccess(owner_.context(), 0), describe("cuCtxEnablePeerAccess").c_str());
  enabled_ = true;
}

PeerAccess::~PeerAccess() {
  if (!enabled_)
    return;
  enabled_ = false;
  if (!pushQuietly(accessor_.context()))
    return;
  (void)cuCtxSynchronize();
  (void)cuCtxDisablePeerAccess(owner_.context());
  popQuietly();
}

void PeerAccess::disable() {
  if (!enabled_)
    return;
  enabled_ = false;
  const ScopedContext onAccessor(accessor_.context());
  // Kernels and copies still running may use the peer mapping: let them finish first. Disable
  // even if the wait failed (a context in an error state runs nothing more), then report.
  const CUresult waited = cuCtxSynchronize();
  const CUresult disabled = cuCtxDisablePeerAccess(owner_.context());
  check(waited, describe("cuCtxSynchronize").c_str());
  check(disabled, describe("cuCtxDisablePeerAccess").c_str());
}

std::string PeerAccess::describe(const char* call) const {
  return std::string(call) + " (device " + std::to_string(accessor_.ordinal()) +
         "'s context, access to device " + std::to_string(owner_.ordinal()) + "'s memory)";
}

void launchCopy(const PeerDevice& device, CUdeviceptr dst, CUdeviceptr src, std::size_t count) {
  unsigned long long n = count;
  void* args[] = {&dst, &src, &n};
  check(cuLaunchKernel(device.copy(), device.copyGrid(), 1, 1, kCopyBlockSize, 1, 1, 0,
                       device.stream(), args, nullptr),
        "cuLaunchKernel");
}

// ------------------------------------------------------------------------------------- timing

TimingStats timeConcurrently(const PeerDevice& first, const PeerDevice& second, int warmup,
                             int iterations, const std::function<void()>& workOnFirst,
                             const std::function<void()>& workOnSecond) {
  const auto onFirst = [&](const std::function<void()>& work) {
    const ScopedContext current(first.context());
    work();
  };
  const auto onSecond = [&](const std::function<void()>& work) {
    const ScopedContext current(second.context());
    work();
  };
  for (int i = 0; i < warmup; ++i) {
    onFirst(workOnFirst);
    onSecond(workOnSecond);
  }
  // Warm-up work must not overlap the first timed repetition.
  first.synchronize();
  second.synchronize();

  // An event is recorded on a stream of its own context: starts and stops live in the first
  // endpoint's context (recorded on its stream), the "second is done" events in the second's.
  // Those only order the streams, so they are created without timing (cheaper to record).
  const auto count = static_cast<std::size_t>(iterations);
  std::vector<ContextEvent> starts, stops, secondDone;
  for (std::size_t i = 0; i < count; ++i) {
    starts.emplace_back(first.context());
    stops.emplace_back(first.context());
    secondDone.emplace_back(second.context(), CU_EVENT_DISABLE_TIMING);
  }
  for (std::size_t i = 0; i < count; ++i) {
    onFirst([&] { check(cuEventRecord(starts[i].get(), first.stream()), "cuEventRecord"); });
    onSecond([&] {
      // The second stream starts when the first does (cross-context waits are allowed)...
      check(cuStreamWaitEvent(second.stream(), starts[i].get(), 0), "cuStreamWaitEvent");
      workOnSecond();
      check(cuEventRecord(secondDone[i].get(), second.stream()), "cuEventRecord");
    });
    onFirst([&] {
      workOnFirst();
      // ...and the first stream's stop waits for the second's work: stop - start covers both.
      check(cuStreamWaitEvent(first.stream(), secondDone[i].get(), 0), "cuStreamWaitEvent");
      check(cuEventRecord(stops[i].get(), first.stream()), "cuEventRecord");
    });
  }
  first.synchronize();
  second.synchronize();
  std::vector<double> times;
  for (std::size_t i = 0; i < count; ++i) {
    float ms = 0;
    check(cuEventElapsedTime(&ms, starts[i].get(), stops[i].get()), "cuEventElapsedTime");
    times.push_back(ms);
  }
  return summarizeTimings(std::move(times));
}

// ------------------------------------------------------------------------------------- queries

std::vector<DeviceAccessView> readDeviceAccess(CUdeviceptr address,
                                               const std::vector<int>& devices) {
  std::vector<DeviceAccessView> views;
  for (const int device : devices) {
    CUmemLocation location{};
    location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    location.id = device;
    unsigned long long flags = 0;
    const CUresult queried = cuMemGetAccess(&flags, &location, address);
    DeviceAccessView view;
    view.device = device;
    if (queried == CUDA_SUCCESS) {
      view.flags = flags;
    } else {
      view.failure = describeResult(queried);
    }
    views.push_back(view);
  }
  return views;
}

LinkMatrix queryLinkAttributes(int deviceCount) {
  const auto count = static_cast<std::size_t>(deviceCount);
  LinkMatrix links(count, std::vector<LinkAttributes>(count));
  for (int owner = 0; owner < deviceCount; ++owner) {
    for (int accessor = 0; accessor < deviceCount; ++accessor) {
      if (owner == accessor)
        continue;  // CUDA_ERROR_INVALID_DEVICE for a device paired with itself
      const CUdevice src = deviceFor(accessor);
      const CUdevice dst = deviceFor(owner);
      LinkAttributes& link =
          links[static_cast<std::size_t>(owner)][static_cast<std::size_t>(accessor)];
      // Informative only (the pairs are chosen with cuDeviceCanAccessPeer): a query the driver
      // does not answer is recorded and shown as "?", it does not end the run.
      const auto ask = [&](CUdevice_P2PAttribute attribute, const char* name) {
        int value = 0;
        const CUresult result = cuDeviceGetP2PAttribute(&value, attribute, src, dst);
        if (result != CUDA_SUCCESS && link.failure.empty())
          link.failure =
              std::string("cuDeviceGetP2PAttribute(") + name + "): " + describeResult(result);
        return value;
      };
      link.performanceRank = ask(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, "PERFORMANCE_RANK");
      link.accessSupported = ask(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, "ACCESS_SUPPORTED") != 0;
      link.nativeAtomics =
          ask(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, "NATIVE_ATOMIC_SUPPORTED") != 0;
    }
  }
  return links;
}

}  // namespace memsamples::p2p
