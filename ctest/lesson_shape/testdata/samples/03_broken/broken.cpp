/**
 * @file broken.cpp
 * @brief Test data: a lesson that breaks every structural rule (never built).
 *
 * 1. The driver and a device.
 * 2. A buffer.
 * 3. Its use.
 */
#include "memsamples.hpp"

namespace ms = memsamples;

int main() {
  // 1. The driver and a device.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(std::nullopt);

  // 2. A buffer (its release is left to the owner: the core does not show it).
  //! [core]
  ms::OwnedDeviceMemory buffer;
  ms::check(cuMemAlloc(buffer.out(), 1 << 20), "cuMemAlloc");
  // 4. Its use.
  ms::check(cuMemsetD8(buffer.get(), 7, 1 << 20), "cuMemsetD8");
  //! [core]
  return 0;
}
