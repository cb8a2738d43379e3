/**
 * @file vectorAddDrv.cpp
 * @brief The baseline: C = A + B with the CUDA driver API, checked exactly and measured.
 *
 * Every other sample changes one thing about this program (where the memory comes from)
 * and keeps the rest, so read this one first. runVectorAdd() makes the baseline's
 * driver calls in the order a program must; its core region holds all of them, cuInit
 * to cuCtxDestroy (the measurement's own calls are in vectorAddDrv_measure.cpp):
 *
 * 1. Load the driver, and pick a device: **cuInit**, then Common's selectDevice() asks
 *    cuDeviceGet for `--device N`, or for the one with the most SMs x clock.
 * 2. Create a context (**cuCtxCreate**): the owner of everything allocated, loaded and
 *    created below on that device. It becomes current on this thread.
 * 3. Load the kernel from the fatbin: **cuModuleLoadData** takes the bytes of
 *    `vectorAdd_kernel.fatbin`, found next to the executable (SASS for each architecture
 *    it was built for, and PTX for the newest, which the driver compiles for newer
 *    GPUs); **cuModuleGetFunction** finds `VecAdd_kernel` by its `extern "C"` name.
 * 4. Allocate three vectors on the device (**cuMemAlloc**), and their page-locked host
 *    copies (**cuMemHostAlloc**), which the copy engine reads directly: at full link
 *    speed, and truly asynchronously. sizeVectors() fits them to free memory.
 * 5. Copy the inputs in, add, copy the result out: **cuStreamCreate**,
 *    **cuMemcpyHtoDAsync**, **cuLaunchKernel** with a `kernelParams` array,
 *    **cuMemcpyDtoHAsync**, **cuStreamSynchronize**.
 * 6. Check C exactly: every element is compared with A + B on the CPU.
 * 7. The same kinds of copy once more with their synchronous twins, which take no stream
 *    (copySynchronously()): **cuMemcpyHtoD** returns once pinned host memory is copied,
 *    **cuMemcpyDtoD** may return before its copy is done, and **cuMemcpy** works out the
 *    direction from the two addresses (unified addressing). A's round trip must be exact.
 * 8. Measure the kernel against a copy and the peak (vectorAddDrv_measure.cpp): its
 *    bandwidth next to a device-to-device copy and the theoretical peak, all from this
 *    run. C is checked again after the timed launches.
 * 9. Release everything in reverse order of creation, each answer checked:
 *    **cuStreamDestroy**, **cuMemFreeHost**, **cuMemFree**, **cuModuleUnload**, and
 *    **cuCtxDestroy** last. On an error path, the owners (`ms::Owned...`) release
 *    instead.
 */
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "vectorAddDrv_measure.hpp"

namespace ms = memsamples;

namespace {

/// The largest `--size`: 1T per vector, more than any GPU holds. A larger size, or one that is
/// not whole floats, is a usage error while the options are parsed, before any device output.
constexpr std::uint64_t kMaxVectorBytes = 1ull << 40;

// Step 7, defined below the lesson.
bool copySynchronously(CUdeviceptr a, CUdeviceptr c, const float* hostA, float* hostC,
                       std::size_t bytes, ms::Report& report);

/// The lesson: every driver call of the baseline, in the order a program makes them.
ms::Verdict runVectorAdd(const ms::CommonOptions& common,
                         const std::optional<std::uint64_t>& requestedBytes, ms::Report& report) {
  std::ostream& out = report.out();

  //! [core]
  // 1. Load the driver (an older CUDA major version waives the run), pick a device.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(common.device);
  out << "Device " << ms::deviceOrdinal(device) << ": " << ms::deviceName(device) << '\n';

  // 2. Create a context: current on this thread from now on, it owns all that follows.
  ms::OwnedContext context;  // nullptr: no CUctxCreateParams (CUDA 13's cuCtxCreate_v4)
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");

  // 3. Load the kernel from the fatbin that the build put next to this executable. The
  // driver picks the SASS for this GPU, or compiles the PTX for a newer one.
  const std::string fatbinPath = ms::locateFatbin("vectorAdd_kernel.fatbin");
  const std::vector<char> fatbin = ms::readBinaryFile(fatbinPath);
  ms::OwnedModule module;
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction vecAdd = nullptr;
  ms::check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");
  out << "Kernels: " << fatbinPath << '\n';

  // 4. Allocate three vectors on the device, and their page-locked host copies, sized to
  // the device's free memory and to the host memory three pinned copies take.
  const std::uint64_t bytes = sizeVectors(requestedBytes, out);
  const std::size_t count = bytes / sizeof(float);
  ms::OwnedDeviceMemory a;
  ms::OwnedDeviceMemory b;
  ms::OwnedDeviceMemory c;
  ms::check(cuMemAlloc(a.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(b.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(c.out(), bytes), "cuMemAlloc");

  ms::OwnedPinnedHostMemory pinnedA;
  ms::OwnedPinnedHostMemory pinnedB;
  ms::OwnedPinnedHostMemory pinnedC;
  ms::check(cuMemHostAlloc(pinnedA.out(), bytes, 0), "cuMemHostAlloc");
  ms::check(cuMemHostAlloc(pinnedB.out(), bytes, 0), "cuMemHostAlloc");
  ms::check(cuMemHostAlloc(pinnedC.out(), bytes, 0), "cuMemHostAlloc");
  float* hostA = static_cast<float*>(pinnedA.get());
  float* hostB = static_cast<float*>(pinnedB.get());
  float* hostC = static_cast<float*>(pinnedC.get());
  ms::fillVectorAddInputs(hostA, hostB, count, /*seed=*/2024);

  // 5. Copy the inputs in, add, copy the result out. One stream orders the copies and
  // the kernel, and one synchronize waits for all of them.
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ms::check(cuMemcpyHtoDAsync(a.get(), hostA, bytes, stream.get()), "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(b.get(), hostB, bytes, stream.get()), "cuMemcpyHtoDAsync");

  // The launch's settings go in a struct, as step 8 repeats the launch. One float4 per
  // thread: on the H200 that beats a grid that fills every SM once by 6 %.
  ms::VectorAddLaunch launch;
  launch.kernel = vecAdd;
  launch.block = 256;  // threads per block
  launch.grid = ms::blocksToCover(count, 4 * launch.block);
  launch.stream = stream.get();
  launch.count = count;
  // cuLaunchKernel copies each argument from its pointer with the size of the kernel's
  // parameter, so each value must have exactly that type: CUdeviceptr for `const float*`
  // (both 64 bits), and n as unsigned long long: an int has 4 bytes, the driver reads 8.
  launch.a = a.get();
  launch.b = b.get();
  launch.c = c.get();
  unsigned long long n = count;
  void* kernelParams[] = {&launch.a, &launch.b, &launch.c, &n};
  ms::check(cuLaunchKernel(launch.kernel, launch.grid, 1, 1, launch.block, 1, 1, 0, launch.stream,
                           kernelParams, nullptr),
            "cuLaunchKernel");
  ms::check(cuMemcpyDtoHAsync(hostC, c.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
  ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");

  // 6. Check C exactly: float addition is correctly rounded on the GPU and CPU alike.
  const ms::VectorAddCheck firstRun = ms::checkVectorAdd(hostA, hostB, hostC, count);

  // 7. The same kinds of copy once more with their synchronous twins, which take no
  // stream: A to the device, on into C, and back to the host (copySynchronously(), below).
  const bool roundTripExact = copySynchronously(a.get(), c.get(), hostA, hostC, bytes, report);

  // 8. Measure the kernel against a copy and the peak. C is checked again after the
  // timed launches, and the verdict counts both checks.
  const ms::Verdict verdict =
      measureVectorAdd(launch, firstRun, device, common, hostA, hostB, hostC, report);

  // 9. Release everything in reverse order of creation, each answer checked. The stream
  // is idle (the measurement ended with cuStreamSynchronize); the context goes last.
  ms::check(cuStreamDestroy(stream.release()), "cuStreamDestroy");
  ms::check(cuMemFreeHost(pinnedC.release()), "cuMemFreeHost");
  ms::check(cuMemFreeHost(pinnedB.release()), "cuMemFreeHost");
  ms::check(cuMemFreeHost(pinnedA.release()), "cuMemFreeHost");
  ms::check(cuMemFree(c.release()), "cuMemFree");
  ms::check(cuMemFree(b.release()), "cuMemFree");
  ms::check(cuMemFree(a.release()), "cuMemFree");
  ms::check(cuModuleUnload(module.release()), "cuModuleUnload");
  ms::check(cuCtxDestroy(context.release()), "cuCtxDestroy");
  //! [core]

  return roundTripExact ? verdict : ms::Verdict::Fail;
}

/**
 * Step 7: cuMemcpyHtoD, cuMemcpyDtoD and cuMemcpy, the synchronous twins of step 5's
 * copies, once each: A from @p hostA into @p a, on into @p c, and back into @p hostC.
 * Prints how long the host spent in each call and whether the round trip is exact (the
 * JSON gets the same), and returns that.
 */
// [sync-twins]
bool copySynchronously(CUdeviceptr a, CUdeviceptr c, const float* hostA, float* hostC,
                       std::size_t bytes, ms::Report& report) {
  using Clock = std::chrono::steady_clock;
  const auto msSince = [](Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };

  // The twins take no stream: they run on the legacy default stream (NULL), in order. That
  // stream waits for blocking streams only, never for a CU_STREAM_NON_BLOCKING one like
  // step 5's: its work is done here because step 5 ended with cuStreamSynchronize.

  // Host to device from pinned memory: returns when the copy is done, with no synchronize.
  // (From pageable memory it returns once the data is staged; the DMA may still run.)
  const Clock::time_point upload = Clock::now();
  ms::check(cuMemcpyHtoD(a, hostA, bytes), "cuMemcpyHtoD");
  const double uploadMs = msSince(upload);

  // Device to device: no host-side synchronization at all, in spite of the name. The
  // call may return before the copy is done; the next call on the stream waits for it.
  const Clock::time_point onDevice = Clock::now();
  ms::check(cuMemcpyDtoD(c, a, bytes), "cuMemcpyDtoD");
  const double onDeviceMs = msSince(onDevice);

  // cuMemcpy takes two addresses and finds the direction from them (unified addressing
  // tells device memory from pinned host memory). Into the host it returns only when the
  // data has arrived, and after the copy before it: C holds A, and when it returns the
  // legacy stream is idle, so step 8's stream may use A and C again.
  const Clock::time_point download = Clock::now();
  const auto hostAddress = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(hostC));
  ms::check(cuMemcpy(hostAddress, c, bytes), "cuMemcpy");
  const double downloadMs = msSince(download);

  const bool exact = std::memcmp(hostC, hostA, bytes) == 0;
  report.out() << std::fixed << std::setprecision(2) << "Sync    cuMemcpyHtoD " << uploadMs
               << " ms, cuMemcpyDtoD " << onDeviceMs << " ms, cuMemcpy " << downloadMs
               << " ms (host time per call); round trip "
               << (exact ? "exact" : "NOT exact: C came back different from A") << '\n';
  report.json()
      .set("syncHtoDCallMs", uploadMs)
      .set("syncDtoDCallMs", onDeviceMs)
      .set("syncMemcpyCallMs", downloadMs)
      .set("syncRoundTripExact", exact);
  return exact;
}
// [sync-twins]

}  // namespace

/// Parses the options and hands the lesson to runSample(), which owns output and exit
/// codes.
int main(int argc, char** argv) {
  ms::CommonOptions common;
  std::optional<std::uint64_t> requestedBytes;
  ms::CommandLine commandLine(
      "vectorAddDrv",
      "Adds two float vectors with the CUDA driver API, verifies every element and "
      "compares the kernel's bandwidth with a device-to-device copy and the theoretical "
      "peak.");
  commandLine.addCommonOptions(common);
  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4, at most 1T (default 256M, less if "
                      "memory is short)",
                      requestedBytes, 1, kMaxVectorBytes, sizeof(float));
  return ms::runSample(commandLine, common, argc, argv, [&](ms::Report& report) {
    return runVectorAdd(common, requestedBytes, report);
  });
}
