// The driver half of the Common helper: error checking, device selection, RAII owners, timing.
#include "memsamples.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace memsamples {

std::string describeResult(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  // Both lookups work before cuInit(); an unknown value leaves the pointers unset.
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return "CUresult " + std::to_string(static_cast<int>(result)) + " (unknown to this driver)";
  }
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr)
    text = "no description";
  return std::string(name) + " (" + text + ")";
}

void check(CUresult result, const char* call, const char* file, int line) {
  if (result == CUDA_SUCCESS)
    return;
  const char* base = std::strrchr(file, '/');
  throw CudaError(result, std::string(call) + " failed at " + (base ? base + 1 : file) + ":" +
                              std::to_string(line) + ": " + describeResult(result));
}

// ------------------------------------------------------------------------------------- devices

void initDriver() {
  const CUresult result = cuInit(0);
  if (isUnusableDriverResult(result)) {
    throw WaivedError("no usable CUDA device: cuInit returned " + describeResult(result));
  }
  check(result, "cuInit");
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

CUdevice selectDevice(const std::optional<long long>& requested) {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0)
    throw WaivedError("no CUDA device found");
  int ordinal = 0;
  if (requested) {
    ordinal = validateDeviceOrdinal(*requested, count);
  } else {
    std::vector<DeviceScore> scores;
    for (int i = 0; i < count; ++i) {
      CUdevice device = 0;
      check(cuDeviceGet(&device, i), "cuDeviceGet");
      scores.push_back({deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                        deviceAttribute(device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)});
    }
    ordinal = pickFastestDevice(scores);
  }
  CUdevice device = 0;
  check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
  return device;
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

Context::Context(CUdevice device) {
  // cuda.h 13 maps cuCtxCreate to cuCtxCreate_v4; a null CUctxCreateParams means defaults.
  check(cuCtxCreate(context_.out(), nullptr, 0, device), "cuCtxCreate");
}
void Context::makeCurrent() const {
  check(cuCtxSetCurrent(context_.get()), "cuCtxSetCurrent");
}

PrimaryContext::PrimaryContext(CUdevice device) {
  check(cuDevicePrimaryCtxRetain(&context_, device), "cuDevicePrimaryCtxRetain");
  device_ = device;
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
ScopedContext::~ScopedContext() {
  CUcontext popped = nullptr;
  cuCtxPopCurrent(&popped);
}

Module::Module(const std::string& fatbinPath) {
  std::ifstream file(fatbinPath, std::ios::binary);
  if (!file)
    throw std::runtime_error("cannot open " + fatbinPath + ": " + std::strerror(errno));
  const std::vector<char> image((std::istreambuf_iterator<char>(file)),
                                std::istreambuf_iterator<char>());
  if (image.empty())
    throw std::runtime_error(fatbinPath + " is empty");
  check(cuModuleLoadData(module_.out(), image.data()), "cuModuleLoadData");
}
CUfunction Module::function(const char* name) const {
  CUfunction function = nullptr;
  check(cuModuleGetFunction(&function, module_.get(), name), "cuModuleGetFunction");
  return function;
}

Stream::Stream() {
  check(cuStreamCreate(stream_.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}
void Stream::synchronize() const {
  check(cuStreamSynchronize(stream_.get()), "cuStreamSynchronize");
}

Event::Event() {
  check(cuEventCreate(event_.out(), CU_EVENT_DEFAULT), "cuEventCreate");
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  check(cuMemAlloc(memory_.out(), bytes), "cuMemAlloc");
}

PinnedHostBuffer::PinnedHostBuffer(std::size_t bytes, unsigned int flags) : bytes_(bytes) {
  check(cuMemHostAlloc(memory_.out(), bytes, flags), "cuMemHostAlloc");
}

HostRegistration::HostRegistration(void* address, std::size_t bytes) {
  // DEVICEMAP: the range also gets a device address, which a kernel can dereference.
  check(cuMemHostRegister(address, bytes, CU_MEMHOSTREGISTER_DEVICEMAP), "cuMemHostRegister");
  registered_ = DriverHandle<void*, cuMemHostUnregister>(address);
}

CUdeviceptr HostRegistration::devicePointer() const {
  CUdeviceptr pointer = 0;
  check(cuMemHostGetDevicePointer(&pointer, registered_.get(), 0), "cuMemHostGetDevicePointer");
  return pointer;
}

// ------------------------------------------------------------------------------------ measuring

TimingStats timeOnStream(CUstream stream, int warmup, int iterations,
                         const std::function<void()>& work) {
  for (int i = 0; i < warmup; ++i)
    work();
  // One pair of events per repetition, recorded back to back, read after a single sync: the host
  // never waits between repetitions, so launch gaps do not enter the measurement.
  std::vector<Event> starts(static_cast<std::size_t>(iterations));
  std::vector<Event> stops(static_cast<std::size_t>(iterations));
  for (std::size_t i = 0; i < starts.size(); ++i) {
    check(cuEventRecord(starts[i].get(), stream), "cuEventRecord");
    work();
    check(cuEventRecord(stops[i].get(), stream), "cuEventRecord");
  }
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  std::vector<double> times;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    float ms = 0;
    check(cuEventElapsedTime(&ms, starts[i].get(), stops[i].get()), "cuEventElapsedTime");
    times.push_back(ms);
  }
  return summarizeTimings(std::move(times));
}

unsigned int residentGridSize(CUfunction kernel, CUdevice device, int threadsPerBlock) {
  int blocksPerSm = 0;
  check(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocksPerSm, kernel, threadsPerBlock, 0),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  const int sms = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  return static_cast<unsigned int>(std::max(1, blocksPerSm) * sms);
}

void launchVectorAdd(CUfunction kernel, unsigned int gridSize, CUdeviceptr a, CUdeviceptr b,
                     CUdeviceptr c, std::size_t count, CUstream stream) {
  unsigned long long n = count;
  void* args[] = {&a, &b, &c, &n};
  check(cuLaunchKernel(kernel, gridSize, 1, 1, kVectorAddBlockSize, 1, 1, 0, stream, args, nullptr),
        "cuLaunchKernel");
}

}  // namespace memsamples
