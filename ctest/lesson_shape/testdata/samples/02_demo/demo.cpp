/**
 * @file demo.cpp
 * @brief Test data: a lesson in the core shape (never built).
 *
 * 1. The driver and a device.
 * 2. Two buffers, a copy between them, and their release: the core.
 * 3. The copy measured.
 */
#include "demo_measure.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;

namespace {

constexpr std::size_t kBytes = 1 << 20;

int runDemo();

}  // namespace

int main(int argc, char** argv) { return ms::runSample(argc, argv, runDemo); }

namespace {

int runDemo() {
  // 1. The driver and a device.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(std::nullopt);

  // 2. Two buffers, a copy between them, and their release.
  //! [core]
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");

  // The owners free the buffers on an error path; the good path frees them below.
  ms::OwnedDeviceMemory source;
  ms::check(cuMemAlloc(source.out(), kBytes), "cuMemAlloc");
  ms::OwnedDeviceMemory target;
  ms::check(cuMemAlloc(target.out(), kBytes), "cuMemAlloc");

  ms::check(cuMemsetD8(source.get(), 7, kBytes), "cuMemsetD8");
  ms::check(cuMemcpyDtoD(target.get(), source.get(), kBytes), "cuMemcpyDtoD");

  // 3. The copy measured.
  demo::measureCopy(target.get(), source.get(), kBytes);

  ms::check(cuMemFree(target.release()), "cuMemFree");
  ms::check(cuMemFree(source.release()), "cuMemFree");
  ms::check(cuCtxDestroy(context.release()), "cuCtxDestroy");
  //! [core]

  std::cout << ms::formatBytes(kBytes) << " copied on " << ms::deviceName(device) << "\n";
  return 0;
}

}  // namespace
