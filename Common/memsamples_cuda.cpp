// The driver half of the Common helper: driver checks and device selection, the owners' out-of-line
// parts, contexts for several devices, timing on a stream, and the driver calls of support/
// (theoreticalPeakGBps, timeVectorAdd). It calls libcuda; the unit tests that need it link it
// against a fake driver instead (ctest/unit/common/fake_timing_driver.cpp and others).
#include "memsamples.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/devices.hpp"
#include "support/timing.hpp"
#include "support/vector_add.hpp"

namespace memsamples {

// ------------------------------------------------------------------------------------- devices

namespace {

// runSample()'s ComputeModeSource: every device's compute mode, {} where the driver cannot tell.
std::vector<int> computeModesOfEveryDevice() noexcept {
  try {
    std::vector<int> modes;
    int count = 0;
    check(cuDeviceGetCount(&count), "cuDeviceGetCount");
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      CUdevice device = 0;
      check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
      modes.push_back(deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE));
    }
    return modes;
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace

void checkDriverInit(CUresult initResult, const char* file, int line) {
  if (isUnusableDriverResult(initResult)) {
    throw WaivedError("no usable CUDA device: cuInit returned " + describeResult(initResult));
  }
  check(initResult, "cuInit", file, line);
  // Before anything else: a driver of an older major version lacks entry points this toolkit's
  // cuda.h binds the samples to (with CUDA 13.0: cuMemcpyBatchAsync_v2, cuMemPrefetchBatchAsync,
  // cuMemGetDefaultMemPool, cuCtxGetDevice_v2..., all new in 13.0), and calling one would crash.
  // One of the same major version has every entry point of its own minor version; a sample that
  // calls one a later minor version added asks for it first (requireEntryPoint: 03 and 09 do).
  int driverVersion = 0;
  check(cuDriverGetVersion(&driverVersion), "cuDriverGetVersion", file, line);
  if (const std::string reason = driverTooOldReason(driverVersion, CUDA_VERSION); !reason.empty())
    throw WaivedError(reason);
  // From now on the driver can tell runSample() whether a compute mode explains a
  // CUDA_ERROR_DEVICE_UNAVAILABLE.
  setComputeModeSource(&computeModesOfEveryDevice);
}

int deviceAttribute(CUdevice device, CUdevice_attribute attribute) {
  int value = 0;
  check(cuDeviceGetAttribute(&value, attribute, device), "cuDeviceGetAttribute");
  return value;
}

std::string deviceName(CUdevice device) {
  char name[256] = {};
  check(cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName");
  return name;
}

void requireEntryPoint(bool present, const char* name) {
  if (present)
    return;
  int driverVersion = 0;
  check(cuDriverGetVersion(&driverVersion), "cuDriverGetVersion");
  throw WaivedError(missingEntryPointReason(name, driverVersion, CUDA_VERSION));
}

CUdevice selectDevice(const std::optional<long long>& requested, DeviceUse use) {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  std::vector<DeviceScore> devices;
  for (int i = 0; i < count; ++i) {
    CUdevice device = 0;
    check(cuDeviceGet(&device, i), "cuDeviceGet");
    DeviceScore score;
    score.multiprocessors = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    score.clockKHz = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    score.computeMode = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
    devices.push_back(score);
  }
  CUdevice device = 0;
  check(cuDeviceGet(&device, chooseDevice(devices, requested, use)), "cuDeviceGet");
  return device;
}

void requireComputeMode(CUdevice device, DeviceUse use) {
  const int mode = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
  if (mode == CU_COMPUTEMODE_DEFAULT)
    return;
  const std::string problem = computeModeProblem(deviceOrdinal(device), mode, use);
  if (!problem.empty())
    throw WaivedError(problem);
}

int deviceOrdinal(CUdevice device) {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice candidate = 0;
    check(cuDeviceGet(&candidate, ordinal), "cuDeviceGet");
    if (candidate == device)
      return ordinal;
  }
  throw std::invalid_argument("deviceOrdinal: CUdevice " + std::to_string(device) +
                              " is not one of this machine's " + std::to_string(count) +
                              " devices");
}

double theoreticalPeakGBps(CUdevice device) {
  return peakBandwidthGBps(deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
                           deviceAttribute(device, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH));
}

// ------------------------------------------------------------------------------------ RAII types

PrimaryContext::PrimaryContext(CUdevice device) {
  const CUresult retained = cuDevicePrimaryCtxRetain(&context_, device);
  // A compute mode that forbids the context waives, naming the mode (a device of a sample's
  // pair or team, which selectDevice() did not choose); anything else is the driver's error.
  if (retained == CUDA_ERROR_DEVICE_UNAVAILABLE)
    requireComputeMode(device);
  check(retained, "cuDevicePrimaryCtxRetain");
  device_ = device;
}
PrimaryContext::PrimaryContext(PrimaryContext&& other) noexcept
    : device_(std::exchange(other.device_, std::nullopt)),
      context_(std::exchange(other.context_, nullptr)) {}
PrimaryContext& PrimaryContext::operator=(PrimaryContext&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::exchange(other.device_, std::nullopt);
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}
void PrimaryContext::makeCurrent() const {
  if (!device_)
    throw std::logic_error("PrimaryContext::makeCurrent: the object is empty (moved from)");
  check(cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}
void PrimaryContext::reset() noexcept {
  // One release per retain; a moved-from or already reset object holds none.
  if (const std::optional<CUdevice> device = std::exchange(device_, std::nullopt))
    (void)cuDevicePrimaryCtxRelease(*device);
  context_ = nullptr;
}

ScopedContext::ScopedContext(CUcontext context) {
  check(cuCtxPushCurrent(context), "cuCtxPushCurrent");
}
CUresult drainAndDestroyStream(CUstream stream) noexcept {
  // Its answer is ignored: a failure of queued work is the caller's to report, where it waits.
  (void)cuStreamSynchronize(stream);
  return cuStreamDestroy(stream);
}

ScopedContext::~ScopedContext() {
  CUcontext popped = nullptr;
  cuCtxPopCurrent(&popped);
}

// ------------------------------------------------------------------------------------ measuring

namespace {

/// Holds a stream at a host function until the host opens it: everything queued behind the gate
/// then runs back to back, however slowly the host queued it.
class StreamGate {
 public:
  explicit StreamGate(CUstream stream) : stream_(stream) {
    check(cuLaunchHostFunc(stream, &StreamGate::waitUntilOpen, this), "cuLaunchHostFunc");
  }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  /// On an error path: opens the gate and waits for the stream, because the host function uses
  /// this object until it returns.
  ~StreamGate() {
    open();
    (void)cuStreamSynchronize(stream_);
  }
  /// Opens the gate, waits for everything queued behind it, and says whether the gate held the
  /// stream until now (false: it gave up waiting first, see waitUntilOpen()).
  bool openAndWait() {
    open();
    check(cuStreamSynchronize(stream_), "cuStreamSynchronize");
    const std::lock_guard<std::mutex> lock(mutex_);
    return !gaveUp_;
  }

 private:
  void open() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }
  static void CUDA_CB waitUntilOpen(void* gate) {
    auto* self = static_cast<StreamGate*>(gate);
    std::unique_lock<std::mutex> lock(self->mutex_);
    // Bounded: where a launch blocks the host until it has run (CUDA_LAUNCH_BLOCKING=1, the
    // compute-sanitizer tools), the host cannot open the gate before the stream gets past it.
    // Queuing 32 repetitions takes milliseconds, so a second means the host is stuck.
    self->gaveUp_ =
        !self->opened_.wait_for(lock, std::chrono::seconds(1), [self] { return self->open_; });
  }

  CUstream stream_;
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
  bool gaveUp_ = false;
};

/// Repetitions queued behind one gate: few enough that the commands of one batch (two events and
/// the work, 05 queues 16 copies per repetition) never fill a stream's command queue, which would
/// block the host before it opens the gate.
constexpr std::size_t kRepetitionsPerGate = 32;

void noteUngatedTiming() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::cerr << "note: the timed repetitions could not be queued behind a held stream (launches "
                 "block the host: CUDA_LAUNCH_BLOCKING=1 or a compute-sanitizer tool), so short "
                 "ones may include the host's launch time\n";
  });
}

}  // namespace

TimingStats timeOnStream(CUstream stream, int warmup, int iterations,
                         const std::function<void()>& work) {
  for (int i = 0; i < warmup; ++i)
    work();
  std::vector<OwnedEvent> starts(static_cast<std::size_t>(iterations));
  std::vector<OwnedEvent> stops(static_cast<std::size_t>(iterations));
  for (std::size_t i = 0; i < starts.size(); ++i) {
    check(cuEventCreate(starts[i].out(), CU_EVENT_DEFAULT), "cuEventCreate");
    check(cuEventCreate(stops[i].out(), CU_EVENT_DEFAULT), "cuEventCreate");
  }
  // Work shorter than it takes the host to queue it would leave the GPU idle between an event and
  // the work after it, and that idle time would be measured. Behind a gate the host queues the
  // repetitions first; the GPU then runs them without waiting for the host.
  bool gated = !launchesBlockTheHost();
  for (std::size_t first = 0; first < starts.size(); first += kRepetitionsPerGate) {
    const std::size_t end = std::min(starts.size(), first + kRepetitionsPerGate);
    std::optional<StreamGate> gate;
    if (gated)
      gate.emplace(stream);
    for (std::size_t i = first; i < end; ++i) {
      check(cuEventRecord(starts[i].get(), stream), "cuEventRecord");
      work();
      check(cuEventRecord(stops[i].get(), stream), "cuEventRecord");
    }
    if (gate && !gate->openAndWait())
      gated = false;  // the host was stuck behind its own gate: the rest runs without one
  }
  if (!gated)
    noteUngatedTiming();
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  std::vector<double> times;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    float ms = 0;
    check(cuEventElapsedTime(&ms, starts[i].get(), stops[i].get()), "cuEventElapsedTime");
    times.push_back(ms);
  }
  return summarizeTimings(std::move(times));
}

TimingStats timeVectorAdd(const VectorAddLaunch& launch, int warmup, int iterations) {
  // cuLaunchKernel copies each argument from its address with the kernel's parameter size.
  CUdeviceptr a = launch.a, b = launch.b, c = launch.c;
  unsigned long long n = launch.count;
  void* params[] = {&a, &b, &c, &n};
  return timeOnStream(launch.stream, warmup, iterations, [&] {
    check(cuLaunchKernel(launch.kernel, launch.grid, 1, 1, launch.block, 1, 1, 0, launch.stream,
                         params, nullptr),
          "cuLaunchKernel");
  });
}

unsigned int residentGridSize(CUfunction kernel, CUdevice device, int threadsPerBlock) {
  int blocksPerSm = 0;
  check(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocksPerSm, kernel, threadsPerBlock, 0),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  const int sms = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  return static_cast<unsigned int>(std::max(1, blocksPerSm) * sms);
}

}  // namespace memsamples
