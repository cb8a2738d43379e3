// The driver half of 05_p2pMemMap: contexts, peer access, buffers, events, concurrent timing.
#include "peer_context.hpp"

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

}  // namespace

// ------------------------------------------------------------------------------------- contexts

CurrentContext::CurrentContext(CUcontext context) {
  check(cuCtxPushCurrent(context), "cuCtxPushCurrent");
}

CurrentContext::~CurrentContext() {
  popQuietly();
}

// ---------------------------------------------------------------------------------- peer access

// -------------------------------------------------------------------------------------- buffers

ContextBuffer::ContextBuffer(CUcontext context, std::size_t bytes)
    : context_(context), bytes_(bytes) {
  CurrentContext current(context_);
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

ContextEvent::ContextEvent(CUcontext context) : context_(context) {
  CurrentContext current(context_);
  check(cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate");
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
  CurrentContext current(context_.get());
  try {
    vectorAddModule_.emplace(vectorAddFatbin);
    copyModule_.emplace(copyFatbin);
    vectorAdd_ = vectorAddModule_->function(kVectorAddKernel);
    copy_ = copyModule_->function(kCopyKernel);
    vectorAddGrid_ = residentGridSize(vectorAdd_, device_, kVectorAddBlockSize);
    copyGrid_ = residentGridSize(copy_, device_, kCopyBlockSize);
    stream_.emplace();
  } catch (...) {
    // A throwing constructor runs no destructor: unload what was loaded, still in this context.
    releaseInContext();
    throw;
  }
}

PeerDevice::~PeerDevice() {
  if (!pushQuietly(context_.get()))
    return;
  releaseInContext();
  popQuietly();
  // context_ (a member) is released after this body.
}

void PeerDevice::releaseInContext() noexcept {
  stream_.reset();
  copyModule_.reset();
  vectorAddModule_.reset();
}

std::size_t PeerDevice::freeBytes() const {
  CurrentContext current(context_.get());
  std::size_t freeBytes = 0, totalBytes = 0;
  check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  return freeBytes;
}

void PeerDevice::synchronize() const {
  CurrentContext current(context_.get());
  stream_->synchronize();
}

// ---------------------------------------------------------------------------------- peer access

PeerAccess::PeerAccess(const PeerDevice& accessor, const PeerDevice& owner)
    : accessor_(accessor), owner_(owner) {
  CurrentContext onAccessor(accessor_.context());
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
  CurrentContext onAccessor(accessor_.context());
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
    CurrentContext current(first.context());
    work();
  };
  const auto onSecond = [&](const std::function<void()>& work) {
    CurrentContext current(second.context());
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
  // device's context (recorded on its stream), the "second is done" events in the second's.
  const auto count = static_cast<std::size_t>(iterations);
  std::vector<ContextEvent> starts, stops, secondDone;
  for (std::size_t i = 0; i < count; ++i) {
    starts.emplace_back(first.context());
    stops.emplace_back(first.context());
    secondDone.emplace_back(second.context());
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

LinkMatrix queryLinkAttributes(int deviceCount) {
  const auto count = static_cast<std::size_t>(deviceCount);
  LinkMatrix links(count, std::vector<LinkAttributes>(count));
  for (int owner = 0; owner < deviceCount; ++owner) {
    for (int accessor = 0; accessor < deviceCount; ++accessor) {
      if (owner == accessor)
        continue;  // CUDA_ERROR_INVALID_DEVICE for a device paired with itself
      const CUdevice src = deviceFor(accessor);
      const CUdevice dst = deviceFor(owner);
      int rank = 0, access = 0, atomics = 0;
      check(cuDeviceGetP2PAttribute(&rank, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, src, dst),
            "cuDeviceGetP2PAttribute");
      check(cuDeviceGetP2PAttribute(&access, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, src, dst),
            "cuDeviceGetP2PAttribute");
      check(cuDeviceGetP2PAttribute(&atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, src,
                                    dst),
            "cuDeviceGetP2PAttribute");
      LinkAttributes& link =
          links[static_cast<std::size_t>(owner)][static_cast<std::size_t>(accessor)];
      link.performanceRank = rank;
      link.accessSupported = access != 0;
      link.nativeAtomics = atomics != 0;
    }
  }
  return links;
}

}  // namespace memsamples::p2p
