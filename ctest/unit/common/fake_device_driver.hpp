// The fake devices of device_selection_test.cpp (see fake_device_driver.cpp).
#pragma once

#include <vector>

namespace memsamples::test {

/// The machine the fake driver describes: one entry per device ordinal.
struct FakeDevices {
  std::vector<int> computeModes;     ///< CU_DEVICE_ATTRIBUTE_COMPUTE_MODE
  std::vector<int> multiprocessors;  ///< CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  int driverVersion = 13000;         ///< What cuDriverGetVersion says.
};

/// The fake machine, which a test sets before it calls into Common.
FakeDevices& fakeDevices();

}  // namespace memsamples::test
