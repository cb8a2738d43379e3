/**
 * @file vectorAddDrv.cpp
 * @brief The baseline: C = A + B with the CUDA driver API, verified exactly and measured.
 *
 * Every other sample in the collection changes one thing about this program (where the memory
 * comes from) and keeps the rest, so read this one first. It walks through the driver API in the
 * order a program must use it:
 *
 * 1. **cuInit** loads the driver; **cuDeviceGet** picks a device (`--device N`, or the one with
 *    the most SMs x clock).
 * 2. **cuCtxCreate** makes a context: the device's address space and the owner of everything
 *    allocated below. It becomes current on this thread.
 * 3. **cuModuleLoadData** loads `vectorAdd_kernel.fatbin`, found next to the executable. The
 *    fatbin carries machine code (SASS) for each architecture it was built for and PTX for the
 *    newest, which the driver compiles for GPUs newer than the toolkit.
 *    **cuModuleGetFunction** finds `VecAdd_kernel` by its `extern "C"` name.
 * 4. **cuMemAlloc** three times: device memory for A, B and C.
 * 5. **cuMemcpyHtoDAsync** copies the inputs from page-locked host memory (cuMemHostAlloc), which
 *    the copy engine reads directly, at full PCIe/NVLink speed and truly asynchronously.
 * 6. **cuLaunchKernel** runs the grid-stride kernel on a stream; **cuMemcpyDtoHAsync** brings C
 *    back; **cuStreamSynchronize** waits for both.
 * 7. Every element is compared exactly with A + B on the CPU.
 * 8. **Measured:** the kernel's bandwidth (it reads A and B and writes C: 3 x size bytes) next
 *    to a device-to-device cuMemcpyDtoDAsync in the same run (read + write: 2 x size bytes) and
 *    the theoretical peak (memory clock x 2 x bus width). Timings are CUDA events, median of
 *    `--iterations` after `--warmup`.
 * 9. Cleanup is automatic: each resource is an RAII owner, released in reverse order of creation
 *    on every path, the error paths included (memory, then module, then context).
 */
#include <iomanip>
#include <iostream>

#include "memsamples.hpp"

namespace ms = memsamples;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // 256 Mi floats per vector

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
};

ms::Verdict runVectorAdd(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();

  // 1. Driver and device.
  ms::initDriver();
  const CUdevice device = ms::selectDevice(options.common.device);
  out << "Device " << ms::deviceOrdinal(device) << ": " << ms::deviceName(device) << '\n';

  // 2. Context; 3. module and kernel.
  ms::Context context(device);
  const std::string fatbinPath = ms::locateFatbin(ms::kVectorAddFatbin);
  ms::Module module(fatbinPath);
  const CUfunction kernel = module.function(ms::kVectorAddKernel);
  out << "Kernels: " << fatbinPath << '\n';

  // 4. Device memory for three vectors, sized to what is free.
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const std::uint64_t bytes =
      ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes, freeBytes, 3, sizeof(float));
  const std::size_t count = bytes / sizeof(float);
  out << "Vectors: " << count << " floats (" << ms::formatBytes(bytes) << ") each\n";

  ms::DeviceBuffer a(bytes), b(bytes), c(bytes);

  // 5. Inputs from pinned host memory.
  ms::PinnedHostBuffer hostA(bytes), hostB(bytes), hostC(bytes);
  ms::fillVectorAddInputs(hostA.as<float>(), hostB.as<float>(), count, 2024);
  ms::Stream stream;
  ms::check(cuMemcpyHtoDAsync(a.get(), hostA.get(), bytes, stream.get()), "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(b.get(), hostB.get(), bytes, stream.get()), "cuMemcpyHtoDAsync");

  // 6. Kernel, result back.
  const unsigned int grid = ms::residentGridSize(kernel, device, ms::kVectorAddBlockSize);
  ms::launchVectorAdd(kernel, grid, a.get(), b.get(), c.get(), count, stream.get());
  ms::check(cuMemcpyDtoHAsync(hostC.get(), c.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
  stream.synchronize();

  // 7. Exact verification.
  const ms::VectorAddCheck firstCheck =
      ms::checkVectorAdd(hostA.as<float>(), hostB.as<float>(), hostC.as<float>(), count);

  // 8. Bandwidth: the device-to-device copy first (it overwrites C), the kernel last, and C is
  // checked once more so that the timed launches are verified too.
  const int warmup = options.common.warmup;
  const int iterations = options.common.iterations;
  const ms::TimingStats copy = ms::timeOnStream(stream.get(), warmup, iterations, [&] {
    ms::check(cuMemcpyDtoDAsync(c.get(), a.get(), bytes, stream.get()), "cuMemcpyDtoDAsync");
  });
  const ms::TimingStats add = ms::timeOnStream(stream.get(), warmup, iterations, [&] {
    ms::launchVectorAdd(kernel, grid, a.get(), b.get(), c.get(), count, stream.get());
  });
  ms::check(cuMemcpyDtoHAsync(hostC.get(), c.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
  stream.synchronize();
  const ms::VectorAddCheck timedCheck =
      ms::checkVectorAdd(hostA.as<float>(), hostB.as<float>(), hostC.as<float>(), count);
  const ms::VectorAddCheck& verified = firstCheck.mismatches > 0 ? firstCheck : timedCheck;

  const double kernelGBps = ms::gigabytesPerSecond(3.0 * static_cast<double>(bytes), add.medianMs);
  const double copyGBps = ms::gigabytesPerSecond(2.0 * static_cast<double>(bytes), copy.medianMs);
  const double peakGBps = ms::theoreticalPeakGBps(device);

  out << std::fixed << std::setprecision(1);
  out << "Kernel  VecAdd     " << std::setw(8) << kernelGBps << " GB/s  (median "
      << std::setprecision(3) << add.medianMs << " ms, reads A and B, writes C)\n";
  out << std::setprecision(1) << "Copy    DtoD       " << std::setw(8) << copyGBps
      << " GB/s  (median " << std::setprecision(3) << copy.medianMs
      << " ms, read + write counted)\n";
  out << std::setprecision(1) << "Peak    theoretical" << std::setw(8) << peakGBps
      << " GB/s  (memory clock x 2 x bus width)\n";
  out << std::setprecision(3) << "Ratio   kernel / DtoD copy = " << kernelGBps / copyGBps
      << ", kernel / peak = " << kernelGBps / peakGBps << ", copy / peak = " << copyGBps / peakGBps
      << '\n';

  if (verified.mismatches > 0)
    out << ms::describeMismatch(verified) << '\n';

  ms::JsonObject& json = report.json();
  json.set("device", ms::deviceOrdinal(device))
      .set("deviceName", ms::deviceName(device))
      .set("bytesPerVector", static_cast<std::uint64_t>(bytes))
      .set("elements", static_cast<std::uint64_t>(count))
      .set("iterations", iterations)
      .set("warmup", warmup)
      .set("kernelMedianMs", add.medianMs)
      .set("kernelGBps", kernelGBps)
      .set("copyDtoDMedianMs", copy.medianMs)
      .set("copyDtoDGBps", copyGBps)
      .set("theoreticalPeakGBps", peakGBps)
      .set("kernelOverCopy", kernelGBps / copyGBps)
      .set("kernelOverPeak", kernelGBps / peakGBps)
      .set("copyOverPeak", copyGBps / peakGBps)
      .set("mismatches", static_cast<std::uint64_t>(verified.mismatches));
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
