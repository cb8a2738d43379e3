// DeviceSetup, as in 01_vectorAddDrv, and the vector add on memory of any resource.
#include "device_setup.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "resources.hpp"

namespace memsamples::resource {

DeviceSetup::DeviceSetup(CUdevice handle) : device(handle), ordinal(deviceOrdinal(handle)) {
  check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
  CUcontext created = nullptr;
  check(cuCtxPopCurrent(&created), "cuCtxPopCurrent");
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

Devices setUpDevices(const std::optional<long long>& device,
                     const std::optional<std::uint64_t>& requestedBytes,
                     const std::string& resources, Report& report) {
  constexpr std::uint64_t kDefaultVectorBytes = 64ull << 20;
  Devices devices;
  devices.kinds = parseResourceKinds(resources);  // a usage error comes before any driver call
  checkDriverInit(cuInit(0));  // a driver older than the toolkit waives the run
  const CUdevice handle = selectDevice(device);
  devices.chosen = deviceOrdinal(handle);
  devices.chosenName = deviceName(handle);
  check(cuDeviceGetCount(&devices.count), "cuDeviceGetCount");
  report.out() << "Device " << devices.chosen << ": " << devices.chosenName << " ("
               << devices.count << (devices.count == 1 ? " device" : " devices")
               << " in this machine)\n";
  if (const std::string why = unavailableReason(ResourceKind::Device, handle); !why.empty())
    throw WaivedError("device " + std::to_string(devices.chosen) + " has " + why +
                      ": its initial resource cannot allocate");

  std::vector<DeviceFreeMemory> freeMemory;
  for (int d = 0; d < devices.count; ++d) {
    CUdevice each = 0;
    check(cuDeviceGet(&each, d), "cuDeviceGet");
    devices.setups.push_back(std::make_unique<DeviceSetup>(each));
    ScopedContext scope(devices.setups.back()->context.get());  // cuMemGetInfo asks it
    std::size_t freeBytes = 0;
    std::size_t totalBytes = 0;
    check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
    freeMemory.push_back({d, freeBytes});
  }
  devices.smallest = smallestFreeMemory(freeMemory);  // one size for all
  const std::uint64_t deviceBytes = chooseBufferBytes(
      requestedBytes, kDefaultVectorBytes, devices.smallest.freeBytes, 3, sizeof(float),
      describeSizedFor(devices.smallest, devices.setups.size()));
  devices.bytes = fitHostMemory(  // each device's staging is 3 pinned vectors
      requestedBytes, deviceBytes, 3 * devices.count, sizeof(float));
  for (const auto& each : devices.setups) {
    ScopedContext scope(each->context.get());
    check(cuMemHostAlloc(each->staging.out(), 3 * devices.bytes, 0), "cuMemHostAlloc");
    each->vectorBytes = devices.bytes;
  }
  return devices;
}

void useScratch(MemoryResource& resource, const DeviceSetup& setup, int thread) {
  for (int i = 0; i < kScratchPerThread; ++i) {
    ResourceAllocation scratch(resource, kScratchBytes, setup.stream.get());
    const auto value = static_cast<unsigned char>(thread + i);
    if (resource.properties().hostAccessible)
      std::memset(scratch.get(), value, scratch.size());
    else
      check(cuMemsetD8Async(scratch.kernelAddress(), value, scratch.size(), setup.stream.get()),
            "cuMemsetD8Async");
    scratch.release();
  }
}

// [kernel-addresses]
VectorAddCheck addAndVerify(const DeviceSetup& setup, Vectors& vectors, std::uint32_t seed) {
  const std::uint64_t bytes = vectors.a.size();
  const std::size_t count = bytes / sizeof(float);
  const CUstream stream = setup.stream.get();
  const bool onHost = vectors.a.resource()->properties().hostAccessible;
  float* a = onHost ? vectors.a.as<float>() : setup.stagingVector(0);
  float* b = onHost ? vectors.b.as<float>() : setup.stagingVector(1);
  float* c = onHost ? vectors.c.as<float>() : setup.stagingVector(2);
  fillVectorAddInputs(a, b, count, seed);
  CUdeviceptr x = vectors.a.kernelAddress(), y = vectors.b.kernelAddress(),
              z = vectors.c.kernelAddress();
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
  const VectorAddCheck verified = checkVectorAdd(a, b, c, count);
  for (ResourceAllocation* vector : {&vectors.a, &vectors.b, &vectors.c})
    vector->release();  // the kinds that free at once synchronize the stream first
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");  // the pool's frees, too
  return verified;
}
// [kernel-addresses]

}  // namespace memsamples::resource
