/**
 * @file vectorAddDrv.cpp
 * @brief The baseline: C = A + B with the CUDA driver API, verified exactly and measured.
 *
 * Every other sample changes one thing about this program (where the memory comes from) and
 * keeps the rest, so read this one first. It uses the driver API in the order a program must:
 *
 * 1. **cuInit** loads the driver; Common's selectDevice() picks a device with cuDeviceGet
 *    (`--device N`, or the one with the most SMs x clock).
 * 2. **cuCtxCreate** makes a context: the device's address space and the owner of everything
 *    allocated below. It becomes current on this thread.
 * 3. **cuModuleLoadData** loads `vectorAdd_kernel.fatbin`, found next to the executable: SASS for
 *    each architecture it was built for and PTX for the newest, which the driver compiles for
 *    newer GPUs. **cuModuleGetFunction** finds `VecAdd_kernel` by its `extern "C"` name.
 * 4. **cuMemAlloc** A, B and C on the device; **cuMemHostAlloc** their page-locked host copies,
 *    which the copy engine reads directly, at full link speed and truly asynchronously.
 * 5. **cuStreamCreate**, **cuMemcpyHtoDAsync** the inputs, **cuLaunchKernel** with a
 *    `kernelParams` array, **cuMemcpyDtoHAsync** the result, **cuStreamSynchronize**.
 * 6. Every element of C is compared exactly with A + B on the CPU.
 * 7. **Measured** (vectorAddDrv_measure.cpp): the kernel's bandwidth next to a device-to-device
 *    copy and the theoretical peak, all from this run.
 * 8. The owners release everything in reverse order of creation, on the error paths too: the
 *    stream, host and device memory, the module, the context last.
 */
#include <iostream>
#include <vector>

#include "memsamples.hpp"
#include "vectorAddDrv_measure.hpp"

namespace ms = memsamples;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // 256 Mi floats per vector
constexpr int kBlockSize = 256;                      // threads per block of VecAdd_kernel

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
};

ms::Verdict runVectorAdd(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();

  // 1. The driver, and a device.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);
  out << "Device " << ms::deviceOrdinal(device) << ": " << ms::deviceName(device) << '\n';

  // [context-and-module]
  // 2. A context on the device, current on this thread from now on.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");

  // 3. The kernel, from the fatbin that the build put next to this executable.
  const std::string fatbinPath = ms::locateFatbin("vectorAdd_kernel.fatbin");
  const std::vector<char> fatbin = ms::readBinaryFile(fatbinPath);
  ms::OwnedModule module;
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction vecAdd = nullptr;
  ms::check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");
  // [context-and-module]
  out << "Kernels: " << fatbinPath << '\n';

  // 4. Three vectors, sized to what the device has free and to the host memory their three
  // pinned copies take (the tighter of MemAvailable and a container's memory limit).
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const std::uint64_t deviceBytes =
      ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes, freeBytes, 3, sizeof(float));
  const std::uint64_t bytes = ms::fitHostMemory(options.sizeBytes, deviceBytes, 3, sizeof(float));
  const std::size_t count = bytes / sizeof(float);
  out << "Vectors: " << count << " floats (" << ms::formatBytes(bytes) << ") each\n";

  // [allocate]
  ms::OwnedDeviceMemory a, b, c;
  ms::check(cuMemAlloc(a.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(b.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(c.out(), bytes), "cuMemAlloc");
  ms::OwnedPinnedHostMemory pinnedA, pinnedB, pinnedC;
  ms::check(cuMemHostAlloc(pinnedA.out(), bytes, 0), "cuMemHostAlloc");
  ms::check(cuMemHostAlloc(pinnedB.out(), bytes, 0), "cuMemHostAlloc");
  ms::check(cuMemHostAlloc(pinnedC.out(), bytes, 0), "cuMemHostAlloc");
  // [allocate]
  float* hostA = static_cast<float*>(pinnedA.get());
  float* hostB = static_cast<float*>(pinnedB.get());
  float* hostC = static_cast<float*>(pinnedC.get());
  ms::fillVectorAddInputs(hostA, hostB, count, 2024);

  // 5. Inputs in, kernel, result out: one stream, so each step waits for the one before.
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ms::check(cuMemcpyHtoDAsync(a.get(), hostA, bytes, stream.get()), "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(b.get(), hostB, bytes, stream.get()), "cuMemcpyHtoDAsync");

  // [launch]
  // One float4 (four elements) per thread. The kernel's grid-stride loop would cover any count
  // with fewer blocks, but on the H200 a grid this size runs 6 % faster than one that only
  // fills every SM once (4347 vs 4086 GB/s, measured).
  const unsigned int grid = ms::blocksToCover(count, 4 * kBlockSize);
  // cuLaunchKernel copies each argument from its pointer with the size of the kernel's
  // parameter, so each value must have exactly that type: CUdeviceptr for `const float*` (both
  // 64 bits), and n as unsigned long long: from an int it would read 8 bytes out of 4.
  CUdeviceptr deviceA = a.get(), deviceB = b.get(), deviceC = c.get();
  unsigned long long n = count;
  void* kernelParams[] = {&deviceA, &deviceB, &deviceC, &n};
  ms::check(
      cuLaunchKernel(vecAdd, grid, 1, 1, kBlockSize, 1, 1, 0, stream.get(), kernelParams, nullptr),
      "cuLaunchKernel");
  // [launch]

  // [copy-back]
  ms::check(cuMemcpyDtoHAsync(hostC, c.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
  ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
  // [copy-back]

  // 6. Exact check: float addition is correctly rounded on the GPU and the CPU alike.
  const ms::VectorAddCheck firstRun = ms::checkVectorAdd(hostA, hostB, hostC, count);

  // 7. Bandwidth against a copy and the peak; C is checked again after the timed launches.
  const ms::VectorAddLaunch run{vecAdd,  grid,    kBlockSize, stream.get(),
                                a.get(), b.get(), c.get(),    count};
  const ms::VectorAddCheck timedRuns =
      measureVectorAdd(run, device, options.common, hostA, hostB, hostC, out, report.json());

  const ms::VectorAddCheck& verified = firstRun.mismatches > 0 ? firstRun : timedRuns;
  if (verified.mismatches > 0)
    out << ms::describeMismatch(verified) << '\n';
  report.json().set("mismatches", static_cast<std::uint64_t>(verified.mismatches));
  // 8. The owners release in reverse order of declaration: the stream (after its queued work),
  // pinned and device memory, the module, and the context last: everything else belongs to it.
  return verified.mismatches == 0 ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "vectorAddDrv",
      "Adds two float vectors with the CUDA driver API, verifies every element and compares the "
      "kernel's bandwidth with a device-to-device copy and the theoretical peak.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4 (default 1G, less if memory is short)",
                      options.sizeBytes);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runVectorAdd(options, report); });
}
